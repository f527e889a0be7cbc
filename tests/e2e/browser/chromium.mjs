// SPDX-License-Identifier: Apache-2.0
// Debian's Chromium driven by playwright-core (from web/node_modules), the way every browser test
// here starts it: headless, no sandbox (CI runs as root), no background networking (this machine
// has no network), a fresh profile. Returns { browser, userDataDir }; remove userDataDir at the end.
import { createRequire } from 'node:module';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

const require = createRequire(new URL('../../../web/package.json', import.meta.url));
const { chromium } = require('playwright-core');

export async function launchChromium(viewport = { width: 1400, height: 1000 }, options = {}) {
  const userDataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'trainmon-chromium-'));
  const browser = await chromium.launchPersistentContext(userDataDir, {
    executablePath: '/usr/bin/chromium',
    headless: true,
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
      '--disable-background-networking', '--disable-component-update', '--disable-sync'],
    viewport,
    ...options,  // e.g. { locale: 'zh-CN' }: Accept-Language and navigator.languages
  });
  return { browser, userDataDir };
}
