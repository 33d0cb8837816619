// Sanity check for the dashboard's us-states.json and board.js's projection
// (src/dashboard/assets/); run by tests/api/browser.rs:  node projection-check.mjs
// Projects known cities with the exact function text from board.js (the same
// text the generator used for the outline) and checks each lands inside the
// viewBox and inside, or within a few px of, its own state's path.
import { readFileSync, statSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const here = join(dirname(fileURLToPath(import.meta.url)), '../../src/dashboard/assets');
const NEAR_PX = 3; // simplification moves borders by < 0.5 px; coasts get a little more slack

let passed = 0;
let failed = 0;
function check(ok, what) {
  if (ok) passed++;
  else failed++;
  console.log(`${ok ? 'ok  ' : 'FAIL'} ${what}`);
}

const boardSrc = readFileSync(join(here, 'board.js'), 'utf8');
const m = boardSrc.match(/\/\/ BEGIN projection\n([\s\S]*?)\/\/ END projection/);
check(!!m, 'board.js has the projection block');
let syntaxOk = true;
try { new Function(boardSrc); } catch { syntaxOk = false; } // compiles, does not run
check(syntaxOk, 'board.js parses');
const albersProjection = new Function(`${m[1]}\nreturn albersProjection;`)();

const file = join(here, 'us-states.json');
const outline = JSON.parse(readFileSync(file, 'utf8'));
const size = statSync(file).size;
check(size < 150 * 1024, `us-states.json is ${size} bytes (< 150 KB)`);
check(outline.states.length === 49, `${outline.states.length} features (48 states + DC)`);
const ids = new Set(outline.states.map((s) => s.id));
check(ids.size === 49 && ids.has('DC') && !['AK', 'HI', 'PR'].some((i) => ids.has(i)), 'ids unique, DC in, AK/HI/PR out');

const [vx, vy, vw, vh] = outline.viewBox;
const project = albersProjection(outline.projection);
const [ox, oy] = project(outline.projection.centralMeridian, outline.projection.latitudeOfOrigin);
check(Math.hypot(ox - outline.projection.translate[0], oy - outline.projection.translate[1]) < 1e-9,
  'origin (96°W, 37.5°N) projects to translate');

// "M x,y L x,y ... Z" (absolute, as the generator writes it) -> rings of [x, y].
const rings = (d) => d.split('M').filter(Boolean)
  .map((r) => r.replace(/Z$/, '').split('L').map((p) => p.split(',').map(Number)));
const shapes = new Map(outline.states.map((s) => [s.id, rings(s.path)]));

const allPoints = [...shapes.values()].flat(2);
check(allPoints.every(([x, y]) => x >= vx && x <= vx + vw && y >= vy && y <= vy + vh),
  `all ${allPoints.length} path points inside viewBox ${outline.viewBox.join(' ')}`);

// Even-odd ray casting over every ring, so holes and multi-part states work.
function inside([x, y], rs) {
  let hit = false;
  for (const r of rs) {
    for (let i = 0, j = r.length - 1; i < r.length; j = i++) {
      const [xi, yi] = r[i];
      const [xj, yj] = r[j];
      if ((yi > y) !== (yj > y) && x < ((xj - xi) * (y - yi)) / (yj - yi) + xi) hit = !hit;
    }
  }
  return hit;
}
function distance([x, y], rs) {
  let best = Infinity;
  for (const r of rs) {
    for (let i = 0, j = r.length - 1; i < r.length; j = i++) {
      const [ax, ay] = r[j];
      const [bx, by] = r[i];
      const l2 = (bx - ax) ** 2 + (by - ay) ** 2;
      const t = l2 ? Math.max(0, Math.min(1, ((x - ax) * (bx - ax) + (y - ay) * (by - ay)) / l2)) : 0;
      best = Math.min(best, Math.hypot(x - ax - t * (bx - ax), y - ay - t * (by - ay)));
    }
  }
  return best;
}

const cities = [
  ['Dallas', 'TX', 32.78, -96.80],
  ['Seattle', 'WA', 47.61, -122.33],
  ['Miami', 'FL', 25.76, -80.19],
  ['Boston', 'MA', 42.36, -71.06],
  ['Denver', 'CO', 39.74, -104.99],
  ['Chicago', 'IL', 41.88, -87.63],
  ['Washington', 'DC', 38.90, -77.04],
  ['San Diego', 'CA', 32.72, -117.16],
  ['Bangor', 'ME', 44.80, -68.77],
];
for (const [name, st, lat, lng] of cities) {
  const p = project(lng, lat);
  const where = `${name} ${lat},${lng} -> ${p.map((v) => v.toFixed(1)).join(',')}`;
  const inView = p[0] >= vx && p[0] <= vx + vw && p[1] >= vy && p[1] <= vy + vh;
  const own = shapes.get(st);
  const d = inside(p, own) ? 0 : distance(p, own);
  const others = [...shapes].filter(([id, rs]) => id !== st && inside(p, rs)).map(([id]) => id);
  check(inView && d <= NEAR_PX,
    `${where} in viewBox, ${d === 0 ? `inside ${st}` : `${d.toFixed(1)} px from ${st}`}${others.length ? ` (also in ${others})` : ''}`);
}

console.log(`${passed} passed, ${failed} failed`);
process.exit(failed ? 1 : 0);
