// SPDX-License-Identifier: Apache-2.0
// Opens `trainmon serve`'s live dashboard in Debian's Chromium with a browser locale and reports the
// text it shows and whether every CJK character on it has a glyph:
//   node dashboard_lang_check.mjs BASE_URL LOCALE SCREENSHOT.png
// LOCALE ('zh-CN', 'en-US') sets the browser's Accept-Language and navigator.languages. A CJK character
// (U+2E80..U+9FFF, U+F900..U+FAFF, U+FF00..U+FFEF) drawn on a canvas in the page's font exactly like a
// code point no font has (U+10FFFD) has no glyph (as glyph_check.mjs). Prints one JSON line:
// {lang, title, h2, th, labels, host_rows, conn, empty, findings, cjk, missing, font, errors, screenshot}.
import fs from 'node:fs';

import { launchChromium } from './chromium.mjs';

const [base, locale, shot] = process.argv.slice(2);
const { browser, userDataDir } = await launchChromium({ width: 1400, height: 1000 }, { locale });
let code = 0;
try {
  const page = browser.pages()[0] || await browser.newPage();
  const errors = [];
  page.on('console', (m) => { if (m.type() === 'error') errors.push(m.text()); });
  page.on('pageerror', (e) => errors.push(String(e)));
  await page.goto(base + '/', { waitUntil: 'load', timeout: 60000 });
  await page.waitForSelector('body[data-ready="live"]', { timeout: 60000 });
  await page.waitForSelector('.card.gpu [data-field="util"]', { timeout: 60000 });
  const result = await page.evaluate(async () => {
    await document.fonts.ready;
    const texts = (sel) => [...document.querySelectorAll(sel)].map((e) => e.textContent);
    const font = getComputedStyle(document.querySelector('#live h2') || document.body).font;
    const text = document.body.innerText;
    const cjk = [...new Set([...text].filter((c) => /[\u2e80-\u9fff\uf900-\ufaff\uff00-\uffef]/.test(c)))];
    const canvas = document.createElement('canvas');
    canvas.width = 64;
    canvas.height = 64;
    const ctx = canvas.getContext('2d', { willReadFrequently: true });
    const draw = (ch) => {
      ctx.clearRect(0, 0, 64, 64);
      ctx.font = font.replace(/\d+(\.\d+)?px/, '40px');
      ctx.fillStyle = '#000';
      ctx.textBaseline = 'top';
      ctx.fillText(ch, 4, 4);
      return ctx.getImageData(0, 0, 64, 64).data.join(',');
    };
    const tofu = draw('\u{10FFFD}');
    return {
      lang: document.documentElement.lang,
      languages: navigator.languages,
      title: document.title,
      h2: texts('#live h2'),
      th: texts('#live table:not(.u-legend) th'),  // the tables' headers, not the charts' legends
      labels: texts('.card.gpu .row .muted').slice(0, 5),
      host_rows: texts('#hostcard .row .muted'),
      conn: document.getElementById('conn').textContent,
      empty: texts('#live td.muted, #live li.muted'),
      // each finding of the list: [evidence, advice] as the page shows them
      findings: [...document.querySelectorAll('#findings li:not(.muted)')].map(
          (li) => [...li.querySelectorAll('div')].map((d) => d.textContent)),
      cjk: cjk.length,
      missing: cjk.filter((c) => draw(c) === tofu),
      font,
    };
  });
  await page.screenshot({ path: shot, fullPage: false });
  result.screenshot = shot;
  result.errors = errors;
  console.log(JSON.stringify(result));
} catch (e) {
  console.error(String(e));
  code = 1;
} finally {
  await browser.close();
  fs.rmSync(userDataDir, { recursive: true, force: true });
}
process.exit(code);
