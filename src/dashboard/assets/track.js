/*
 * track.js - the public tracking page (/track/<token>): the US outline with
 * the stops and the truck, and the page's figures kept current by polling
 * <token>.json every 30 s. Uses board.js's projection (window.freightAlbers).
 *
 * Expects: <div id="track" data-outline=".../us-states.json" data-json="...json">
 */
(() => {
  'use strict';
  const root = document.getElementById('track');
  if (!root || !window.freightAlbers) return;
  const SVG_NS = 'http://www.w3.org/2000/svg';
  let project = null, layer = null;

  function svgEl(tag, attrs = {}, text = '') {
    const el = document.createElementNS(SVG_NS, tag);
    for (const [k, v] of Object.entries(attrs)) el.setAttribute(k, v);
    el.textContent = text;
    return el;
  }

  function setText(name, text) {
    for (const el of document.querySelectorAll(`[data-field="${name}"]`)) el.textContent = text;
  }

  // Times as the server writes them on the page: "27 Nov 2026, 03:28 UTC".
  const fmt = new Intl.DateTimeFormat('en-GB', {
    day: 'numeric', month: 'short', year: 'numeric', hour: '2-digit', minute: '2-digit', timeZone: 'UTC',
  });
  const when = (iso) => (iso ? `${fmt.format(new Date(iso))} UTC` : '\u2014');

  function draw(data) {
    if (!project) return;
    layer.replaceChildren();
    for (const stop of data.stops) {
      if (stop.lat == null) continue;
      const [x, y] = project(stop.lng, stop.lat);
      layer.append(svgEl('circle', { class: `stop stop-${stop.type}`, cx: x, cy: y, r: 6 }));
      layer.lastChild.append(svgEl('title', {}, `${stop.sequence}. ${stop.type}: ${stop.place.city}, ${stop.place.state}`));
    }
    if (data.position) {
      const [x, y] = project(data.position.lng, data.position.lat);
      layer.append(svgEl('circle', { class: 'truck', cx: x, cy: y, r: 8 }));
      layer.lastChild.append(svgEl('title', {}, 'The truck'));
    }
  }

  function apply(data) {
    setText('status', data.status.replace('_', ' '));
    // Once the truck is at the delivery the server renders the page anew
    // (the ETA and its risk give way to the arrival): reload to show it.
    if (data.arrival && !document.querySelector('[data-field="arrival"]')) { window.location.reload(); return; }
    setText('arrival', data.arrival || '');
    setText('eta', when(data.eta));
    setText('late-risk', data.late_risk ? 'At risk of arriving late' : 'On schedule');
    setText('position-at', data.position ? when(data.position.at) : 'no position yet');
    for (const stop of data.stops) {
      const field = (name) => `stop-${stop.sequence}-${name}`;
      // Status is server data: only its letters become a class.
      const status = String(stop.status).replace(/[^a-z_]/g, '');
      const item = document.querySelector(`li[data-sequence="${Number(stop.sequence)}"]`);
      if (item) {
        item.dataset.status = status;
        const badge = item.querySelector('.stop-status');
        if (badge) badge.className = `badge stop-status ${status}`;
      }
      setText(field('status'), status.replace('_', ' '));
      setText(field('eta'), when(stop.eta) + (stop.late_risk ? ' (at risk of being late)' : ''));
      setText(field('arrived'), stop.arrived_local || '\u2014');
      setText(field('departed'), when(stop.departed_at));
    }
    draw(data);
  }

  async function poll() {
    try {
      const response = await fetch(root.dataset.json, { cache: 'no-store' });
      if (response.ok) apply(await response.json());
      else if (response.status === 410) setText('status', 'this link has expired or was revoked');
    } catch (_) { /* offline for a moment: the next poll tries again */ }
  }

  fetch(root.dataset.outline).then((r) => r.json()).then((outline) => {
    project = window.freightAlbers(outline.projection);
    const svg = svgEl('svg', { class: 'board-map', viewBox: outline.viewBox.join(' '), role: 'img', 'aria-label': 'Map of the route' });
    const states = svgEl('g', { class: 'states' });
    for (const s of outline.states) states.append(svgEl('path', { class: 'state', d: s.path }));
    layer = svgEl('g', { class: 'markers' });
    svg.append(states, layer);
    root.prepend(svg);
    poll();
  });
  setInterval(poll, 30000);
})();
