// SPDX-License-Identifier: Apache-2.0
// Drives Debian's Chromium through playwright-core against a running `trainmon serve`:
//   node serve_check.mjs BASE_URL RUN_ID SCREENSHOT_DIR [TOKEN]
// With TOKEN (serve --token-file): the page without it must be refused (401), and opening
// /?token=TOKEN must give a working dashboard (the cookie carries the token to the API calls).
// Loads the live dashboard, waits until the GPU cards' values change as the fake scenario moves,
// opens the run page, saves screenshots, and prints one JSON line with what it saw. Exit 1 on failure.
import fs from 'node:fs';
import path from 'node:path';

import { launchChromium } from './chromium.mjs';

const [base, runId, shotDir, token] = process.argv.slice(2);
if (!base || !runId || !shotDir) {
  console.error('usage: serve_check.mjs BASE_URL RUN_ID SCREENSHOT_DIR');
  process.exit(2);
}

const { browser, userDataDir } = await launchChromium();
const result = { changed: false, gpu_cards: 0, run_charts: 0, console_errors: [], screenshot: '' };
let failed = null;
try {
  const page = browser.pages()[0] || await browser.newPage();
  page.on('console', (m) => { if (m.type() === 'error') result.console_errors.push(m.text()); });
  page.on('pageerror', (e) => result.console_errors.push(String(e)));

  if (token) {
    const refused = await page.goto(base + '/', { waitUntil: 'load', timeout: 60000 });
    result.without_token_status = refused.status();
    const ok = await page.goto(base + '/?token=' + encodeURIComponent(token), { waitUntil: 'load', timeout: 60000 });
    result.with_token_status = ok.status();
    await page.waitForSelector('body[data-ready="live"]', { timeout: 60000 });
    await page.waitForSelector('.card.gpu [data-field="util"]', { timeout: 60000 });
    result.gpu_cards = await page.locator('.card.gpu').count();
    result.connection = await page.textContent('#conn');
    result.screenshot = path.join(shotDir, 'serve-token.png');
    await page.screenshot({ path: result.screenshot, fullPage: true });
    // the 401 of the first visit is the one expected console error
    result.console_errors = result.console_errors.filter((e) => !e.includes('401'));
  } else {
  await page.goto(base + '/', { waitUntil: 'load', timeout: 60000 });
  await page.waitForSelector('body[data-ready="live"]', { timeout: 60000 });
  await page.waitForSelector('.card.gpu [data-field="util"]', { timeout: 60000 });
  result.gpu_cards = await page.locator('.card.gpu').count();
  const read = () => page.$$eval('.card.gpu [data-field="util"], .card.gpu [data-field="power"]',
    (els) => els.map((e) => e.textContent).join('|'));
  const first = await read();
  const deadline = Date.now() + 60000;
  while (Date.now() < deadline) {
    await page.waitForTimeout(700);
    if ((await read()) !== first) { result.changed = true; break; }
  }
  // the charts have drawn points by now
  await page.waitForFunction(() => document.querySelectorAll('.card.gpu canvas').length > 0, null, { timeout: 30000 });
  result.runs_listed = await page.locator('#runs tbody tr').count();
  const live = path.join(shotDir, 'serve-dashboard.png');
  await page.screenshot({ path: live, fullPage: true });

  // the run page, through its link in the run list
  await page.click(`#runs tr[data-run="${runId}"] a`, { timeout: 30000 });
  await page.waitForSelector('body[data-ready="run"]', { timeout: 60000 });
  result.run_title = await page.textContent('#run-title');
  result.run_charts = await page.locator('#run .chart canvas').count();
  result.screenshot = path.join(shotDir, 'serve-run.png');
  await page.screenshot({ path: result.screenshot, fullPage: true });
  result.dashboard_screenshot = live;
  // the run page links the run's full HTML report
  const href = await page.getAttribute('#run-report', 'href');
  const rep = await page.request.get(base + href);
  result.report_status = rep.status();
  result.report_html = (await rep.text()).toLowerCase().includes('<html');
  }
} catch (e) {
  failed = e;
} finally {
  await browser.close();
  fs.rmSync(userDataDir, { recursive: true, force: true });
}
console.log(JSON.stringify(result));
if (failed) {
  console.error(String(failed && failed.stack || failed));
  process.exit(1);
}
const ok = token
  ? result.without_token_status === 401 && result.with_token_status === 200 && result.gpu_cards > 0 &&
    result.connection.startsWith('live')
  : result.changed && result.run_charts >= 4 && result.report_status === 200 && result.report_html;
process.exit(ok && result.console_errors.length === 0 ? 0 : 1);
