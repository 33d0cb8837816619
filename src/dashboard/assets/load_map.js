/*
 * load_map.js - a load's page: its GPS trail as a line, the truck at its
 * latest fix and the stops. Leaflet over the operator's tiles when the page
 * names them, else the outline of the states with board.js's projection
 * (window.freightAlbers, window.freightTileMap: board.js loads first).
 *
 * Expects: <div id="load-map" data-outline=".../us-states.json"
 *   data-map='{"trail":[[lat,lng],...],"truck":{...}|null,"stops":[...]}'
 *   [data-tiles="https://.../{z}/{x}/{y}.png" data-attribution="..."]>
 */
(() => {
  'use strict';
  const root = document.getElementById('load-map');
  if (!root || !window.freightAlbers) return;
  const SVG_NS = 'http://www.w3.org/2000/svg';
  const ARROW = 'M0,-8L5.5,5.5L0,2.5L-5.5,5.5Z';
  const DOT = 'M-4.5,0A4.5,4.5 0 1,0 4.5,0A4.5,4.5 0 1,0 -4.5,0Z';

  let data;
  try { data = JSON.parse(root.dataset.map); } catch { return; }
  const trail = Array.isArray(data.trail) ? data.trail : [];
  const stops = Array.isArray(data.stops) ? data.stops : [];
  const truck = data.truck;
  const label = (s) => `${s.sequence ? `${s.sequence}. ` : ''}${s.type === 'pickup' ? 'Pickup' : 'Delivery'}: ${s.city}, ${s.state}`;

  function svgEl(tag, attrs = {}, text = '') {
    const el = document.createElementNS(SVG_NS, tag);
    for (const [k, v] of Object.entries(attrs)) el.setAttribute(k, v);
    el.textContent = text;
    return el;
  }

  function truckIcon(rotation) {
    return svgEl('path', {
      class: 'truck-icon', d: rotation === null ? DOT : ARROW,
      ...(rotation === null ? {} : { transform: `rotate(${Math.round(rotation)})` }),
    });
  }

  function drawTiles(map) {
    const L = window.L;
    const bounds = [];
    if (trail.length > 1) {
      L.polyline(trail, { className: 'trail-line', weight: 4 }).addTo(map);
    }
    bounds.push(...trail);
    for (const s of stops) {
      // A text node, never a string: Leaflet writes a string as HTML, and a
      // stop's city is the account's own text.
      L.circleMarker([s.lat, s.lng], { className: `stop stop-${s.type}`, radius: 7 })
        .bindTooltip(document.createTextNode(label(s))).addTo(map);
      bounds.push([s.lat, s.lng]);
    }
    if (truck) {
      const svg = svgEl('svg', { viewBox: '-12 -12 24 24', width: 24, height: 24 });
      svg.append(svgEl('title', {}, 'The truck, at its latest fix'),
        truckIcon(typeof truck.heading === 'number' ? truck.heading : null));
      const icon = L.divIcon({ html: svg, className: 'truck-marker', iconSize: [24, 24], iconAnchor: [12, 12] });
      L.marker([truck.lat, truck.lng], { icon, keyboard: false }).addTo(map);
      bounds.push([truck.lat, truck.lng]);
    }
    if (bounds.length) map.fitBounds(L.latLngBounds(bounds).pad(0.15), { maxZoom: 13 });
  }

  // The outline is zoomed to the route, but never to less than this share of
  // the whole country's width (about 550 km): a short trip still shows where
  // it is, and its stops and truck stay apart.
  const MIN_SPAN = 0.12;
  // Marks are sized in screen pixels, whatever the zoom and the page's width.
  const STOP_PX = 7, TRUCK_PX = 1.3;

  /** The part of the outline that holds every point, padded, at the outline's aspect. */
  function fitView(full, points) {
    const [x0, y0, w0, h0] = full;
    if (!points.length) return full;
    const xs = points.map((p) => p[0]), ys = points.map((p) => p[1]);
    let w = Math.max((Math.max(...xs) - Math.min(...xs)) * 1.3, w0 * MIN_SPAN);
    let h = Math.max((Math.max(...ys) - Math.min(...ys)) * 1.3, h0 * MIN_SPAN);
    if (w / h > w0 / h0) h = w * (h0 / w0); else w = h * (w0 / h0);
    if (w >= w0) return full;
    const cx = (Math.max(...xs) + Math.min(...xs)) / 2, cy = (Math.max(...ys) + Math.min(...ys)) / 2;
    const x = Math.min(Math.max(cx - w / 2, x0), x0 + w0 - w);
    const y = Math.min(Math.max(cy - h / 2, y0), y0 + h0 - h);
    return [x, y, w, h];
  }

  async function drawOutline() {
    const outline = await (await fetch(root.dataset.outline)).json();
    const project = window.freightAlbers(outline.projection);
    const placed = [...trail.map(([lat, lng]) => project(lng, lat)),
      ...stops.map((s) => project(s.lng, s.lat)), ...(truck ? [project(truck.lng, truck.lat)] : [])];
    const view = fitView(outline.viewBox, placed);
    const svg = svgEl('svg', { class: 'board-map', viewBox: view.map((v) => v.toFixed(1)).join(' '), role: 'img', 'aria-label': 'Map of the load' });
    root.prepend(svg);
    const states = svgEl('g', { class: 'states' });
    for (const s of outline.states) states.append(svgEl('path', { class: 'state', d: s.path }));
    const layer = svgEl('g', { class: 'markers' });
    if (trail.length > 1) {
      const points = trail.map(([lat, lng]) => project(lng, lat).map((v) => v.toFixed(2)).join(','));
      layer.append(svgEl('polyline', { class: 'trail-line', points: points.join(' ') }));
    }
    for (const s of stops) {
      const [x, y] = project(s.lng, s.lat);
      const dot = svgEl('circle', { class: `stop stop-${s.type}`, cx: x, cy: y });
      dot.append(svgEl('title', {}, label(s)));
      layer.append(dot);
    }
    if (truck) {
      const [x, y] = project(truck.lng, truck.lat);
      // The outline's meridians lean: turn the heading by where north points here.
      const [x1, y1] = project(truck.lng, truck.lat + 0.1);
      const north = (Math.atan2(x1 - x, y - y1) * 180) / Math.PI;
      const g = svgEl('g', { class: 'truck-marker', 'data-at': `${x.toFixed(2)} ${y.toFixed(2)}` });
      g.append(svgEl('title', {}, 'The truck, at its latest fix'),
        truckIcon(typeof truck.heading === 'number' ? truck.heading + north : null));
      layer.append(g);
    }
    svg.append(states, layer);
    // Outline units per screen pixel change with the page's width: the marks
    // are sized again whenever the map is.
    const size = () => {
      const unit = view[2] / (svg.getBoundingClientRect().width || 600);
      for (const dot of layer.querySelectorAll('circle.stop')) dot.setAttribute('r', (STOP_PX * unit).toFixed(2));
      for (const g of layer.querySelectorAll('g.truck-marker')) {
        g.setAttribute('transform', `translate(${g.dataset.at}) scale(${(TRUCK_PX * unit).toFixed(3)})`);
      }
    };
    size();
    if (window.ResizeObserver) new ResizeObserver(size).observe(svg);
  }

  const frame = Object.assign(document.createElement('div'), { className: 'load-tiles' });
  root.prepend(frame);
  const map = window.freightTileMap && window.freightTileMap(frame, root.dataset.tiles, root.dataset.attribution);
  if (map) drawTiles(map);
  else {
    frame.remove();
    drawOutline().catch((err) => console.error('load map: outline', err));
  }
})();
