// The new-load form's stops between the origin and the destination: without
// this script every row is shown (and an empty one is ignored); with it, empty
// rows wait behind "Add a stop" and each shown row can be removed.
"use strict";

(() => {
  const rows = [...document.querySelectorAll("fieldset[data-stop-row]")];
  const add = document.getElementById("add-stop");
  if (!rows.length || !add) return;

  // A row with anything typed in, or with an error to show, stays open.
  const inUse = (row) => row.querySelector(".field.invalid") !== null
    || [...row.querySelectorAll("input")].some((input) => input.value.trim() !== "");
  const hidden = () => rows.filter((row) => row.hidden);
  const update = () => { add.hidden = hidden().length === 0; };

  for (const row of rows) {
    if (!inUse(row)) row.hidden = true;
    const remove = row.querySelector("[data-remove-stop]");
    remove.hidden = false;
    remove.addEventListener("click", () => {
      for (const input of row.querySelectorAll("input")) input.value = "";
      for (const select of row.querySelectorAll("select")) select.selectedIndex = 0;
      row.hidden = true;
      update();
      add.focus();
    });
  }
  add.addEventListener("click", () => {
    const next = hidden()[0];
    if (!next) return;
    next.hidden = false;
    update();
    next.querySelector("select, input").focus();
  });
  update();
})();
