// Debian's Chromium, headless, under puppeteer-core: the flags the
// project's machines need (no sandbox as root, no background network,
// a fresh profile), and the page errors a test must see.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import puppeteer from 'puppeteer-core';

export const CHROMIUM = process.env.CHROMIUM || '/usr/bin/chromium';

export async function launch() {
  const profile = fs.mkdtempSync(path.join(os.tmpdir(), 'nkiview-chromium-'));
  const browser = await puppeteer.launch({
    executablePath: CHROMIUM,
    headless: true,
    userDataDir: profile,
    args: ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
           '--disable-background-networking', '--disable-component-update',
           '--disable-sync'],
  });
  const close = browser.close.bind(browser);
  browser.close = async () => {
    await close();
    fs.rmSync(profile, { recursive: true, force: true });
  };
  return browser;
}

// Console errors, uncaught exceptions, failed requests and any request
// leaving the file (the page must need no network) of `page`, as they
// happen (the array fills in).
export function pageErrors(page) {
  const errors = [];
  page.on('request', (r) => {
    if (!/^(file|data|about):/.test(r.url())) errors.push('network request: ' + r.url());
  });
  page.on('console', (m) => { if (m.type() === 'error') errors.push('console: ' + m.text()); });
  page.on('pageerror', (e) => errors.push('exception: ' + e.message));
  page.on('requestfailed', (r) => errors.push('request failed: ' + r.url()));
  return errors;
}
