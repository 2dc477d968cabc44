// Starts the page: reads the embedded data, builds the views, links them
// through the model's selection and the URL fragment (#select=ID or
// #select=TENSOR).
'use strict';

(function (NV) {
  function summary(m) {
    const d = m.data;
    const parts = [`${m.count} instructions`, `${d.cores} core${d.cores > 1 ? 's' : ''}`];
    if (d.ranks > 1) parts.push(`${d.ranks} ranks`);
    if (m.hasSchedule()) parts.push(`estimated ${NV.ns(d.schedule.makespan)} on ${d.schedule.target}`);
    return parts.join(', ');
  }

  function start() {
    const t0 = performance.now();
    const data = JSON.parse(document.getElementById('nkiview-data').textContent);
    const m = new NV.Model(data);
    const app = { model: m, views: {} };
    NV.app = app;
    document.getElementById('kernel').textContent = data.kernel;
    document.getElementById('summary').textContent = summary(m);

    const note = document.getElementById('picture-note');
    const pager = document.getElementById('pager');
    for (const [name, prefix] of [['dataflow', 'df'], ['barrier', 'bl']]) {
      const box = document.getElementById('picture-' + name);
      const view = new NV.PictureView(m, data[name], box, prefix, name);
      view.onPage = () => { if (app.current === view) showPager(view); };
      app.views[name] = view;
    }

    // The pager of a picture too wide for a screen: previous, the page's
    // number (type another), next.
    function showPager(view) {
      pager.textContent = '';
      const n = view.pageCount();
      note.hidden = !view.pic.note && !view.pic.error;
      note.textContent = [view.pic.note, view.pic.error].filter(Boolean).join(' ');
      if (n <= 1) return;
      const go = (p) => {
        if (p < 0 || p >= n || p === view.page) return;
        view.showPage(p);
        if (m.selected >= 0) view.mark(m.selected, false, true);
      };
      const prev = NV.el('button', { type: 'button', 'data-step': '-1', title: 'previous page' }, '‹');
      const next = NV.el('button', { type: 'button', 'data-step': '1', title: 'next page' }, '›');
      const number = NV.el('input', { type: 'number', min: 1, max: n, id: 'page-number',
                                      'aria-label': 'page' });
      number.value = view.page + 1;
      prev.disabled = view.page === 0;
      next.disabled = view.page === n - 1;
      prev.addEventListener('click', () => go(view.page - 1));
      next.addEventListener('click', () => go(view.page + 1));
      number.addEventListener('change', () => go(Number(number.value) - 1));
      pager.append(prev, ' page ', number, ` of ${n} `, next);
    }

    // Scopes to go to: each scope path (up to three levels deep) where it
    // first starts, in program order: a way into a picture of many pages.
    function fillScopes() {
      const select = document.getElementById('scope-jump');
      const seen = new Map();
      for (let core = 0; core < m.streams.length; ++core) {
        for (const i of m.streams[core] || []) {
          const parts = m.scope(i).split('/').filter(Boolean);
          for (let d = 1; d <= Math.min(3, parts.length); ++d) {
            const path = parts.slice(0, d).join('/');
            if (!seen.has(path)) seen.set(path, i);
          }
        }
      }
      for (const [path, i] of seen) {
        const depth = path.split('/').length - 1;
        const label = '\u00a0\u00a0'.repeat(depth) + path.split('/').pop() +
            ` (#${m.instrs[i][NV.fields.I.id]})`;
        select.append(NV.el('option', { value: i, title: path }, label));
      }
      select.hidden = seen.size === 0;
      select.addEventListener('change', () => {
        if (select.value !== '') m.select(Number(select.value), 'scopes');
        select.value = '';
      });
    }
    fillScopes();

    function showView(name) {
      for (const b of document.querySelectorAll('#picture-tabs [data-view]')) {
        b.classList.toggle('on', b.dataset.view === name);
      }
      for (const [other, view] of Object.entries(app.views)) {
        view.box.hidden = other !== name;
      }
      const view = app.views[name];
      app.current = view;
      if (view.page < 0) view.showPage(0); else view.fit();
      if (m.selected >= 0) view.mark(m.selected, true);
      showPager(view);
    }
    for (const b of document.querySelectorAll('#picture-tabs [data-view]')) {
      b.addEventListener('click', () => showView(b.dataset.view));
    }
    document.getElementById('fold-all').addEventListener('click', () => app.current.foldAll());
    document.getElementById('unfold-all').addEventListener('click', () => app.current.unfoldAll());
    document.getElementById('fit').addEventListener('click', () => app.current.fit());

    app.timeline = new NV.TimelineView(m, document.getElementById('timeline'));
    app.panel = new NV.Panel(m, document.getElementById('panel'));
    app.search = new NV.Search(m, document.getElementById('search'),
                               document.getElementById('hits'));
    showView('dataflow');

    m.onSelect((i, source) => {
      const t = performance.now();
      app.panel.show(i);
      for (const view of Object.values(app.views)) {
        // The hidden picture marks when it is shown.
        if (view === app.current) view.mark(i, source !== view.name);
      }
      app.timeline.mark(i, source !== 'timeline');
      const hash = '#select=' + m.instrs[i][NV.fields.I.id];
      if (location.hash !== hash) history.replaceState(null, '', hash);
      app.lastSelectMs = performance.now() - t;
    });

    function fromHash() {
      const match = /^#select=(.+)$/.exec(location.hash);
      if (!match) return;
      const text = decodeURIComponent(match[1]);
      const i = m.resolve(text);
      if (i >= 0) {
        m.select(i, 'url');
        return;
      }
      note.hidden = false;
      note.textContent = `#select=${text}: no instruction with that id, ` +
          'and no tensor of that name is written';
    }
    window.addEventListener('hashchange', fromHash);
    window.addEventListener('resize', () => app.current.fit());
    fromHash();
    for (const view of Object.values(app.views)) view.parseWhenIdle();
    app.startMs = performance.now() - t0;
    document.body.dataset.ready = 'true';
  }

  if (document.readyState === 'loading') {
    document.addEventListener('DOMContentLoaded', start);
  } else {
    start();
  }
})(window.NkiView);
