// Loads pages `nkigraph view` writes in Debian's headless Chromium (driven
// by puppeteer-core, no browser download) from file:// and checks them as
// a user would use them: no console errors; every instruction reachable
// through search and drawn in the dataflow picture; #select=ID opens the
// panel on that instruction with the graph's source line; a click on a
// timeline bar selects the same node in the dataflow picture; a paged
// picture navigates to the page of what is selected; a graph without a
// target or a dump opens with those parts marked absent.
//
//   node view_test.mjs --nkigraph build/tools/nkigraph --out DIR
//       [--screenshot docs/images/view.png]
//
// Prints "N passed, M failed" and exits non-zero on any failure.
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { launch, pageErrors } from './browser.mjs';
import { readPbtxt } from './pbtxt.mjs';

const { values: opts } = parseArgs({
  options: {
    nkigraph: { type: 'string' },
    out: { type: 'string' },
    screenshot: { type: 'string' },
  },
});
if (!opts.nkigraph || !opts.out) {
  console.error('usage: node view_test.mjs --nkigraph BIN --out DIR [--screenshot PNG]');
  process.exit(2);
}
fs.mkdirSync(opts.out, { recursive: true });
const out = (name) => path.resolve(opts.out, name);
const cli = (...args) => execFileSync(opts.nkigraph, args, { encoding: 'utf8' });

let passed = 0, failed = 0;
function check(ok, what) {
  if (ok) { ++passed; return; }
  ++failed;
  console.log('FAIL: ' + what);
}

// A traced graph as .pbtxt (what the test reads independently of the
// page) and its page.
function graph(name, kernel, sets, viewArgs = [], edit = null) {
  const pbtxt = out(name + '.pbtxt');
  cli('trace', kernel, ...sets.flatMap((s) => ['--set', s]), '-o', pbtxt);
  if (edit) fs.writeFileSync(pbtxt, edit(fs.readFileSync(pbtxt, 'utf8')));
  const html = out(name + '.html');
  cli('view', pbtxt, '-o', html, ...viewArgs);
  const count = Number(/instructions: (\d+)/.exec(cli('info', pbtxt))[1]);
  return { name, pbtxt, html, count, parsed: readPbtxt(fs.readFileSync(pbtxt, 'utf8')) };
}

async function open(browser, g, fragment = '') {
  const page = await browser.newPage();
  await page.setViewport({ width: 1400, height: 900 });
  const errors = pageErrors(page);
  await page.goto('file://' + g.html + fragment, { waitUntil: 'load' });
  await page.waitForSelector('body[data-ready="true"]', { timeout: 15000 });
  return { page, errors };
}

// Every instruction: found by searching its id, and drawn by a node.
async function checkReachable(page, g) {
  const r = await page.evaluate(() => {
    const app = window.NkiView.app, m = app.model;
    const ids = m.instrs.map((ins) => ins[0]);
    const unfound = ids.filter((id) => {
      const hits = app.search.find('#' + id);
      return hits.length !== 1 || m.instrs[hits[0]][0] !== id;
    });
    const undrawn = ids.filter((id, i) => !app.views.dataflow.nodesOf.has(i));
    return { count: ids.length, unfound, undrawn };
  });
  check(r.count === g.count, `${g.name}: the page lists ${r.count} instructions, info says ${g.count}`);
  check(r.unfound.length === 0, `${g.name}: search does not find ids ${r.unfound.slice(0, 5)}`);
  check(r.undrawn.length === 0, `${g.name}: not in the dataflow picture: ${r.undrawn.slice(0, 5)}`);
}

// #select=ID: the panel shows that instruction and its source line.
async function checkDeepLink(browser, g, id) {
  const { page, errors } = await open(browser, g, '#select=' + id);
  const shown = await page.evaluate(() => ({
    title: document.querySelector('#panel h2').textContent,
    source: document.getElementById('panel-source').textContent,
    selected: document.querySelectorAll('#picture-dataflow g.node.selected').length,
  }));
  const want = g.parsed.source(id);
  check(shown.title.startsWith('#' + id + ' '), `${g.name}: #select=${id} opened "${shown.title}"`);
  check(shown.source === want, `${g.name}: #select=${id} source "${shown.source}", graph says "${want}"`);
  check(shown.selected >= 1, `${g.name}: #select=${id} marks no dataflow node`);
  check(errors.length === 0, `${g.name}: console errors: ${errors.join(' | ')}`);
  await page.close();
}

// A real click on a timeline bar (one drawn for a single instruction, in
// the middle of the timeline) selects that instruction's dataflow node.
async function checkTimelineClick(page, g) {
  const bars = await page.$$('#timeline rect.bar[data-n="1"]:not(.mark)');
  check(bars.length > 0, `${g.name}: no timeline bar of one instruction`);
  if (!bars.length) return;
  const bar = bars[Math.floor(bars.length / 2)];
  const index = Number(await bar.evaluate((e) => e.dataset.i));
  await bar.click();
  const r = await page.evaluate((index) => {
    const view = window.NkiView.app.views.dataflow;
    const nodes = [...document.querySelectorAll('#picture-dataflow g.node.selected')];
    const want = new Set((view.nodesOf.get(index) || []).map((n) => view.prefix + n));
    return { ok: nodes.length > 0 && nodes.every((e) => want.has(e.id)),
             id: window.NkiView.app.model.instrs[index][0],
             panel: document.getElementById('panel').dataset.instr,
             hash: location.hash };
  }, index);
  check(r.ok, `${g.name}: clicking #${r.id}'s bar did not select its dataflow node`);
  check(r.panel === String(r.id), `${g.name}: clicking #${r.id}'s bar opened panel ${r.panel}`);
  check(r.hash === '#select=' + r.id, `${g.name}: the fragment is ${r.hash}`);
}

const browser = await launch();
try {
  // A seed kernel with its dumped values.
  const mm = graph('tiled_matmul', 'tiled_matmul', []);
  cli('run', mm.pbtxt, '--random-inputs', '1', '-o', out('mm_out'), '--dump', out('mm_dump'));
  cli('view', mm.pbtxt, '-o', mm.html, '--dump', out('mm_dump'));
  // Multi-rank: fgcc, 4 ranks x 2 cores.
  const fgcc = graph('fgcc', 'fgcc', []);
  // A paged large graph: two decoder layers, many pages wide.
  const big = graph('transformer_tkg', 'transformer_tkg', ['num_layers=2']);
  // No target, no dump.
  const bare = graph('bare', 'tiled_matmul', [], [],
                     (text) => text.replace(/\n\s*target: TARGET_\w+/, ''));

  for (const g of [mm, fgcc, big, bare]) {
    const { page, errors } = await open(browser, g);
    await checkReachable(page, g);
    if (g !== bare) await checkTimelineClick(page, g);
    check(errors.length === 0, `${g.name}: console errors: ${errors.join(' | ')}`);
    await page.close();
    await checkDeepLink(browser, g, g.parsed.ids[g.parsed.ids.length - 1]);
  }

  // Values in the panel, and the screenshot for the README.
  {
    const { page, errors } = await open(browser, mm, '#select=6');
    const heat = await page.$$('#panel .heatmap rect');
    check(heat.length === 32 * 32, `tiled_matmul: heat-map has ${heat.length} cells`);
    if (opts.screenshot) await page.screenshot({ path: opts.screenshot });
    // Zoom: the wheel over the picture scales it; ctrl+wheel over the
    // timeline widens it (and keeps the selection marked).
    const before = await page.evaluate(() => ({
      scale: window.NkiView.app.views.dataflow.scale,
      width: document.querySelector('#timeline svg').getAttribute('width'),
    }));
    await page.mouse.move(400, 300);
    await page.mouse.wheel({ deltaY: -300 });
    await page.mouse.move(500, 650);
    await page.keyboard.down('Control');
    await page.mouse.wheel({ deltaY: -300 });
    await page.keyboard.up('Control');
    const after = await page.evaluate(() => ({
      scale: window.NkiView.app.views.dataflow.scale,
      width: document.querySelector('#timeline svg').getAttribute('width'),
      marked: document.querySelectorAll('#timeline rect.mark.selected').length,
    }));
    check(after.scale > before.scale, `zoom: picture scale ${before.scale} -> ${after.scale}`);
    check(Number(after.width) > Number(before.width) && after.marked === 1,
          `zoom: timeline ${before.width} -> ${after.width} px, ${after.marked} marked`);
    check(errors.length === 0, `tiled_matmul values: ${errors.join(' | ')}`);
    await page.close();
  }
  // Folding: "fold scopes" hides the nodes inside the scope boxes behind
  // one box each; selecting an instruction inside unfolds its box.
  {
    const { page, errors } = await open(browser, fgcc);
    await page.click('#fold-all');
    const folded = await page.evaluate(() => ({
      boxes: document.querySelectorAll('#picture-dataflow rect.fold').length,
      hidden: document.querySelectorAll('#picture-dataflow g.node.folded-away').length,
      hiddenEl: (document.querySelector('#picture-dataflow g.node.folded-away') || {}).id,
    }));
    check(folded.boxes > 0 && folded.hidden > 0,
          `fgcc: fold scopes folded ${folded.boxes} boxes hiding ${folded.hidden} nodes`);
    if (folded.hiddenEl) {
      const r = await page.evaluate((id) => {
        const view = window.NkiView.app.views.dataflow;
        const i = view.instrOfElement(document.getElementById(id));
        window.NkiView.app.model.select(i, 'search');
        return document.getElementById(id).classList.contains('folded-away');
      }, folded.hiddenEl);
      check(!r, 'fgcc: selecting a folded instruction left it hidden');
    }
    await page.click('#unfold-all');
    const left = await page.evaluate(() =>
      document.querySelectorAll('#picture-dataflow .folded-away, #picture-dataflow rect.fold').length);
    check(left === 0, `fgcc: unfold left ${left} elements folded`);
    check(errors.length === 0, `fgcc folding: ${errors.join(' | ')}`);
    await page.close();
  }
  // The barrier lanes: the tab shows the picture, a selection marks the
  // instruction in the lane of every rank drawn.
  {
    const { page, errors } = await open(browser, fgcc, '#select=' + fgcc.parsed.ids[3]);
    await page.click('#picture-tabs [data-view="barrier"]');
    const r = await page.evaluate(() => ({
      shown: !document.getElementById('picture-barrier').hidden &&
             !!document.querySelector('#picture-barrier svg'),
      marked: document.querySelectorAll('#picture-barrier g.node.selected').length,
    }));
    check(r.shown && r.marked >= 1, `fgcc barrier lanes: shown ${r.shown}, ${r.marked} marked`);
    check(errors.length === 0, `fgcc barrier: ${errors.join(' | ')}`);
    await page.close();
  }
  // Search by source line and by typing: the hits are the instructions
  // the graph puts at that line.
  {
    const line = mm.parsed.source(mm.parsed.ids[5]);
    const want = mm.parsed.ids.filter((id) => mm.parsed.source(id) === line);
    const { page, errors } = await open(browser, mm);
    await page.type('#search', line.split('/').pop());
    const hits = await page.evaluate(() =>
      [...document.querySelectorAll('#hits .hit')].map((h) =>
        window.NkiView.app.model.instrs[Number(h.dataset.i)][0]));
    check(JSON.stringify(hits) === JSON.stringify(want),
          `search ${line}: hits ${hits}, the graph has ${want} there`);
    await page.keyboard.press('Enter');
    const panel = await page.evaluate(() => document.getElementById('panel').dataset.instr);
    check(panel === String(want[0]), `search Enter opened ${panel}, not ${want[0]}`);
    check(errors.length === 0, `search: ${errors.join(' | ')}`);
    await page.close();
  }
  // #select=TENSOR selects its first writer: the dump's first file of
  // that tensor names it (<seq>_<tensor>_i<instr>.npy).
  {
    const files = fs.readdirSync(out('mm_dump')).sort();
    const first = files.map((f) => /^\d+_bias_col_i(\d+)\.npy$/.exec(f)).find(Boolean);
    const { page } = await open(browser, mm, '#select=bias_col');
    const panel = await page.evaluate(() => document.getElementById('panel').dataset.instr);
    check(first && panel === first[1], `#select=bias_col opened ${panel}, the dump says ${first && first[1]}`);
    await page.close();
  }
  // The paged picture: says so, and selecting the last instruction
  // (drawn on the last page) shows that page with its node marked.
  {
    const { page, errors } = await open(browser, big);
    const r = await page.evaluate(async () => {
      const app = window.NkiView.app, view = app.views.dataflow;
      const before = view.page;
      const pages = view.pageCount();
      app.model.select(app.model.count - 1, 'search');
      return { before, pages, after: view.page,
               note: document.getElementById('picture-note').textContent,
               pager: document.getElementById('pager').textContent,
               number: document.getElementById('page-number').value,
               marked: document.querySelectorAll('#picture-dataflow g.node.selected').length };
    });
    check(r.pages > 1 && r.pager.includes(`of ${r.pages}`) && r.number === String(r.pages),
          `${big.name}: ${r.pages} pages, the pager says "${r.pager}" at ${r.number}`);
    check(/pages rather than whole/.test(r.note), `${big.name}: the note says "${r.note}"`);
    check(r.before === 0 && r.after === r.pages - 1 && r.marked >= 1,
          `${big.name}: selecting the last instruction went from page ${r.before} to ${r.after} of ${r.pages}, ${r.marked} marked`);
    // "go to scope": the first instruction of layer1 (the graph's first
    // with that scope, by its text) is selected.
    const firstLayer1 = big.parsed.ids.find((id) => big.parsed.scope(id).split('/').includes('layer1'));
    const picked = await page.evaluate(() => {
      const select = document.getElementById('scope-jump');
      const option = [...select.options].find((o) => o.title.endsWith('/layer1'));
      return option ? option.value : null;
    });
    check(picked !== null, `${big.name}: no layer1 among the scopes to go to`);
    if (picked !== null) {
      await page.select('#scope-jump', picked);
      const panel = await page.evaluate(() => document.getElementById('panel').dataset.instr);
      check(panel === String(firstLayer1), `${big.name}: go to layer1 opened #${panel}, not #${firstLayer1}`);
    }
    await page.evaluate(() => window.NkiView.app.model.select(window.NkiView.app.model.count - 1, 'search'));
    // The pager's "previous" goes one page back.
    await page.click('#pager [data-step="-1"]');
    const back = await page.evaluate(() => window.NkiView.app.views.dataflow.page);
    check(back === r.pages - 2, `${big.name}: previous went to page ${back}`);
    check(errors.length === 0, `${big.name} paging: ${errors.join(' | ')}`);
    await page.close();
  }
  // No target, no dump: both parts say they are absent.
  {
    const { page, errors } = await open(browser, bare, '#select=3');
    const r = await page.evaluate(() => ({
      timeline: !!document.querySelector('#timeline [data-absent="Timeline"]'),
      values: !!document.querySelector('#panel [data-absent="Values"]'),
    }));
    check(r.timeline, 'bare: the timeline is not marked absent');
    check(r.values, 'bare: the values are not marked absent');
    check(errors.length === 0, `bare: ${errors.join(' | ')}`);
    await page.close();
  }
} finally {
  await browser.close();
}
console.log(`${passed} passed, ${failed} failed`);
process.exit(failed ? 1 : 0);
