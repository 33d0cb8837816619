// The dashboard walked through in headless Chromium as a new user would, by
// the labels and action names on the pages: register, choose Pro, generate a
// key and use it against the API, add a carrier, create a load by hand, assign
// it, post GPS fixes through the API and watch its marker move on the board
// without a reload, revoke the key and see the API refuse it, log out and find
// the pages closed. Screenshots of each page at 1280 and 390 px go to
// $FREIGHT_ARTIFACTS. Started by tests/api/browser.rs with the server running.
//
// Environment: FREIGHT_URL (https://localhost:<port>), FREIGHT_CHROMIUM (the
// browser), FREIGHT_ARTIFACTS (a directory), NODE_EXTRA_CA_CERTS (the server's
// certificate, so this script's own API calls trust it).

import { chromium } from 'playwright-core';
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';

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

/** Saves the page at laptop and phone widths. */
async function shoot(page, name) {
  for (const [label, width] of [['1280', 1280], ['390', 390]]) {
    await page.setViewportSize({ width, height: width === 390 ? 844 : 800 });
    await page.screenshot({ path: join(artifacts, `${name}-${label}.png`), fullPage: true });
  }
  await page.setViewportSize({ width: 1280, height: 800 });
}

const problems = [];
const browser = await chromium.launch({
  executablePath: process.env.FREIGHT_CHROMIUM,
  headless: true,
  args: ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
    '--disable-background-networking', '--disable-component-update', '--disable-sync'],
});
try {
  const context = await browser.newContext({ ignoreHTTPSErrors: true, viewport: { width: 1280, height: 800 } });
  const page = await context.newPage();
  page.setDefaultTimeout(15000);
  // The main navigation's links, by their exact names.
  const nav = (name) => page.getByRole('navigation', { name: 'Main' })
    .getByRole('link', { name, exact: true }).click();
  page.on('pageerror', (e) => problems.push(`page error: ${e.message}`));
  page.on('response', (r) => {
    // favicon.ico: browsers ask for it whatever the page says; there is none.
    if (r.status() >= 400 && !r.url().endsWith('/favicon.ico')) problems.push(`${r.status()} ${r.url()}`);
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
  await page.getByLabel('MC number (digits)').fill('778899');
  await page.getByLabel('dry_van').check();
  await page.getByRole('button', { name: 'Add carrier' }).click();
  await page.waitForURL('**/dashboard/carriers');
  await shoot(page, '05-carriers');

  step('create a load by hand');
  await nav('Loads');
  await page.getByRole('link', { name: 'Create load' }).click();
  const origin = page.getByRole('group', { name: 'Origin' });
  await origin.getByLabel('City').fill('Dallas');
  await origin.getByLabel('State (two letters)').fill('TX');
  await origin.getByLabel('ZIP code').fill('75201');
  const destination = page.getByRole('group', { name: 'Destination' });
  await destination.getByLabel('City').fill('Atlanta');
  await destination.getByLabel('State (two letters)').fill('GA');
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
  await shoot(page, '08-board');

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
