// Small conveniences of the dashboard's pages; every page works without them.
"use strict";

// "Copy" buttons: data-copy names the input whose value goes to the clipboard.
document.addEventListener("click", (event) => {
  const button = event.target.closest("[data-copy]");
  if (!button) return;
  const source = document.querySelector(button.dataset.copy);
  if (!source) return;
  const label = button.textContent;
  const done = () => {
    button.textContent = "Copied";
    setTimeout(() => { button.textContent = label; }, 2000);
  };
  if (navigator.clipboard && window.isSecureContext) {
    navigator.clipboard.writeText(source.value).then(done, () => source.select());
  } else {
    source.select();
    document.execCommand("copy");
    done();
  }
});
