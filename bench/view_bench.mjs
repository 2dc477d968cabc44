// Speed of the pages `nkigraph view` writes, in headless Chromium: for
// each page given, over --loads fresh loads, the first contentful paint
// and the time until the page is ready (data parsed, the first picture
// page and the timeline drawn, one frame painted); then, on one load,
// the time from selecting an instruction to the next painted frame (the
// panel, both pictures' marks, the timeline's, a page switch when the
// instruction is on another page), over --selects instructions spread
// over the graph, --settle ms after the page is ready (a user reads it
// before clicking; the pages not shown are parsed in idle time by then).
// Medians and maxima, in milliseconds, as JSON lines.
//
//   node bench/view_bench.mjs PAGE.html... [--loads 5] [--selects 30]
//       [--settle 2000]
//
// scripts/view_figures.sh makes the pages and prints the table.
import path from 'node:path';
import { parseArgs } from 'node:util';
import { launch, pageErrors } from '../tests/browser/browser.mjs';

const { values: opts, positionals: pages } = parseArgs({
  allowPositionals: true,
  options: { loads: { type: 'string', default: '5' },
             selects: { type: 'string', default: '30' },
             settle: { type: 'string', default: '2000' } },
});
const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
};
const round = (x) => Math.round(x * 10) / 10;

const browser = await launch();
try {
  for (const file of pages) {
    const url = 'file://' + path.resolve(file);
    const paint = [], ready = [];
    let select = [], errors = [];
    for (let k = 0; k < Number(opts.loads); ++k) {
      const page = await browser.newPage();
      await page.setViewport({ width: 1400, height: 900 });
      errors = pageErrors(page);
      await page.goto(url, { waitUntil: 'load' });
      await page.waitForSelector('body[data-ready="true"]', { timeout: 60000 });
      const t = await page.evaluate(() => new Promise((done) => {
        requestAnimationFrame(() => requestAnimationFrame(() => {
          const fcp = performance.getEntriesByName('first-contentful-paint')[0];
          done({ ready: performance.now(), fcp: fcp ? fcp.startTime : NaN });
        }));
      }));
      paint.push(t.fcp);
      ready.push(t.ready);
      if (k === 0) {
        await new Promise((r) => setTimeout(r, Number(opts.settle)));
        select = await page.evaluate(async (n) => {
          const m = window.NkiView.app.model, out = [];
          const frame = () => new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(r)));
          for (let j = 0; j < n; ++j) {
            const i = Math.floor((j + 0.5) * m.count / n);
            const t0 = performance.now();
            m.select(i, 'search');
            await frame();
            out.push(performance.now() - t0);
          }
          return out;
        }, Number(opts.selects));
      }
      await page.close();
    }
    console.log(JSON.stringify({
      page: path.basename(file),
      first_paint_ms: round(median(paint)), ready_ms: round(median(ready)),
      ready_max_ms: round(Math.max(...ready)),
      select_ms: round(median(select)), select_max_ms: round(Math.max(...select)),
      loads: Number(opts.loads), selects: select.length,
      settle_ms: Number(opts.settle), errors,
    }));
  }
} finally {
  await browser.close();
}
