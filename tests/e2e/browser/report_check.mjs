// SPDX-License-Identifier: Apache-2.0
// Opens a `trainmon report` HTML file in Debian's Chromium (playwright-core) through file://:
//   node report_check.mjs REPORT.html SCREENSHOT.png
// Waits until the page says it is drawn (window.trainmonReport.ready), then prints one JSON line:
// {charts: [{id, points, shaded, epochs, unit, y_ticks, caption}], renderMs, errors, console_errors, canvases, screenshot,
//  findings, reloads: [renderMs...], train_line, split_heading, split: [{rank, who, text, label, bar_width,
//  segments: [{kind, share, width}]}], narrow: {width, rows: [{right, text_visible}]}} (narrow: the
//  "Where the time went" rows once more at a 360-px-wide viewport, absent when there are none). Exit 1 on a console error, a page error or a page that never
// finished drawing. With REPEAT=n in the environment the page is reloaded n times (benchmark).
import fs from 'node:fs';
import path from 'node:path';
import { pathToFileURL } from 'node:url';

import { launchChromium } from './chromium.mjs';

const [file, shot] = process.argv.slice(2);
if (!file || !shot) {
  console.error('usage: report_check.mjs REPORT.html SCREENSHOT.png');
  process.exit(2);
}
const repeat = Number(process.env.REPEAT || 0);

const { browser, userDataDir } = await launchChromium();
const result = { console_errors: [], requests: [], screenshot: '' };
let failed = null;
try {
  const page = browser.pages()[0] || await browser.newPage();
  page.on('console', (m) => { if (m.type() === 'error') result.console_errors.push(m.text()); });
  page.on('pageerror', (e) => result.console_errors.push(String(e)));
  // offline: the page must not fetch anything but itself
  page.on('request', (r) => { if (!r.url().startsWith('file:')) result.requests.push(r.url()); });
  const url = pathToFileURL(path.resolve(file)).href;
  await page.goto(url, { waitUntil: 'load', timeout: 120000 });
  await page.waitForFunction(() => window.trainmonReport && window.trainmonReport.ready, null, { timeout: 120000 });
  Object.assign(result, await page.evaluate(() => {
    const r = window.trainmonReport;
    return {
      charts: r.charts.map((c) => ({ id: c.id, points: c.points, shaded: c.shaded, epochs: c.epochs, unit: c.unit,
        y_ticks: c.y_ticks,
        caption: document.querySelector(`#chart-${CSS.escape(c.id)} figcaption`)?.textContent ?? null })),
      renderMs: r.renderMs,
      errors: r.errors,
      canvases: document.querySelectorAll('figure.chart canvas').length,
      findings: [...document.querySelectorAll('.finding')].map((f) => f.id),
      title: document.title,
      train_line: document.querySelector('.train-line')?.textContent ?? null,
      split_heading: document.querySelector('#time-split h2')?.textContent ?? null,
      split: [...document.querySelectorAll('.split-row')].map((row) => {
        const bar = row.querySelector('.split-bar');
        return { rank: row.dataset.rank, who: row.querySelector('.split-who').textContent,
          text: row.querySelector('.split-text').textContent, label: bar.getAttribute('aria-label'),
          bar_width: bar.clientWidth,
          segments: [...bar.querySelectorAll('.seg')].map((g) => ({ kind: g.dataset.kind, share: Number(g.dataset.share),
            width: g.getBoundingClientRect().width })) };
      }),
    };
  }));
  // a finding's link scrolls to its chart
  const link = page.locator('.finding a.goto').first();
  if (await link.count()) {
    await link.click();
    result.link_target = await page.evaluate(() => location.hash);
  }
  await page.screenshot({ path: shot, fullPage: true });
  result.screenshot = shot;
  if (result.split.length) {
    await page.setViewportSize({ width: 360, height: 800 });
    result.narrow = await page.evaluate(() => ({ width: document.documentElement.clientWidth,
      rows: [...document.querySelectorAll('.split-row')].map((row) => {
        const t = row.querySelector('.split-text').getBoundingClientRect();
        return { right: Math.max(...[...row.children].map((c) => c.getBoundingClientRect().right)),
          text_visible: t.width > 0 && t.height > 0 };
      }) }));
  }
  result.reloads = [];
  for (let i = 0; i < repeat; i++) {
    await page.reload({ waitUntil: 'load', timeout: 120000 });
    await page.waitForFunction(() => window.trainmonReport && window.trainmonReport.ready, null, { timeout: 120000 });
    result.reloads.push(await page.evaluate(() => window.trainmonReport.renderMs));
  }
  if (result.console_errors.length) failed = 'console errors: ' + result.console_errors.join(' | ');
  else if (result.errors.length) failed = 'chart errors: ' + result.errors.join(' | ');
  else if (result.requests.length) failed = 'network requests: ' + result.requests.join(' ');
} catch (e) {
  failed = String(e && e.stack || e);
} finally {
  await browser.close();
  fs.rmSync(userDataDir, { recursive: true, force: true });
}
console.log(JSON.stringify(result));
if (failed) {
  console.error('report_check: ' + failed);
  process.exit(1);
}
