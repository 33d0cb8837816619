/*
 * board.js - live dispatch board: a map with one marker per load, fed by
 * server-sent events. Plain browser JS, no build step. The map is Leaflet over
 * the operator's tiles when the page names them (data-tiles, with leaflet.js
 * loaded before this file), else the vendored outline of the states as SVG.
 *
 * Expects: <div id="board" data-outline=".../us-states.json"
 *   data-stream="/dashboard/stream" data-loads="/dashboard/board/loads.json"
 *   [data-tiles="https://.../{z}/{x}/{y}.png" data-attribution="..."]>
 * and optionally <ul id="board-list"> and an element #board-status.
 */
(() => {
  'use strict';
  // Non-ASCII text is written as \u escapes: the file then reads the same
  // whether or not the server sends "charset=utf-8" with it.

  // BEGIN projection
  // Albers equal-area conic on a unit sphere (Snyder, "Map Projections: A
  // Working Manual", eqs. 14-1..14-6). tools/make-us-outline.mjs and check.mjs
  // extract the text between these markers, so the outline, the markers and
  // the test all use one implementation. `p` is us-states.json's "projection".
  function albersProjection(p) {
    const rad = Math.PI / 180;
    const [phi1, phi2] = p.parallels.map((d) => d * rad);
    const lambda0 = p.centralMeridian * rad;
    const n = (Math.sin(phi1) + Math.sin(phi2)) / 2;
    const c = Math.cos(phi1) ** 2 + 2 * n * Math.sin(phi1);
    const rho = (phi) => Math.sqrt(c - 2 * n * Math.sin(phi)) / n;
    const rho0 = rho(p.latitudeOfOrigin * rad);
    const k = p.scale;
    const [tx, ty] = p.translate;
    // Returns SVG user units: x to the right, y down (hence "ty - ...").
    return (lng, lat) => {
      const r = rho(lat * rad);
      const theta = n * (lng * rad - lambda0);
      return [tx + k * r * Math.sin(theta), ty - k * (rho0 - r * Math.cos(theta))];
    };
  }
  // END projection
  // The public tracking page (track.js) and a load's map (load_map.js) draw
  // with the same projection, and the same tile layer.
  window.freightAlbers = albersProjection;

  // A Leaflet map over the operator's tiles in `el`, or null when the page
  // names no tiles or Leaflet did not load (the caller then draws the outline).
  function tileMap(el, tiles, attribution) {
    if (!tiles || !window.L) return null;
    const map = window.L.map(el, { worldCopyJump: true }).setView([39.5, -98.35], 4);
    // A plain prefix: Leaflet's default is markup with a flag in it.
    map.attributionControl.setPrefix('<a href="https://leafletjs.com">Leaflet</a>');
    // Tile servers (OpenStreetMap's among them) want to know which site asks:
    // send our origin, never a page's path (it names loads).
    window.L.tileLayer(tiles, { attribution: attribution || '', maxZoom: 19, referrerPolicy: 'strict-origin-when-cross-origin' }).addTo(map);
    return map;
  }
  window.freightTileMap = tileMap;

  const SVG_NS = 'http://www.w3.org/2000/svg';
  // Arrow points "up" (-y) at rotate(0); rotated to the screen bearing below.
  const ARROW = 'M0,-8L5.5,5.5L0,2.5L-5.5,5.5Z';
  const DOT = 'M-4.5,0A4.5,4.5 0 1,0 4.5,0A4.5,4.5 0 1,0 -4.5,0Z';

  const root = document.getElementById('board');
  if (!root) return;
  const statusEl = document.getElementById('board-status');
  const listEl = document.getElementById('board-list');
  // As the server writes times on every page: "27 Nov 2026, 03:28 UTC" (never
  // in the browser's zone without saying so).
  const timeFmt = new Intl.DateTimeFormat('en-GB', {
    day: 'numeric', month: 'short', year: 'numeric', hour: '2-digit', minute: '2-digit', timeZone: 'UTC',
  });

  const loads = new Map(); // load id -> load (shape of loads.json entries)
  const markers = new Map(); // load id -> <g data-load-id> (outline) or L.Marker (tiles)
  const items = new Map(); // load id -> <li>
  let project = null, markerLayer = null;
  let tiles = null; // the Leaflet map, when the board draws on tiles
  let fitted = false; // the tile map was zoomed to the first loads (once: then the user's)
  let ready = false; // false until the first loads.json has been applied
  const pending = []; // stream updates that arrived before that

  function svgEl(tag, attrs = {}, text = '') {
    const el = document.createElementNS(SVG_NS, tag);
    for (const [k, v] of Object.entries(attrs)) el.setAttribute(k, v);
    el.textContent = text;
    return el;
  }

  const htmlEl = (tag, className, textContent) => Object.assign(document.createElement(tag), { className, textContent });

  function setStatus(text, state) {
    if (statusEl) Object.assign(statusEl, { textContent: text }).dataset.state = state;
  }

  async function getJSON(url) {
    const res = await fetch(url, { headers: { Accept: 'application/json' }, credentials: 'same-origin' });
    if (!res.ok) throw new Error(`${url}: HTTP ${res.status}`);
    return res.json();
  }

  const num = (v) => typeof v === 'number' && Number.isFinite(v);
  const when = (ts) => {
    const t = ts ? Date.parse(ts) : NaN;
    return Number.isNaN(t) ? '\u2014' : `${timeFmt.format(t)} UTC`;
  };
  const place = (p) => (p && p.city ? `${p.city}, ${p.state}` : '?');
  const route = (l) => (l.origin || l.destination ? `${place(l.origin)} \u2192 ${place(l.destination)}` : '');
  // The attached device's name, if any (a string from the server, shown as text).
  const deviceName = (l) => (l.device && typeof l.device.name === 'string' ? l.device.name : '');
  const statusText = (s) => String(s || 'unknown').replace(/_/g, ' ');
  // Status is server data: keep only safe characters before using it as a class.
  const statusClass = (s) => `status-${String(s || 'unknown').replace(/[^a-z0-9_-]/gi, '')}`;
  const speedText = (p) => (p && num(p.speed) ? `${Math.round(p.speed)} mph` : '\u2014');
  // A fix is older when both timestamps parse and it is strictly earlier; used
  // to drop out-of-order stream events and stale snapshot positions.
  const olderThan = (a, b) => !!(a && b) && Date.parse(a.timestamp) < Date.parse(b.timestamp);

  // The stop the truck is at or heads for next (server data, shown as text).
  const stopName = (t) => (t === 'pickup' ? 'Pickup' : t === 'delivery' ? 'Delivery' : 'Stop');
  const nextStop = (l) => {
    const s = l.next_stop;
    if (!s || typeof s.city !== 'string') return '';
    const seq = num(s.sequence) ? `${s.sequence}. ` : '';
    return `${s.status === 'arrived' ? 'At' : 'Next'}: ${seq}${stopName(s.type)}, ${s.city}, ${s.state}`;
  };
  const nextEta = (l) => (l.next_stop && l.next_stop.eta ? `ETA ${when(l.next_stop.eta)}` : '');

  function describe(l) {
    return [
      `${l.id} \u00b7 ${statusText(l.status)}`,
      route(l),
      [nextStop(l), nextEta(l)].filter(Boolean).join(' \u00b7 '),
      l.carrier && l.carrier.name ? `Carrier: ${l.carrier.name}` : '',
      deviceName(l) ? `Device: ${deviceName(l)}` : '',
      `Speed: ${speedText(l.position)}`,
      `Last update: ${when(l.position && l.position.timestamp)}`,
      `ETA: ${when(l.eta)}`,
    ].filter(Boolean).join('\n');
  }

  // Only same-site paths become links: the URL comes from data, and an
  // absolute/javascript: URL would be a way out of the dashboard.
  function setLink(a, url) {
    if (typeof url === 'string' && url.startsWith('/') && !url.startsWith('//')) a.setAttribute('href', url);
    else a.removeAttribute('href');
  }

  // Heading is degrees clockwise from true north, but Albers meridians lean
  // (up to ~15 degrees at the coasts): add where north points on screen here.
  function screenBearing(pos) {
    if (!num(pos.heading)) return null;
    const [x0, y0] = project(pos.lng, pos.lat);
    const [x1, y1] = project(pos.lng, pos.lat + 0.1);
    return pos.heading + (Math.atan2(x1 - x0, y0 - y1) * 180) / Math.PI;
  }

  function drawOutline(outline) {
    project = albersProjection(outline.projection);
    const svg = svgEl('svg', { class: 'board-map', viewBox: outline.viewBox.join(' '), role: 'img', 'aria-label': 'Map of loads' });
    const states = svgEl('g', { class: 'states' });
    for (const s of outline.states) {
      states.append(svgEl('path', { class: 'state', d: s.path, 'data-state': s.id }));
      states.lastChild.append(svgEl('title', {}, s.name));
    }
    markerLayer = svgEl('g', { class: 'markers' });
    svg.append(states, markerLayer);
    root.prepend(svg);
    // Markers are drawn in map units, so they would shrink with a narrow map;
    // board.css scales them by --marker-k to keep a usable size on screen.
    new ResizeObserver(() => {
      const k = outline.viewBox[2] / (svg.clientWidth || outline.viewBox[2]);
      svg.style.setProperty('--marker-k', Math.min(3, Math.max(1, k)).toFixed(2));
    }).observe(svg);
  }

  // The element that carries a marker's classes (data-load-id on both maps).
  const markerEl = (id) => {
    const m = markers.get(id);
    return m && tiles ? m.getElement() : m;
  };

  // The marker's link, tooltip (an SVG <title>) and icon (the <path>).
  function dressMarker(l, a, title, icon, bearing) {
    setLink(a, l.url);
    title.textContent = describe(l);
    icon.setAttribute('d', bearing === null ? DOT : ARROW);
    if (bearing === null) icon.removeAttribute('transform');
    else icon.setAttribute('transform', `rotate(${Math.round(bearing)})`);
  }

  // On tiles (Web Mercator) north is up everywhere: the heading is the bearing.
  function renderTileMarker(l, pos) {
    let m = markers.get(l.id);
    if (!m) {
      const a = document.createElement('a');
      const svg = svgEl('svg', { viewBox: '-12 -12 24 24', width: 24, height: 24 });
      svg.append(svgEl('title'), svgEl('path', { class: 'marker-icon' }));
      a.append(svg);
      // keyboard: false; the link inside is what takes focus and opens the load.
      const icon = window.L.divIcon({ html: a, className: 'marker tile-marker', iconSize: [24, 24], iconAnchor: [12, 12] });
      m = window.L.marker([pos.lat, pos.lng], { icon, keyboard: false }).addTo(tiles);
      m.getElement().dataset.loadId = l.id;
      markers.set(l.id, m);
    }
    m.setLatLng([pos.lat, pos.lng]);
    const el = m.getElement();
    for (const c of [...el.classList]) if (c.startsWith('status-')) el.classList.remove(c);
    el.classList.add(statusClass(l.status));
    const a = el.firstChild;
    const svg = a.firstChild;
    dressMarker(l, a, svg.firstChild, svg.lastChild, num(pos.heading) ? pos.heading : null);
  }

  // Once, when the first positions are in: the tile map shows all of them.
  function fitTiles() {
    if (!tiles || fitted) return;
    const points = [...markers.values()].map((m) => m.getLatLng());
    if (points.length === 0) return;
    fitted = true;
    tiles.fitBounds(window.L.latLngBounds(points).pad(0.2), { maxZoom: 9 });
  }

  function renderMarker(l) {
    const pos = l.position;
    if (!pos || !num(pos.lat) || !num(pos.lng)) return removeMarker(l.id);
    if (tiles) return renderTileMarker(l, pos);
    if (!project) return removeMarker(l.id);
    let g = markers.get(l.id);
    if (!g) {
      g = svgEl('g', { 'data-load-id': l.id });
      const a = svgEl('a');
      a.append(svgEl('title'), svgEl('path', { class: 'marker-icon' }));
      g.append(a);
      markerLayer.append(g);
      markers.set(l.id, g);
    }
    const [x, y] = project(pos.lng, pos.lat).map((v) => Math.round(v * 10) / 10);
    // The attribute is what tests and older engines read; the CSS property is
    // what the transition in board.css animates (it wins when both are set).
    g.setAttribute('transform', `translate(${x} ${y})`);
    g.style.transform = `translate(${x}px, ${y}px)`;
    g.setAttribute('class', `marker ${statusClass(l.status)}`);
    const a = g.firstChild;
    dressMarker(l, a, a.firstChild, a.lastChild, screenBearing(pos));
  }

  function removeMarker(id) {
    markers.get(id)?.remove(); // an SVG element and an L.Marker both have remove()
    markers.delete(id);
  }

  function renderItem(l) {
    if (!listEl) return;
    let li = items.get(l.id);
    if (!li) {
      li = document.createElement('li');
      li.dataset.load = l.id; // not data-load-id: that selector means "the marker"
      // Hovering an entry highlights its marker, to find it on a busy map.
      li.addEventListener('mouseenter', () => markerEl(l.id)?.classList.add('highlight'));
      li.addEventListener('mouseleave', () => markerEl(l.id)?.classList.remove('highlight'));
      listEl.append(li);
      items.set(l.id, li);
    }
    li.className = `board-item ${statusClass(l.status)}`;
    li.title = describe(l);
    // Named as the loads list names it: by its reference when it has one.
    const a = typeof l.reference === 'string' && l.reference
      ? htmlEl('a', 'load-reference', l.reference)
      : htmlEl('a', 'load-id', l.id);
    setLink(a, l.url);
    const pos = l.position;
    const meta = htmlEl('span', 'load-meta', '');
    const parts = [route(l), !pos ? 'no position' : num(pos.speed) ? speedText(pos) : '']
      .filter(Boolean).map((part) => `${part} \u00b7 `);
    // The ETA wraps as a whole: "ETA 1 Dec 2026, 14:05 UTC" stays on one line.
    meta.append(...parts, htmlEl('span', 'meta-eta', `ETA ${when(l.eta)}`));
    li.replaceChildren(a, ' ', htmlEl('span', 'load-status', statusText(l.status)), meta);
    if (nextStop(l)) {
      const next = htmlEl('span', 'load-next', nextStop(l));
      if (nextEta(l)) next.append(' \u00b7 ', htmlEl('span', 'meta-eta', nextEta(l)));
      if (l.next_stop.late_risk === true) next.append(' ', htmlEl('span', 'next-late', 'late risk'));
      li.append(next);
    }
    if (deviceName(l)) li.append(htmlEl('span', 'load-device', `Device: ${deviceName(l)}`));
    if (l.at_stop === 'pickup' || l.at_stop === 'delivery') {
      li.append(htmlEl('span', 'load-stop', l.at_stop === 'pickup' ? 'At pickup' : 'At delivery'));
    }
    if (l.late_risk === true) li.append(htmlEl('span', 'load-risk', 'Late risk'));
    markerEl(l.id)?.classList.toggle('late-risk', l.late_risk === true);
  }

  function render(l) {
    renderMarker(l);
    renderItem(l);
  }

  function removeLoad(id) {
    loads.delete(id);
    removeMarker(id);
    items.get(id)?.remove();
    items.delete(id);
    showEmpty();
  }

  // An empty board says why, and how to get a load onto it.
  const emptyEl = document.getElementById('board-empty');
  function showEmpty() {
    if (emptyEl) emptyEl.hidden = !ready || loads.size > 0;
  }

  // Applies a full loads.json snapshot. A stream event may have overtaken the
  // snapshot while it was in flight, so a newer position already held wins.
  function applySnapshot(list) {
    const keep = new Set();
    for (const l of list) {
      if (!l || typeof l.id !== 'string' || l.status === 'delivered') continue;
      const old = loads.get(l.id);
      if (old && olderThan(l.position, old.position)) l.position = old.position;
      keep.add(l.id);
      loads.set(l.id, l);
      render(l);
      if (listEl && items.has(l.id)) listEl.append(items.get(l.id)); // snapshot order
    }
    for (const id of [...loads.keys()]) if (!keep.has(id)) removeLoad(id);
    fitTiles();
  }

  function applyUpdate(msg) {
    const id = msg.load_id;
    if (msg.status === 'delivered') return removeLoad(id);
    let l = loads.get(id);
    if (!l) {
      // A load we have not seen: show what the event says now and fetch the
      // snapshot for its route, carrier and link.
      l = { id, status: msg.status, origin: null, destination: null, carrier: null, device: null, position: null, eta: null, next_stop: null, url: null };
      loads.set(id, l);
      showEmpty();
      refetchSoon();
    }
    if (msg.position && !olderThan(msg.position, l.position)) l.position = msg.position;
    if (msg.status) l.status = msg.status;
    if ('eta' in msg) l.eta = msg.eta;
    render(l);
  }

  let fetchSeq = 0, retryTimer = 0;
  async function refetch() {
    const seq = ++fetchSeq;
    clearTimeout(retryTimer);
    try {
      const body = await getJSON(root.dataset.loads);
      if (seq !== fetchSeq) return; // a later refetch superseded this one
      applySnapshot(Array.isArray(body.loads) ? body.loads : []);
      if (!ready) {
        ready = true;
        pending.splice(0).forEach(applyUpdate);
      }
      showEmpty();
    } catch (err) {
      console.error('board: loads', err);
      if (seq === fetchSeq) retryTimer = setTimeout(refetch, 10000);
    }
  }

  // Coalesces bursts (e.g. many unknown loads at once) into one request.
  let soonTimer = 0;
  function refetchSoon() {
    clearTimeout(soonTimer);
    soonTimer = setTimeout(refetch, 1000);
  }

  let source = null, backoff = 5000;
  function connect() {
    if (source) source.close();
    const es = new EventSource(root.dataset.stream);
    source = es;
    let dropped = false;
    es.addEventListener('open', () => {
      setStatus('Live', 'live');
      backoff = 5000;
      // Events sent while we were away are gone: catch up from the snapshot.
      if (dropped && ready) refetch();
      dropped = false;
    });
    es.addEventListener('error', () => {
      dropped = true;
      setStatus('Reconnecting\u2026', 'reconnecting');
      // EventSource retries by itself unless the server answered with an
      // error status or a wrong content type (then it is CLOSED for good).
      if (es.readyState === EventSource.CLOSED && source === es) {
        setTimeout(connect, backoff);
        backoff = Math.min(backoff * 2, 60000);
      }
    });
    es.addEventListener('tracking.updated', (ev) => {
      let msg;
      try { msg = JSON.parse(ev.data); } catch { return; }
      if (!msg || typeof msg.load_id !== 'string') return;
      if (ready) applyUpdate(msg);
      else pending.push(msg);
    });
    // A fix's milestones and ETA changes follow its tracking.updated.
    const onLoad = (handle) => (ev) => {
      let msg;
      try { msg = JSON.parse(ev.data); } catch { return; }
      const l = msg && loads.get(msg.load_id);
      if (!l) return;
      handle(l, msg);
      render(l);
    };
    // Each names its stop by `stop_sequence`: the load's `eta` is the next
    // delivery's (`eta_stop_sequence`), and `next_stop` has its own.
    const isNext = (l, msg) => l.next_stop && msg.stop_sequence === l.next_stop.sequence;
    es.addEventListener('load.arrived', onLoad((l, msg) => {
      if (msg.stop !== undefined) l.at_stop = msg.stop;
      if (isNext(l, msg)) Object.assign(l.next_stop, { status: 'arrived', eta: null, late_risk: false });
    }));
    // The next stop is another now: the snapshot says which.
    es.addEventListener('load.departed', onLoad((l) => { l.at_stop = null; refetchSoon(); }));
    es.addEventListener('load.stop_skipped', onLoad(() => refetchSoon()));
    es.addEventListener('load.eta_changed', onLoad((l, msg) => {
      if (isNext(l, msg)) Object.assign(l.next_stop, { eta: msg.eta, late_risk: msg.late_risk === true });
      if (msg.stop_sequence === undefined || msg.stop_sequence === l.eta_stop_sequence) {
        l.late_risk = msg.late_risk === true;
        l.eta = msg.eta;
      }
    }));
    // Which loads the board shows depends on their status (a delivered one
    // leaves it): read the snapshot again rather than guess.
    es.addEventListener('load.status_changed', () => refetchSoon());
    es.addEventListener('reset', () => refetch());
    // The session ended (signed out, expired, the account disabled): the
    // server closed the stream for good; reconnecting would only be refused.
    for (const ending of ['revoked', 'expired']) {
      es.addEventListener(ending, () => {
        es.close();
        if (source === es) source = null;
        setStatus(ending === 'expired'
          ? 'Session expired \u2014 log in again to follow the board'
          : 'Signed out \u2014 log in again to follow the board', 'ended');
      });
    }
  }

  async function start() {
    // board.css lays map and list out side by side (or stacked) inside the
    // element that holds both.
    if (listEl) (root.contains(listEl) ? root : root.parentElement)?.classList.add('board-layout');
    setStatus('Connecting\u2026', 'connecting');
    connect(); // before the snapshot, so no update falls between the two
    const frame = htmlEl('div', 'board-tiles', '');
    root.prepend(frame);
    tiles = tileMap(frame, root.dataset.tiles, root.dataset.attribution);
    if (!tiles) {
      frame.remove();
      try {
        drawOutline(await getJSON(root.dataset.outline));
      } catch (err) {
        console.error('board: outline', err); // the list still works without a map
      }
    }
    await refetch();
  }

  start();
})();
