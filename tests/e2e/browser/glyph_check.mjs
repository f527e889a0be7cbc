// SPDX-License-Identifier: Apache-2.0
// Opens a Chinese `trainmon report` HTML file in Debian's Chromium and checks that every CJK
// character on the page has a glyph in the font the page uses:
//   node glyph_check.mjs REPORT.html SCREENSHOT.png
// Each distinct CJK character (U+2E80..U+9FFF, U+F900..U+FAFF, U+FF00..U+FFEF) is drawn on a canvas in
// the evidence paragraph's computed font and compared, pixel by pixel, with the drawing of a code
// point no font has (U+10FFFD, private use: the "tofu" box or nothing). A character drawn like it has
// no glyph. Prints one JSON line: {lang, h2, evidence, advice, cjk, missing, font, screenshot}.
import fs from 'node:fs';
import path from 'node:path';
import { pathToFileURL } from 'node:url';

import { launchChromium } from './chromium.mjs';

const [file, shot] = process.argv.slice(2);
const { browser, userDataDir } = await launchChromium({ width: 1200, height: 900 });
let code = 0;
try {
  const page = browser.pages()[0] || await browser.newPage();
  const errors = [];
  page.on('pageerror', (e) => errors.push(String(e)));
  await page.goto(pathToFileURL(path.resolve(file)).href, { waitUntil: 'load', timeout: 120000 });
  await page.waitForFunction(() => window.trainmonReport && window.trainmonReport.ready, null, { timeout: 120000 });
  const result = await page.evaluate(async () => {
    await document.fonts.ready;
    const ev = document.querySelector('.finding .evidence');
    const font = getComputedStyle(ev || document.body).font;
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
    const missing = cjk.filter((c) => draw(c) === tofu);
    return {
      lang: document.documentElement.lang,
      h2: [...document.querySelectorAll('h2')].map((h) => h.textContent),
      evidence: ev ? ev.textContent : '',
      advice: document.querySelector('.finding .advice')?.textContent ?? '',
      cjk: cjk.length,
      missing,
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
