// The cost model's timeline: one lane per engine and DMA queue of each
// core that has work, instructions as bars coloured by engine, the
// critical path marked by a line over its bars, a time axis. Ctrl+wheel
// zooms in time; the pane scrolls.
'use strict';

(function (NV) {
  const ROW = 16, HEAD = 22, LEFT = 110;
  // The pictures' engine colours (viz/style.cc), from the data.
  NV.engineColor = (engine) =>
      (NV.app && NV.app.model.data.engine_colors[engine]) || '#ccc';

  class TimelineView {
    constructor(model, container) {
      this.model = model;
      this.box = container;
      this.zoom = 1;
      this.marks = null;  // the group the selection's marks go in
      const s = model.data.schedule;
      if (!model.hasSchedule()) {
        NV.absent(container, 'Timeline', (s && s.absent) || 'no schedule');
        return;
      }
      // The lanes with work, in (core, lane) order.
      const used = new Set();
      for (const slot of s.slots) used.add(slot[2]);
      this.lanes = [...used].sort((a, b) => a - b);
      this.row = new Map(this.lanes.map((lane, k) => [lane, k]));
      this.box.addEventListener('wheel', (e) => {
        if (!e.ctrlKey) return;  // a plain wheel scrolls the pane
        e.preventDefault();
        const r = this.box.getBoundingClientRect();
        const at = (this.box.scrollLeft + e.clientX - r.left - LEFT) / this.width();
        this.zoom = Math.min(2000, Math.max(1, this.zoom * Math.exp(-e.deltaY * 0.002)));
        this.draw();
        this.box.scrollLeft = at * this.width() + LEFT - (e.clientX - r.left);
      }, { passive: false });
      NV.trackSize(this);
      this.box.addEventListener('scroll', () => this.keepNames(), { passive: true });
      this.box.addEventListener('click', (e) => {
        const bar = e.target.closest('rect.bar');
        if (bar) this.model.select(Number(bar.dataset.i), 'timeline');
      });
      this.draw();
    }

    width() {
      return Math.max(200, ((this.box.clientWidth || 900) - LEFT - 20) * this.zoom);
    }

    // x and width in pixels, and y, of instruction i's bar.
    geometry(i) {
      const s = this.model.data.schedule, slot = s.slots[i];
      const span = s.makespan > 0 ? s.makespan : 1, w = this.width();
      const raw = (slot[1] / span) * w;
      return { x: LEFT + (slot[0] / span) * w, raw, w: Math.max(1, raw),
               y: HEAD + this.row.get(slot[2]) * ROW + 2 };
    }

    // Builds the picture as one string: tens of thousands of bars stay
    // one parse, not one DOM call each. Bars under a pixel wide that
    // touch the one before them in their lane (same engine, neither on
    // the critical path) are drawn as one, which keeps a graph of 100,000
    // instructions a picture of a few thousand rectangles; the marks of
    // a selection are drawn over them, one per instruction.
    draw() {
      const m = this.model, s = m.data.schedule;
      const span = s.makespan > 0 ? s.makespan : 1;
      const w = this.width();
      const x = (ns) => LEFT + (ns / span) * w;
      const height = HEAD + this.lanes.length * ROW + 4;
      const parts = [];
      parts.push(`<svg xmlns="http://www.w3.org/2000/svg" width="${LEFT + w + 20}" height="${height}">`);
      // The lane names in a group kept at the pane's left edge as it
      // scrolls (drawn last, over the bars).
      const names = [`<g class="names"><rect class="names-bg" x="0" y="${HEAD}" width="${LEFT - 4}" height="${this.lanes.length * ROW}"/>`];
      this.lanes.forEach((lane, k) => {
        const y = HEAD + k * ROW;
        parts.push(`<rect class="lane-bg${k % 2 ? ' odd' : ''}" x="0" y="${y}" width="${LEFT + w + 20}" height="${ROW}"/>`);
        names.push(`<text class="lane-name" x="4" y="${y + 11}">${NV.escape(m.laneName(lane))}</text>`);
      });
      names.push('</g>');
      // Axis: about ten ticks at round times.
      const step = Math.pow(10, Math.floor(Math.log10(span / (8 * this.zoom))));
      const tick = [1, 2, 5].map((f) => f * step).find((t) => span / t <= 12 * this.zoom) || step * 10;
      for (let t = 0; t <= span; t += tick) {
        parts.push(`<line x1="${x(t)}" x2="${x(t)}" y1="${HEAD - 4}" y2="${height}" stroke="#e4e4e4"/>`);
        parts.push(`<text class="axis" x="${x(t) + 2}" y="${HEAD - 8}">${NV.ns(t)}</text>`);
      }
      const runs = new Map();  // lane -> the run being drawn
      const flush = (run) => {
        const title = run.n > 1 ? `${run.n} instructions from ${m.label(run.first)}`
                                : `${m.label(run.first)} ${NV.ns(s.slots[run.first][1])}`;
        const x0 = run.x0.toFixed(2), width = (run.x1 - run.x0).toFixed(2);
        parts.push(`<rect class="bar${run.crit ? ' crit' : ''}" data-i="${run.first}" data-n="${run.n}" x="${x0}" y="${run.y}" width="${width}" height="${ROW - 4}" fill="${NV.engineColor(run.engine)}"><title>${NV.escape(title)}</title></rect>`);
        // The critical path: a dark line over the bar's top edge.
        if (run.crit) parts.push(`<rect class="crit-line" x="${x0}" y="${run.y - 2}" width="${width}" height="2"/>`);
      };
      s.slots.forEach((slot, i) => {
        const g = this.geometry(i);
        const engine = m.instrs[i][NV.fields.I.engine];
        const crit = m.critical.has(i);
        const run = runs.get(slot[2]);
        if (run && !crit && !run.crit && g.raw < 1 && run.engine === engine &&
            g.x <= run.x1 + 0.5) {
          run.x1 = Math.max(run.x1, g.x + g.w);
          run.n++;
          return;
        }
        if (run) flush(run);
        runs.set(slot[2], { first: i, n: 1, x0: g.x, x1: g.x + g.w, y: g.y, engine, crit });
      });
      for (const run of runs.values()) flush(run);
      parts.push('<g class="marks"></g>', ...names, '</svg>');
      const head = `<div class="head">estimated for ${NV.escape(s.target)}: ` +
          `${NV.ns(s.makespan)}, critical path lined above ` +
          `(${m.critical.size} instructions); ctrl+wheel zooms</div>`;
      this.box.innerHTML = head + parts.join('');
      this.marks = this.box.querySelector('g.marks');
      this.names = this.box.querySelector('g.names');
      this.keepNames();
      if (m.selected >= 0) this.mark(m.selected, false);
    }

    keepNames() {
      if (this.names) {
        this.names.setAttribute('transform', `translate(${this.box.scrollLeft} 0)`);
      }
    }

    // Marks instruction i's bar, its producers' and its consumers'.
    mark(i, scroll) {
      if (!this.marks) return;
      const parts = [];
      const add = (k, cls) => {
        const g = this.geometry(k);
        parts.push(`<rect class="bar mark ${cls}" data-i="${k}" x="${g.x.toFixed(2)}" y="${g.y}" width="${Math.max(3, g.w).toFixed(2)}" height="${ROW - 4}" fill="none"/>`);
        return g;
      };
      for (const p of this.model.producers[i]) add(p, 'producer');
      for (const c of this.model.consumers[i]) add(c, 'consumer');
      const g = add(i, 'selected');
      this.marks.innerHTML = parts.join('');
      if (scroll) {
        const { w, h } = NV.paneSize(this);
        this.box.scrollTo({ left: Math.max(0, g.x - w / 2), top: Math.max(0, g.y - h / 2) });
      }
    }
  }

  NV.TimelineView = TimelineView;
})(window.NkiView);
