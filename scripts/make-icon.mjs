#!/usr/bin/env node
// Renders the Marketplace icon media/icon.png (128×128 PNG; vsce refuses an SVG icon) from media/ralph.svg, the
// activity-bar glyph: the glyph in white on a rounded square, drawn by headless Chromium (playwright-core, Debian's
// chromium or RALPH_CHROMIUM). Run it after changing media/ralph.svg: `node scripts/make-icon.mjs`.
import * as fs from 'node:fs';
import * as path from 'node:path';
import { chromium } from 'playwright-core';

const root = path.resolve(path.dirname(new URL(import.meta.url).pathname), '..');
const glyph = fs
  .readFileSync(path.join(root, 'media', 'ralph.svg'), 'utf8')
  .replace(/width="24" height="24"/, 'width="96" height="96"');
const html = `<!doctype html><html><body style="margin:0;background:transparent">
<div id="icon" style="width:128px;height:128px;border-radius:24px;display:flex;align-items:center;justify-content:center;
 background:linear-gradient(135deg,#2f6fd6 0%,#6a3fc8 100%);color:#ffffff">${glyph}</div></body></html>`;

const browser = await chromium.launch({
  executablePath: process.env.RALPH_CHROMIUM ?? '/usr/bin/chromium',
  args: ['--no-sandbox', '--disable-gpu'],
});
try {
  const page = await browser.newPage({ viewport: { width: 128, height: 128 }, deviceScaleFactor: 1 });
  await page.setContent(html);
  await page.locator('#icon').screenshot({ path: path.join(root, 'media', 'icon.png'), omitBackground: true });
} finally {
  await browser.close();
}
console.log('wrote media/icon.png');
