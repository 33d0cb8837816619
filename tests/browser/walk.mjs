// The dashboard walked through in headless Chromium as a new user would, by
// the labels and action names on the pages: register, choose Pro, generate a
// key and use it against the API, add a carrier, create a load by hand, assign
// it, post GPS fixes through the API and watch its marker move on the board
// without a reload, create a load of three stops and see its timeline, create a device, attach it to the load and see the board
// name it, revoke device and key and see each refused, log out and find the
// pages closed. Screenshots of each page at 1280 and 390 px go to
// $FREIGHT_ARTIFACTS. Started by tests/api/browser.rs with the server running.
//
// Environment: FREIGHT_URL (https://localhost:<port>), FREIGHT_CHROMIUM (the
// browser), FREIGHT_ARTIFACTS (a directory), NODE_EXTRA_CA_CERTS (the server's
// certificate, so this script's own API calls trust it).

import { launch, shoot as sharedShoot } from './chromium.mjs';
import { mkdirSync } from 'node:fs';
import http from 'node:http';

const base = process.env.FREIGHT_URL;
const artifacts = process.env.FREIGHT_ARTIFACTS;
mkdirSync(artifacts, { recursive: true });

const step = (text) => console.log(`- ${text}`);
const fail = (text) => { throw new Error(text); };

async function api(method, path, key, body) {
  const response = await fetch(`${base}/v1${path}`, {
    method,
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  return { status: response.status, body: await response.json() };
}

/** Saves the page at laptop and phone widths; neither may scroll sideways. */
const shoot = (page, name) => sharedShoot(page, artifacts, name);

const problems = [];
const browser = await launch();
try {
  const context = await browser.newContext({ ignoreHTTPSErrors: true, viewport: { width: 1280, height: 800 } });
  await context.grantPermissions(['clipboard-read', 'clipboard-write'], { origin: base });
  const page = await context.newPage();
  page.setDefaultTimeout(15000);
  // The main navigation's links, by their exact names.
  const nav = (name) => page.getByRole('navigation', { name: 'Main' })
    .getByRole('link', { name, exact: true }).click();
  page.on('pageerror', (e) => problems.push(`page error: ${e.message}`));
  page.on('response', (r) => {
    if (r.status() >= 400) problems.push(`${r.status()} ${r.url()}`);
  });
  page.on('console', (m) => {
    if (m.type() === 'error' && !m.text().startsWith('Failed to load resource')) problems.push(`console: ${m.text()}`);
  });

  step('the root leads to the dashboard, which asks to log in');
  await page.goto(`${base}/`);
  if (!page.url().includes('/dashboard/login')) fail(`expected the log-in page, got ${page.url()}`);
  await shoot(page, '01-login');

  step('register');
  await page.getByRole('link', { name: 'Register' }).click();
  await page.getByLabel('Company name').fill('Lone Star Freight');
  await page.getByLabel('Email address').fill('dispatch@lonestar.example');
  await page.getByLabel('Password (at least 10 characters)').fill('correct horse battery');
  await page.getByLabel('Repeat the password').fill('correct horse battery');
  await shoot(page, '02-register');
  await page.getByRole('button', { name: 'Create account' }).click();
  // Registering signs nobody in (the answer is the same for a known address).
  await page.waitForURL('**/dashboard/login**');
  if (!(await page.getByText('Registration received').isVisible())) fail('no note after registering');

  step('log in');
  await page.getByLabel('Email address').fill('dispatch@lonestar.example');
  await page.getByLabel('Password').fill('correct horse battery');
  await page.getByRole('button', { name: 'Log in' }).click();
  await page.waitForURL('**/dashboard/plan**');

  step('choose Pro');
  await page.getByRole('button', { name: 'Choose Pro' }).click();
  await page.waitForURL('**/dashboard/plan');
  if ((await page.locator('#current-plan').textContent()) !== 'pro') fail('the plan did not change to pro');
  await shoot(page, '03-plan');

  step('Settings → API Keys → Generate New Key');
  await nav('Settings');
  await page.getByLabel('write').check();
  await page.getByLabel('Description').fill('walk-through');
  await page.getByRole('button', { name: 'Generate New Key' }).click();
  const key = await page.locator('#new-key').inputValue();
  if (!key.startsWith('frk_')) fail(`no key shown: ${key}`);
  await shoot(page, '04-new-key');

  step('the key works against the API');
  let answer = await api('GET', '/auth/verify', key);
  if (answer.status !== 200) fail(`verify answered ${answer.status}`);

  step('add a carrier');
  await nav('Carriers');
  await page.getByRole('link', { name: 'Add carrier' }).click();
  await page.getByLabel('Name', { exact: true }).fill('Red River Hauling');
  // As people write it: the dashboard stores the digits.
  await page.getByLabel('MC number', { exact: true }).fill('MC-778899');
  await page.getByLabel('Dry van', { exact: true }).check();
  await page.getByRole('button', { name: 'Add carrier' }).click();
  await page.waitForURL('**/dashboard/carriers');
  await shoot(page, '05-carriers');

  step('the board before any load is on the road says how to get one there');
  await nav('Board');
  await page.getByRole('heading', { name: 'No loads on the road yet' }).waitFor();
  await shoot(page, '05a-empty-board');

  step('create a load by hand');
  await nav('Loads');
  await page.getByRole('link', { name: 'Create load' }).click();
  const origin = page.getByRole('group', { name: 'Origin' });
  await origin.getByLabel('City').fill('Dallas');
  await origin.getByLabel('State').selectOption('TX');
  await origin.getByLabel('ZIP code').fill('75201');
  await origin.getByText('Facility location (optional)').click();
  await origin.getByLabel('Latitude').fill('32.7767');
  await origin.getByLabel('Longitude').fill('-96.797');
  await origin.getByLabel(/Arrival radius/).fill('400');
  const destination = page.getByRole('group', { name: 'Destination' });
  await destination.getByLabel('City').fill('Atlanta');
  await destination.getByLabel('State').selectOption('GA');
  await destination.getByLabel('ZIP code').fill('30301');
  await page.getByLabel('Weight (lb)').fill('42000');
  await page.getByLabel('Equipment type').selectOption('dry_van');
  await shoot(page, '06-create-load');
  await page.getByRole('button', { name: 'Create load' }).click();
  await page.waitForURL(/\/dashboard\/loads\/load_/);
  const loadId = page.url().split('/').pop();

  step('assign it, then picked up');
  await page.getByLabel('Carrier').selectOption({ label: 'Red River Hauling (MC 778899)' });
  await page.getByRole('button', { name: 'Assign' }).click();
  await page.getByRole('button', { name: 'Picked up' }).click();
  await page.waitForSelector('text=in transit');
  await shoot(page, '07-load');

  step('the load\'s map is fitted to its route, with readable stops and a legend');
  for (const width of [1280, 390]) {
    await page.setViewportSize({ width, height: 800 });
    await page.waitForTimeout(200);
    const map = await page.locator('#load-map svg.board-map').evaluate((svg) => ({
      view: svg.getAttribute('viewBox').split(' ').map(Number),
      stops: [...svg.querySelectorAll('circle.stop')].map((c) => c.getBoundingClientRect().width),
    }));
    const fullWidth = await page.evaluate(async () =>
      (await (await fetch('/dashboard/assets/us-states.json')).json()).viewBox[2]);
    if (!(map.view[2] < fullWidth * 0.9)) throw new Error(`the map is not fitted to the route: ${map.view} of ${fullWidth}`);
    if (map.stops.length !== 2 || map.stops.some((w) => w < 10)) {
      throw new Error(`at ${width} px the stops are ${map.stops} px wide, not two of 10 px or more`);
    }
  }
  await page.setViewportSize({ width: 1280, height: 800 });
  for (const key of ['Pickup', 'Delivery', 'GPS trail']) {
    await page.getByRole('list', { name: 'Map legend' }).getByText(key, { exact: true }).waitFor();
  }

  step('edit it from its page: its stops are fixed once assigned');
  await page.getByRole('link', { name: 'Edit', exact: true }).click();
  await page.waitForURL(/\/edit$/);
  await page.getByText('Origin and destination change only while a load is posted').waitFor();
  await shoot(page, '07-edit-load');
  await page.getByLabel('Notes').fill('Dock 4, ask for Sam');
  await page.getByRole('button', { name: 'Save changes' }).click();
  await page.waitForURL(/\/dashboard\/loads\/load_[^/]+$/);
  await page.getByText('Dock 4, ask for Sam').waitFor();

  step('create a load of three stops: one added between origin and destination, one added and removed');
  await nav('Loads');
  await page.getByRole('link', { name: 'Create load' }).click();
  // Times as the form takes them: UTC, to the minute.
  const utc = (hours) => new Date(Date.now() + hours * 3600e3).toISOString().slice(0, 16);
  const second = page.getByRole('group', { name: 'Stop 2' });
  const third = page.getByRole('group', { name: 'Stop 3' });
  if (await second.isVisible() || await third.isVisible()) fail('empty stops between show before they are added');
  const first = page.getByRole('group', { name: 'Origin' });
  await first.getByLabel('City').fill('Fort Worth');
  await first.getByLabel('State').selectOption('TX');
  await first.getByLabel('ZIP code').fill('76102');
  await first.getByLabel('Appointment or window start (UTC)').fill(utc(2));
  await page.getByRole('button', { name: 'Add a stop' }).click();
  await second.getByLabel('Type', { exact: true }).selectOption('pickup');
  await second.getByLabel('City').fill('Memphis');
  await second.getByLabel('State').selectOption('TN');
  await second.getByLabel('ZIP code').fill('38103');
  await second.getByLabel('Appointment or window start (UTC)').fill(utc(12));
  await second.getByLabel('Window end (UTC)').fill(utc(16));
  await second.getByLabel('Handling').selectOption('drop');
  await second.getByLabel(/^References/).fill('po:4500123, bol:889');
  await page.getByRole('button', { name: 'Add a stop' }).click();
  await third.getByLabel('City').fill('Nowhere');
  await third.getByRole('button', { name: 'Remove this stop' }).click();
  if (await third.isVisible()) fail('a removed stop still shows');
  const last = page.getByRole('group', { name: 'Destination' });
  await last.getByLabel('City').fill('Atlanta');
  await last.getByLabel('State').selectOption('GA');
  await last.getByLabel('ZIP code').fill('30303');
  await last.getByLabel('Appointment or window start (UTC)').fill(utc(24));
  await page.getByLabel('Weight (lb)').fill('38000');
  await page.getByLabel('Equipment type').selectOption('dry_van');
  await shoot(page, '06a-create-load-stops');
  await page.getByRole('button', { name: 'Create load' }).click();
  await page.waitForURL(/\/dashboard\/loads\/load_/);
  const multiId = page.url().split('/').pop();
  if (await page.locator('#stops li[data-stop]').count() !== 3) fail('the load page does not list its three stops');
  await page.getByLabel('Carrier').selectOption({ label: 'Red River Hauling (MC 778899)' });
  await page.getByRole('button', { name: 'Assign' }).click();
  await page.waitForSelector('text=assigned');
  answer = await api('POST', `/loads/${multiId}/tracking`, key,
    { lat: 32.9, lng: -97.6, timestamp: new Date().toISOString(), speed: 57, heading: 90 });
  if (answer.status !== 201) fail(`the three-stop load's fix answered ${answer.status}`);
  await page.reload();
  await page.getByText('Inferred from GPS, not from an ELD').waitFor();
  if (await page.locator('#stops [data-field="eta"]').count() !== 3) fail('not every stop ahead has an ETA');
  await shoot(page, '07d-multi-stop-load');

  step('Devices → Create device: the token and each app\'s settings, once, with copy buttons');
  await nav('Devices');
  await page.getByLabel('Name (a truck number, a driver\'s phone)').fill('Truck 12');
  await page.getByLabel('Carrier (optional)').selectOption({ label: 'Red River Hauling (MC 778899)' });
  await page.getByRole('button', { name: 'Create device' }).click();
  const deviceToken = await page.locator('#device-token').inputValue();
  if (!deviceToken.startsWith('frd_')) fail(`no device token shown: ${deviceToken}`);
  if ((await page.locator('#traccar-url').inputValue()) !== `${base}/v1/ingest/osmand`) fail('wrong Traccar Client server URL');
  if ((await page.locator('#owntracks-password').inputValue()) !== deviceToken) fail('wrong OwnTracks password');
  await page.getByRole('button', { name: 'Copy Token' }).click();
  if ((await page.evaluate(() => navigator.clipboard.readText())) !== deviceToken) fail('the token was not copied');
  await shoot(page, '07a-new-device');

  step('attach it on the load\'s page');
  await page.goto(`${base}/dashboard/loads/${loadId}`);
  await page.getByLabel('Device to attach').selectOption({ label: 'Truck 12' });
  await page.getByRole('button', { name: 'Attach', exact: true }).click();
  await page.locator('#device .device-name', { hasText: 'Truck 12' }).waitFor();
  await shoot(page, '07b-load-device');
  await nav('Devices');
  await page.locator(`a[href="/dashboard/loads/${loadId}"]`).waitFor();
  await shoot(page, '07c-devices');

  step('the device posts a position as Traccar Client does');
  let posted = await fetch(`${base}/v1/ingest/osmand?id=${deviceToken}&lat=32.5&lon=-96.9&timestamp=${Math.floor(Date.now() / 1000) - 5}&speed=50`, { method: 'POST' });
  if (posted.status !== 200) fail(`the device's position answered ${posted.status}`);

  step('a GPS fix through the API puts the load on the board');
  const fix = (lat, lng) => ({ lat, lng, timestamp: new Date().toISOString(), speed: 61, heading: 90 });
  answer = await api('POST', `/loads/${loadId}/tracking`, key, fix(32.78, -96.80));
  if (answer.status !== 201) fail(`fix answered ${answer.status}: ${JSON.stringify(answer.body)}`);
  await nav('Board');
  const marker = page.locator(`[data-load-id="${loadId}"]`).first();
  await marker.waitFor();
  await page.waitForSelector('#board-status:has-text("Live")');
  const before = await marker.getAttribute('transform');

  step('another fix moves the marker without a reload');
  await new Promise((r) => setTimeout(r, 1100));
  answer = await api('POST', `/loads/${loadId}/tracking`, key, fix(33.5, -90.2));
  if (answer.status !== 201) fail(`second fix answered ${answer.status}`);
  await page.waitForFunction(
    ([id, old]) => document.querySelector(`[data-load-id="${id}"]`)?.getAttribute('transform') !== old,
    [loadId, before],
  );
  await page.waitForTimeout(1500); // the marker glides to its new place
  const fed = await page.locator(`#board-list li[data-load="${loadId}"] .load-device`).textContent();
  if (fed !== 'Device: Truck 12') fail(`the board names the wrong device: ${fed}`);
  const next = await page.locator(`#board-list li[data-load="${multiId}"] .load-next`).textContent();
  if (!next.startsWith('Next: 1. Pickup, Fort Worth, TX') || !next.includes('ETA')) fail(`the board names the wrong next stop: ${next}`);
  await shoot(page, '08-board');

  step('the load page shows its stops, and makes a share link shown once');
  await page.goto(`${base}/dashboard/loads/${loadId}`);
  const pickupFence = await page.locator('#stops li[data-stop="pickup"]').textContent();
  if (!pickupFence.includes('400 m around the facility')) fail(`the pickup's geofence is wrong: ${pickupFence}`);
  await page.locator('#stops li[data-stop="delivery"]').waitFor();
  await page.getByRole('button', { name: 'Copy id' }).click();
  if ((await page.evaluate(() => navigator.clipboard.readText())) !== loadId) fail('the load id was not copied');
  await page.getByRole('button', { name: 'Make a link (72 hours)' }).click();
  const shareUrl = await page.locator('#share-url').inputValue();
  if (!shareUrl.includes('/track/')) fail(`no share link shown: ${shareUrl}`);
  await shoot(page, '08c-load-stops-share');

  step('the public tracking page: no sign-in, the truck on the map, nothing of the account');
  const outside = await browser.newContext({ ignoreHTTPSErrors: true, viewport: { width: 1280, height: 800 } });
  const publicPage = await outside.newPage();
  publicPage.on('pageerror', (e) => problems.push(`public page error: ${e.message}`));
  await publicPage.goto(shareUrl);
  await publicPage.locator('#track svg .truck').waitFor();
  const shown = await publicPage.locator('main').textContent();
  if (!shown.includes('Dallas, TX') || !shown.includes('Atlanta, GA')) fail(`the route is missing: ${shown}`);
  if (shown.includes(loadId) || shown.includes('Lone Star')) fail('the public page shows the load id or carrier');
  await shoot(publicPage, '08d-public-tracking');

  step('revoking the link closes the page at once');
  await page.getByRole('button', { name: 'Revoke', exact: true }).click();
  await page.waitForURL(`**/dashboard/loads/${loadId}**`);
  const closed = await publicPage.goto(shareUrl);
  if (closed.status() !== 410) fail(`a revoked link answered ${closed.status()}`);
  await outside.close();

  step('revoke the device after confirming; its token is refused');
  await nav('Devices');
  await page.getByRole('link', { name: 'Revoke', exact: true }).click();
  await shoot(page, '08a-revoke-device');
  await page.getByRole('button', { name: 'Revoke device' }).click();
  await page.waitForURL('**/dashboard/devices');
  posted = await fetch(`${base}/v1/ingest/osmand?id=${deviceToken}&lat=32.5&lon=-96.9`);
  if (posted.status !== 401) fail(`a revoked device's position answered ${posted.status}`);
  await shoot(page, '08b-devices');

  step('revoke the key; the API refuses it');
  await nav('Settings');
  await page.getByRole('link', { name: 'Revoke' }).first().click();
  await page.getByRole('button', { name: 'Revoke key' }).click();
  answer = await api('GET', '/auth/verify', key);
  if (answer.status !== 401 || answer.body.error.code !== 'REVOKED_API_KEY') {
    fail(`a revoked key answered ${answer.status}`);
  }
  await shoot(page, '09-keys');

  step('Settings → Users: invite a colleague; the link is shown once');
  await page.getByRole('link', { name: 'Users' }).click();
  await page.getByLabel('Email address').fill('colleague@lonestar.example');
  await page.getByRole('button', { name: 'Make invitation link' }).click();
  const link = await page.locator('#invitation-link').inputValue();
  if (!link.includes('/dashboard/password?token=')) fail(`no invitation link: ${link}`);
  await shoot(page, '10-users');

  step('Settings → Stops: stricter arrivals and no automatic in-transit, saved');
  await page.getByRole('link', { name: 'Stops' }).click();
  const late = page.getByLabel('Late: minutes after the appointment');
  if ((await late.inputValue()) !== '15') fail('the late threshold is not the default');
  await late.fill('20');
  await page.getByLabel(/Move an assigned load to in transit/).uncheck();
  await page.getByRole('button', { name: 'Save' }).click();
  await page.waitForSelector('text=Saved.');
  if ((await late.inputValue()) !== '20') fail('the late threshold was not kept');
  if (await page.getByLabel(/Move an assigned load to in transit/).isChecked()) fail('automatic in-transit is still on');
  await shoot(page, '10a-stop-settings');

  step('the loads list finds loads by the stop their truck is at and by late risk');
  await nav('Loads');
  await page.getByLabel('Truck at').selectOption('pickup');
  await page.getByRole('button', { name: 'Filter' }).click();
  await page.waitForURL('**at_stop=pickup**');
  if (await page.locator(`tr[data-load-id="${loadId}"]`).count() !== 0) fail('a load on the road listed as at its pickup');
  await page.getByLabel('Truck at').selectOption('');
  await page.getByLabel('Late risk').selectOption('false');
  await page.getByRole('button', { name: 'Filter' }).click();
  await page.waitForURL('**late_risk=false**');
  await page.locator(`tr[data-load-id="${loadId}"]`).waitFor();
  await shoot(page, '10b-loads-filtered');

  step('a carrier\'s page: change its phone and areas; another carrier is deleted');
  await nav('Carriers');
  await page.getByRole('link', { name: 'Red River Hauling' }).click();
  await page.getByLabel('Contact phone').fill('+1 903-555-0142');
  await page.getByLabel(/Service areas/).fill('TX OK AR');
  await page.getByRole('button', { name: 'Save changes' }).click();
  await page.waitForURL(/\/dashboard\/carriers\/carrier_/);
  if ((await page.getByLabel('Contact phone').inputValue()) !== '+1 903-555-0142') fail('the phone was not saved');
  await shoot(page, '10c-carrier');
  await nav('Carriers');
  await page.getByRole('link', { name: 'Add carrier' }).click();
  await page.getByLabel('Name', { exact: true }).fill('Short Haul Co');
  await page.getByLabel('MC number', { exact: true }).fill('MC 445566');
  await page.getByRole('button', { name: 'Add carrier' }).click();
  await page.waitForURL('**/dashboard/carriers');
  await page.getByRole('link', { name: 'Short Haul Co' }).click();
  await page.getByRole('button', { name: 'Delete carrier' }).click();
  await page.waitForURL('**/dashboard/carriers');
  if (await page.getByRole('link', { name: 'Short Haul Co' }).count() !== 0) fail('the deleted carrier is still listed');

  step('a webhook: add it, test it, disable and enable it, edit its events, delete it');
  const hooks = [];
  const receiver = http.createServer((req, res) => {
    let body = '';
    req.on('data', (chunk) => { body += chunk; });
    req.on('end', () => { hooks.push(JSON.parse(body)); res.end('ok'); });
  });
  await new Promise((resolve) => receiver.listen(0, '127.0.0.1', resolve));
  const hookUrl = `http://127.0.0.1:${receiver.address().port}/hooks`;
  await nav('Webhooks');
  await page.getByLabel('URL (https://…)').fill(hookUrl);
  await page.getByLabel('load.updated', { exact: true }).check();
  await page.getByRole('button', { name: 'Add webhook' }).click();
  await page.locator('#new-secret').waitFor();
  await page.getByRole('button', { name: 'Send a test event' }).click();
  await page.getByText('the receiver answered HTTP 200').waitFor();
  if (!hooks.some((h) => h.type === 'webhook.test')) fail('the receiver got no test event');
  await page.getByRole('button', { name: 'Disable', exact: true }).click();
  await page.getByRole('button', { name: 'Enable', exact: true }).click();
  await page.getByRole('button', { name: 'Disable', exact: true }).waitFor();
  await page.getByLabel('load.created', { exact: true }).check();
  await page.getByRole('button', { name: 'Save changes' }).click();
  await page.locator('dd', { hasText: 'load.created' }).waitFor();
  await shoot(page, '11-webhook');
  await page.getByRole('button', { name: 'Delete webhook' }).click();
  await page.waitForURL('**/dashboard/webhooks');
  if (await page.getByText(hookUrl).count() !== 0) fail('the deleted webhook is still listed');
  receiver.close();

  step('at phone width the header folds into a menu that opens on request');
  await page.setViewportSize({ width: 390, height: 844 });
  const mainNav = page.getByRole('navigation', { name: 'Main' });
  if (await mainNav.isVisible()) fail('the links show at 390 px before the menu is opened');
  await page.locator('label.menu-button').click();
  await mainNav.getByRole('link', { name: 'Loads', exact: true }).click();
  await page.waitForURL('**/dashboard/loads');
  await page.setViewportSize({ width: 1280, height: 800 });

  step('log out; the pages are closed');
  await page.getByRole('button', { name: 'Log out', exact: true }).click();
  await page.waitForURL('**/dashboard/login**');
  await page.goto(`${base}/dashboard/loads`);
  if (!page.url().includes('/dashboard/login')) fail(`signed out, yet ${page.url()} opened`);

  if (problems.length) fail(`the pages reported errors:\n${problems.join('\n')}`);
  console.log('walk complete');
} catch (error) {
  if (problems.length) console.error(`the pages reported:\n${problems.join('\n')}`);
  throw error;
} finally {
  await browser.close();
}
