// What the browser tests share: Debian's Chromium launched headless as this
// machine allows it, and screenshots at laptop and phone widths that fail a
// page which scrolls sideways.

import { chromium } from 'playwright-core';
import { join } from 'node:path';

/** Headless Chromium from FREIGHT_CHROMIUM (no sandbox, nothing fetched on its own). */
export function launch() {
  return chromium.launch({
    executablePath: process.env.FREIGHT_CHROMIUM,
    headless: true,
    args: ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
      '--disable-background-networking', '--disable-component-update', '--disable-sync'],
  });
}

/**
 * Saves the page at 1280 and 390 px into `artifacts` as `<name>-<width>.png`;
 * neither width may scroll sideways. `settleMs`: a wait after each resize (a
 * map fetches the tiles the new size shows).
 */
export async function shoot(page, artifacts, name, settleMs = 0) {
  for (const [label, width] of [['1280', 1280], ['390', 390]]) {
    await page.setViewportSize({ width, height: width === 390 ? 844 : 800 });
    if (settleMs) await page.waitForTimeout(settleMs);
    await page.screenshot({ path: join(artifacts, `${name}-${label}.png`), fullPage: true });
    const wide = await page.evaluate(() => document.documentElement.scrollWidth - document.documentElement.clientWidth);
    if (wide > 0) throw new Error(`${name} scrolls sideways by ${wide}px at ${width}px`);
  }
  await page.setViewportSize({ width: 1280, height: 800 });
}
