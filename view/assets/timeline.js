// The cost model's timeline: one lane per engine and DMA queue of each
// core that has work, instructions as bars coloured by engine, the
// critical path outlined, a time axis. Wheel zooms in time; the pane
// scrolls.
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
      this.bars = [];  // by instruction: its rect, once drawn
      this.marked = [];
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
      this.box.addEventListener('click', (e) => {
        const bar = e.target.closest('rect.bar');
        if (bar) this.model.select(Number(bar.dataset.i), 'timeline');
      });
      this.draw();
    }

    width() {
      return Math.max(200, ((this.box.clientWidth || 900) - LEFT - 20) * this.zoom);
    }

    // Builds the picture as one string: tens of thousands of bars stay
    // one parse, not one DOM call each.
    draw() {
      const m = this.model, s = m.data.schedule;
      const span = s.makespan > 0 ? s.makespan : 1;
      const w = this.width();
      const x = (ns) => LEFT + (ns / span) * w;
      const height = HEAD + this.lanes.length * ROW + 4;
      const parts = [];
      parts.push(`<svg xmlns="http://www.w3.org/2000/svg" width="${LEFT + w + 20}" height="${height}">`);
      this.lanes.forEach((lane, k) => {
        const y = HEAD + k * ROW;
        parts.push(`<rect class="lane-bg${k % 2 ? ' odd' : ''}" x="0" y="${y}" width="${LEFT + w + 20}" height="${ROW}"/>`);
        parts.push(`<text class="lane-name" x="4" y="${y + 11}">${NV.escape(m.laneName(lane))}</text>`);
      });
      // Axis: about ten ticks at round times.
      const step = Math.pow(10, Math.floor(Math.log10(span / (8 * this.zoom))));
      const tick = [1, 2, 5].map((f) => f * step).find((t) => span / t <= 12 * this.zoom) || step * 10;
      for (let t = 0; t <= span; t += tick) {
        parts.push(`<line x1="${x(t)}" x2="${x(t)}" y1="${HEAD - 4}" y2="${height}" stroke="#e4e4e4"/>`);
        parts.push(`<text class="axis" x="${x(t) + 2}" y="${HEAD - 8}">${NV.ns(t)}</text>`);
      }
      s.slots.forEach((slot, i) => {
        const row = this.row.get(slot[2]);
        const y = HEAD + row * ROW + 2;
        const bw = Math.max(1, (slot[1] / span) * w);
        const engine = m.instrs[i][NV.fields.I.engine];
        const crit = m.critical.has(i) ? ' crit' : '';
        parts.push(`<rect class="bar${crit}" data-i="${i}" x="${x(slot[0]).toFixed(2)}" y="${y}" width="${bw.toFixed(2)}" height="${ROW - 4}" fill="${NV.engineColor(engine)}"><title>${NV.escape(m.label(i))} ${NV.ns(slot[1])}</title></rect>`);
      });
      parts.push('</svg>');
      const head = `<div class="head">estimated for ${NV.escape(s.target)}: ` +
          `${NV.ns(s.makespan)}, critical path outlined ` +
          `(${m.critical.size} instructions); ctrl+wheel zooms</div>`;
      this.box.innerHTML = head + parts.join('');
      this.bars = [];
      for (const r of this.box.querySelectorAll('rect.bar')) this.bars[Number(r.dataset.i)] = r;
      this.marked = [];
      if (m.selected >= 0) this.mark(m.selected, false);
    }

    mark(i, scroll) {
      if (!this.bars.length) return;
      for (const [e, cls] of this.marked) e.classList.remove(cls);
      this.marked = [];
      const add = (k, cls) => {
        const e = this.bars[k];
        if (e) { e.classList.add(cls); this.marked.push([e, cls]); }
      };
      for (const p of this.model.producers[i]) add(p, 'producer');
      for (const c of this.model.consumers[i]) add(c, 'consumer');
      add(i, 'selected');
      const bar = this.bars[i];
      if (scroll && bar) {
        const bx = Number(bar.getAttribute('x')), by = Number(bar.getAttribute('y'));
        const { w, h } = NV.paneSize(this);
        const left = bx - w / 2;
        const top = by - h / 2;
        this.box.scrollTo({ left: Math.max(0, left), top: Math.max(0, top) });
      }
    }
  }

  NV.TimelineView = TimelineView;
})(window.NkiView);
