// SPDX-License-Identifier: Apache-2.0
// Reads what the live dashboard of a running `trainmon serve` shows, in Debian's Chromium:
//   node dashboard_health_check.mjs BASE_URL SCREENSHOT_DIR
// For each width (1280 and 400 CSS pixels): every GPU card's health line (what, severity, text), its
// open findings (code, link, whether the link's target is on the page), the card's severity class,
// the runs table's findings column, the small charts' legend, axis labels and size; a full-page
// screenshot each. Prints one JSON line; exit 1 when the page failed to load or logged an error.
import fs from 'node:fs';
import path from 'node:path';

import { launchChromium } from './chromium.mjs';

const [base, shotDir] = process.argv.slice(2);
if (!base || !shotDir) {
  console.error('usage: dashboard_health_check.mjs BASE_URL SCREENSHOT_DIR');
  process.exit(2);
}

const { browser, userDataDir } = await launchChromium({ width: 1280, height: 900 });
const result = { widths: {}, console_errors: [] };
let failed = null;
try {
  const page = browser.pages()[0] || await browser.newPage();
  page.on('console', (m) => { if (m.type() === 'error') result.console_errors.push(m.text()); });
  page.on('pageerror', (e) => result.console_errors.push(String(e)));
  for (const width of [1280, 400]) {
    await page.setViewportSize({ width, height: 900 });
    await page.goto(base + '/', { waitUntil: 'load', timeout: 60000 });
    await page.waitForSelector('body[data-ready="live"]', { timeout: 60000 });
    await page.waitForSelector('.card.gpu .health .h-item', { timeout: 60000 });
    // the runs table is filled by then (livePage awaits it); the charts draw on the next ticks
    await page.waitForTimeout(2500);
    const seen = await page.evaluate(() => {
      const box = (e) => { const r = e.getBoundingClientRect(); return { width: r.width, height: r.height }; };
      const cards = [...document.querySelectorAll('.card.gpu')].map((c) => ({
        gpu: Number(c.getAttribute('data-gpu')),
        severity: ['ok', 'warning', 'critical'].find((s) => c.classList.contains('sev-' + s)) || null,
        health: [...c.querySelectorAll('.health .h-item')].map((h) => ({
          what: h.getAttribute('data-health'),
          severity: ['ok', 'info', 'warning', 'critical'].find((s) => h.classList.contains(s)) || null,
          text: h.textContent,
          color: getComputedStyle(h).color,
        })),
        findings: [...c.querySelectorAll('.gpu-findings a')].map((a) => ({
          code: a.getAttribute('data-code'),
          text: a.textContent,
          target_found: !!document.getElementById(a.getAttribute('href').slice(1)),
        })),
        chart: (() => {
          const u = c.querySelector('.mini .uplot');
          if (!u) return null;
          const canvas = u.querySelector('canvas');
          return {
            legend: [...u.querySelectorAll('.u-legend .u-series .u-label')].map((l) => l.textContent),
            // the titles uPlot drew on the canvas, as its own axes hold them
            axis_labels: JSON.parse(u.getAttribute('data-axis-labels') || '[]'),
            canvas: canvas ? box(canvas) : null,
            card: box(c),
          };
        })(),
      }));
      const runs = [...document.querySelectorAll('#runs tbody tr')].map((tr) => {
        const td = tr.querySelector('td[data-field="findings"]');
        const r = td.getBoundingClientRect();
        return {
          id: Number(tr.getAttribute('data-run')),
          findings: td.textContent,
          findings_visible: r.width > 0 && r.right <= window.innerWidth,
        };
      });
      return {
        cards,
        runs,
        runs_header: [...document.querySelectorAll('#runs thead th')].map((t) => t.textContent),
        page_width: document.documentElement.scrollWidth,
      };
    });
    const shot = path.join(shotDir, `dashboard-health-${width}.png`);
    await page.screenshot({ path: shot, fullPage: true });
    result.widths[width] = { ...seen, screenshot: shot };
  }
  // the run page's charts, through the run's link
  await page.setViewportSize({ width: 1280, height: 900 });
  await page.goto(base + '/', { waitUntil: 'load', timeout: 60000 });
  await page.waitForSelector('#runs tbody tr[data-run] a', { timeout: 60000 });
  await page.click('#runs tbody tr[data-run] td:first-child a');
  await page.waitForSelector('body[data-ready="run"]', { timeout: 60000 });
  result.run_charts = await page.$$eval('#run .chart .uplot', (us) => us.map((u) => ({
    id: u.parentElement.id,
    legend: [...u.querySelectorAll('.u-legend .u-series .u-label')].map((l) => l.textContent),
    axis_labels: JSON.parse(u.getAttribute('data-axis-labels') || '[]'),
    height: u.querySelector('canvas').getBoundingClientRect().height,
  })));
  result.run_screenshot = path.join(shotDir, 'dashboard-health-run.png');
  await page.screenshot({ path: result.run_screenshot, fullPage: true });
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
process.exit(result.console_errors.length === 0 ? 0 : 1);
