// Regenerates ../us-states.json and ../LICENSE-us-atlas.txt from the npm
// package us-atlas (states-10m.json, TopoJSON in longitude/latitude).
//
//   cd src/dashboard/assets/outline && npm install && node make-us-outline.mjs
//   (then: node tests/browser/projection-check.mjs)
//
// Generation time only: the browser never loads topojson-client or us-atlas.
// The projection code is read out of ../board.js, so the outline and the live
// markers cannot drift apart.
import { readFileSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import topojson from 'topojson-client';

const here = dirname(fileURLToPath(import.meta.url));
const out = join(here, '..');
const require = createRequire(import.meta.url);
const atlasDir = dirname(require.resolve('us-atlas/package.json'));
const atlasPkg = JSON.parse(readFileSync(join(atlasDir, 'package.json'), 'utf8'));
const clientPkg = JSON.parse(readFileSync(require.resolve('topojson-client/package.json'), 'utf8'));
const topology = JSON.parse(readFileSync(join(atlasDir, 'states-10m.json'), 'utf8'));

const VIEW = [0, 0, 960, 600];
const MARGIN = 10; // px kept free around the lower 48
const TOLERANCE = 0.4; // px; Douglas-Peucker on screen units, keeps the file < 150 KB
const MIN_RING_AREA = 1; // px²; smaller islands would be invisible specks

// FIPS code -> postal code for the 48 contiguous states + DC. Anything not
// listed (AK 02, HI 15, PR 72, the territories) is dropped.
const POSTAL = {
  '01': 'AL', '04': 'AZ', '05': 'AR', '06': 'CA', '08': 'CO', '09': 'CT', '10': 'DE',
  '11': 'DC', '12': 'FL', '13': 'GA', '16': 'ID', '17': 'IL', '18': 'IN', '19': 'IA',
  '20': 'KS', '21': 'KY', '22': 'LA', '23': 'ME', '24': 'MD', '25': 'MA', '26': 'MI',
  '27': 'MN', '28': 'MS', '29': 'MO', '30': 'MT', '31': 'NE', '32': 'NV', '33': 'NH',
  '34': 'NJ', '35': 'NM', '36': 'NY', '37': 'NC', '38': 'ND', '39': 'OH', '40': 'OK',
  '41': 'OR', '42': 'PA', '44': 'RI', '45': 'SC', '46': 'SD', '47': 'TN', '48': 'TX',
  '49': 'UT', '50': 'VT', '51': 'VA', '53': 'WA', '54': 'WV', '55': 'WI', '56': 'WY',
};

// The one projection implementation, taken verbatim from board.js.
function loadProjection() {
  const src = readFileSync(join(out, 'board.js'), 'utf8');
  const m = src.match(/\/\/ BEGIN projection\n([\s\S]*?)\/\/ END projection/);
  if (!m) throw new Error('board.js: projection markers not found');
  return new Function(`${m[1]}\nreturn albersProjection;`)();
}
const albersProjection = loadProjection();

// Decode the quantized, delta-encoded arcs to absolute [lng, lat].
const [sx, sy] = topology.transform.scale;
const [dx, dy] = topology.transform.translate;
const lonLatArcs = topology.arcs.map((arc) => {
  let x = 0;
  let y = 0;
  return arc.map(([ax, ay]) => [(x += ax) * sx + dx, (y += ay) * sy + dy]);
});

const geometries = topology.objects.states.geometries.filter((g) => POSTAL[g.id]);
if (geometries.length !== 49) throw new Error(`expected 49 states, got ${geometries.length}`);
const arcIds = new Set(JSON.stringify(geometries.map((g) => g.arcs)).match(/-?\d+/g)
  .map((i) => (+i < 0 ? ~+i : +i)));

// Fit: project with scale 1 / translate 0, take the bounds of the kept arcs,
// then choose a round scale and translate that centre them in the viewBox.
const base = {
  type: 'albers-equal-area-conic',
  sphere: 'unit sphere, x right, y down (SVG user units)',
  parallels: [29.5, 45.5],
  centralMeridian: -96,
  latitudeOfOrigin: 37.5,
};
const unit = albersProjection({ ...base, scale: 1, translate: [0, 0] });
let [x0, y0, x1, y1] = [Infinity, Infinity, -Infinity, -Infinity];
for (const i of arcIds) {
  for (const [lng, lat] of lonLatArcs[i]) {
    const [x, y] = unit(lng, lat);
    x0 = Math.min(x0, x); y0 = Math.min(y0, y); x1 = Math.max(x1, x); y1 = Math.max(y1, y);
  }
}
const [, , W, H] = VIEW;
const scale = Math.floor(Math.min((W - 2 * MARGIN) / (x1 - x0), (H - 2 * MARGIN) / (y1 - y0)));
const round1 = (v) => Math.round(v * 10) / 10;
const translate = [round1(W / 2 - (scale * (x0 + x1)) / 2), round1(H / 2 - (scale * (y0 + y1)) / 2)];
const projection = { ...base, scale, translate };
const project = albersProjection(projection);

// Douglas-Peucker on each shared arc (not on each state's rings), so
// neighbouring states keep identical borders with no slivers or gaps.
function simplify(pts, tol) {
  const keep = new Uint8Array(pts.length);
  keep[0] = keep[pts.length - 1] = 1;
  const stack = [[0, pts.length - 1]];
  while (stack.length) {
    const [a, b] = stack.pop();
    const [ax, ay] = pts[a];
    const [bx, by] = pts[b];
    const len = Math.hypot(bx - ax, by - ay);
    let far = -1;
    let dmax = tol;
    for (let i = a + 1; i < b; i++) {
      const [px, py] = pts[i];
      const d = len ? Math.abs((bx - ax) * (ay - py) - (ax - px) * (by - ay)) / len : Math.hypot(px - ax, py - ay);
      if (d > dmax) { dmax = d; far = i; }
    }
    if (far > 0) { keep[far] = 1; stack.push([a, far], [far, b]); }
  }
  return pts.filter((_, i) => keep[i]);
}

topology.arcs = lonLatArcs.map((arc, i) => {
  if (!arcIds.has(i)) return arc.slice(0, 1).concat(arc.slice(-1)); // unused
  const pts = simplify(arc.map(([lng, lat]) => project(lng, lat)), TOLERANCE)
    .map(([x, y]) => [round1(x), round1(y)]);
  return pts.filter((p, j) => j === 0 || p[0] !== pts[j - 1][0] || p[1] !== pts[j - 1][1]);
});
delete topology.transform; // arcs are now absolute, projected, rounded

const area = (ring) => ring.reduce((s, [x, y], i) => {
  const [nx, ny] = ring[(i + 1) % ring.length];
  return s + x * ny - nx * y;
}, 0) / 2;

const states = geometries.map((g) => {
  const { geometry } = topojson.feature(topology, g);
  const polygons = geometry.type === 'Polygon' ? [geometry.coordinates] : geometry.coordinates;
  const biggest = Math.max(...polygons.map((p) => Math.abs(area(p[0]))));
  const rings = polygons
    .filter((p) => Math.abs(area(p[0])) >= Math.min(MIN_RING_AREA, biggest))
    .flatMap((p) => p.filter((r) => Math.abs(area(r)) >= MIN_RING_AREA || r === p[0]));
  const path = rings.map((r) => {
    const pts = r.slice(0, -1); // "Z" closes the ring; the repeated first point is redundant
    return `M${pts.map(([x, y]) => `${x},${y}`).join('L')}Z`;
  }).join('');
  return { id: POSTAL[g.id], name: g.properties.name, path };
}).sort((a, b) => a.id.localeCompare(b.id));

const header = {
  source: {
    package: `${atlasPkg.name}@${atlasPkg.version}`,
    file: 'states-10m.json',
    license: `${atlasPkg.license}, see LICENSE-us-atlas.txt`,
    generator: `outline/make-us-outline.mjs (topojson-client@${clientPkg.version})`,
  },
  viewBox: VIEW,
  projection,
};
// One state per line: small diffs on regeneration, still compact.
const json = `${JSON.stringify(header).slice(0, -1)},"states":[\n${
  states.map((s) => JSON.stringify(s)).join(',\n')}\n]}\n`;
writeFileSync(join(out, 'us-states.json'), json);
writeFileSync(join(out, 'LICENSE-us-atlas.txt'),
  `us-states.json is derived from ${atlasPkg.name}@${atlasPkg.version} (states-10m.json),\n` +
  `by Mike Bostock, https://github.com/topojson/us-atlas, under the ISC licence below.\n\n` +
  readFileSync(join(atlasDir, 'LICENSE'), 'utf8'));
console.log(`us-states.json: ${states.length} states, ${json.length} bytes, projection ${JSON.stringify(projection)}`);
