// The maps over an operator's tiles, in headless Chromium: the board and a
// load's page draw Leaflet over tiles from a local HTTPS tile server (this
// script), with the attribution; the load's marker points along its heading,
// moves when a fix arrives, and opens the load when clicked; the load's page
// draws its GPS trail as a line. Nothing is refused by the page's
// Content-Security-Policy. Started by tests/api/browser.rs, which has set up
// the server with `--map-tiles https://localhost:<TILE_PORT>/tiles/{z}/{x}/{y}.svg`,
// an assigned load with a few fixes, and a user of its account.
//
// Environment: FREIGHT_URL, FREIGHT_CHROMIUM, FREIGHT_ARTIFACTS,
// NODE_EXTRA_CA_CERTS (as walk.mjs); TILE_PORT, TILE_CERT, TILE_KEY (the tile
// server's address and TLS files); FREIGHT_KEY (an API key of the account),
// LOAD_ID (the load), LINK_PATH (the user's one-time set-password link),
// FIX_TIME (the timestamp of the fix this script posts: the server's clock is a test's).

import { launch, shoot as sharedShoot } from './chromium.mjs';
import { mkdirSync, readFileSync } from 'node:fs';
import https from 'node:https';

const base = process.env.FREIGHT_URL;
const artifacts = process.env.FREIGHT_ARTIFACTS;
const loadId = process.env.LOAD_ID;
mkdirSync(artifacts, { recursive: true });

const step = (text) => console.log(`- ${text}`);
const fail = (text) => { throw new Error(text); };

// A tile is an SVG naming its z/x/y: distinct, cheap, and readable in screenshots.
const served = [];
const referers = new Set();
const tiles = https.createServer(
  { cert: readFileSync(process.env.TILE_CERT), key: readFileSync(process.env.TILE_KEY) },
  (req, res) => {
    const m = /^\/tiles\/(\d+)\/(\d+)\/(\d+)\.svg$/.exec(req.url);
    if (!m) { res.writeHead(404).end(); return; }
    served.push(req.url);
    referers.add(req.headers.referer);
    res.writeHead(200, { 'content-type': 'image/svg+xml', 'cache-control': 'no-store' });
    res.end(`<svg xmlns="http://www.w3.org/2000/svg" width="256" height="256">` +
      `<rect width="256" height="256" fill="#eef2e6" stroke="#c9d2bb"/>` +
      `<text x="12" y="24" font-size="14" fill="#6b7280">${m[1]}/${m[2]}/${m[3]}</text></svg>`);
  },
);
await new Promise((resolve) => tiles.listen(Number(process.env.TILE_PORT), '127.0.0.1', resolve));

async function fix(lat, lng, heading) {
  const response = await fetch(`${base}/v1/loads/${loadId}/tracking`, {
    method: 'POST',
    headers: { authorization: `Bearer ${process.env.FREIGHT_KEY}`, 'content-type': 'application/json' },
    body: JSON.stringify({ lat, lng, heading, speed: 55, timestamp: process.env.FIX_TIME }),
  });
  if (response.status !== 201 && response.status !== 200) fail(`fix answered ${response.status}: ${await response.text()}`);
}

/** Saves the page at laptop and phone widths; neither may scroll sideways. */
const shoot = (page, name) => sharedShoot(page, artifacts, name, 300);

/** Tiles drawn in `scope`: loaded images, 256 px wide, from the tile server. */
async function drawnTiles(page, scope) {
  return page.locator(`${scope} img.leaflet-tile.leaflet-tile-loaded`).evaluateAll((imgs) =>
    imgs.filter((img) => img.complete && img.naturalWidth === 256 && img.src.includes('/tiles/')).length);
}

async function waitForTiles(page, scope, atLeast) {
  await page.waitForFunction(([s, n]) =>
    [...document.querySelectorAll(`${s} img.leaflet-tile.leaflet-tile-loaded`)]
      .filter((img) => img.complete && img.naturalWidth === 256).length >= n, [scope, atLeast]);
  const count = await drawnTiles(page, scope);
  if (count < atLeast) fail(`${scope}: ${count} tiles drawn, expected ${atLeast}`);
  return count;
}

const problems = [];
const browser = await launch();
try {
  const context = await browser.newContext({ ignoreHTTPSErrors: true, viewport: { width: 1280, height: 800 } });
  const page = await context.newPage();
  page.setDefaultTimeout(15000);
  page.on('pageerror', (e) => problems.push(`page error: ${e.message}`));
  page.on('response', (r) => { if (r.status() >= 400) problems.push(`${r.status()} ${r.url()}`); });
  // A CSP refusal shows as a console error ("Refused to load the image ...").
  page.on('console', (m) => { if (m.type() === 'error') problems.push(`console: ${m.text()}`); });

  step('the operator\'s one-time link: choose a password, land on the board');
  await page.goto(`${base}${process.env.LINK_PATH}`);
  await page.getByLabel('Password (at least 10 characters)').fill('correct horse battery');
  await page.getByLabel('Repeat the password').fill('correct horse battery');
  await page.locator('main form button.primary').click();
  await page.waitForURL('**/dashboard/board');

  step('the board draws tiles from the tile server, with their attribution');
  const boardTiles = await waitForTiles(page, '#board', 4);
  if (served.length < boardTiles) fail(`${boardTiles} tiles drawn but ${served.length} served`);
  // The origin only: a page's path names loads.
  if ([...referers].some((r) => r !== `${base}/`)) fail(`tile referers: ${[...referers].join(', ')}`);
  const attribution = await page.locator('#board .leaflet-control-attribution').innerText();
  if (!attribution.includes('Test tiles')) fail(`attribution: ${attribution}`);
  if (await page.locator('#board svg.board-map').count() !== 0) fail('the outline was drawn as well as the tiles');

  step('the load\'s marker points along its heading and moves when a fix arrives');
  const marker = page.locator(`#board .leaflet-marker-icon[data-load-id="${loadId}"]`);
  await marker.waitFor();
  const rotation = await marker.locator('path.marker-icon').getAttribute('transform');
  if (rotation !== 'rotate(90)') fail(`marker icon transform: ${rotation}`);
  const before = await marker.boundingBox();
  await fix(32.95, -96.2, 180);
  await page.waitForFunction(([id, y]) => {
    const el = document.querySelector(`#board .leaflet-marker-icon[data-load-id="${id}"]`);
    return el && Math.abs(el.getBoundingClientRect().y - y) > 3;
  }, [loadId, before.y]);
  if (await marker.locator('path.marker-icon').getAttribute('transform') !== 'rotate(180)') fail('the arrow did not turn');
  await shoot(page, '20-board-tiles');

  step('the map zooms: the tiles of the next level are fetched and drawn');
  const zoomBefore = served.filter((u) => u.startsWith('/tiles/')).map((u) => Number(u.split('/')[2]));
  await page.locator('#board .leaflet-control-zoom-in').click();
  await page.waitForFunction((z) => [...document.querySelectorAll('#board img.leaflet-tile-loaded')]
    .some((img) => Number(new URL(img.src).pathname.split('/')[2]) > z), Math.max(...zoomBefore));

  step('clicking the marker opens the load');
  await marker.locator('a').click();
  await page.waitForURL(`**/dashboard/loads/${loadId}`);

  step('the load\'s page draws its GPS trail as a line over the tiles');
  await waitForTiles(page, '#load-map', 1);
  const line = page.locator('#load-map path.trail-line');
  await line.waitFor();
  const d = await line.getAttribute('d');
  const vertices = (d.match(/[ML]/g) || []).length;
  if (vertices < 3) fail(`the trail line has ${vertices} points: ${d}`);
  if (await page.locator('#load-map .truck-marker').count() !== 1) fail('no truck on the load map');

  step('a stop\'s tooltip shows its city as text, never as markup');
  await page.locator('#load-map path.stop-pickup').hover();
  const tooltip = page.locator('#load-map .leaflet-tooltip');
  await tooltip.waitFor();
  const text = await tooltip.textContent();
  if (!text.includes(process.env.HOSTILE_CITY)) fail(`the tooltip says ${JSON.stringify(text)}`);
  if (await tooltip.locator('img, b').count() !== 0) fail('the tooltip holds markup from the city\'s name');
  await shoot(page, '21-load-tiles');

  if (problems.length) fail(`problems seen:\n${problems.join('\n')}`);
  console.log(`map walk complete (${served.length} tiles served)`);
} finally {
  await browser.close();
  tiles.close();
}
