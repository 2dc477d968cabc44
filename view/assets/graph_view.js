// One picture (dataflow or barrier lanes): Graphviz's SVG, one page at a
// time, with pan and zoom, scope boxes that fold, and the links between
// its nodes and the instructions they stand for.
'use strict';

(function (NV) {
  const SVGNS = 'http://www.w3.org/2000/svg';

  class PictureView {
    // `pic`: {pages: [svg], nodes: [[page, core, first, last] | null],
    // note, error}; `prefix`: the SVG id prefix of its nodes.
    constructor(model, pic, container, prefix, name) {
      this.model = model;
      this.pic = pic;
      this.box = container;
      this.prefix = prefix;
      this.name = name;
      this.page = -1;
      this.svg = null;
      this.scale = 1;
      this.x = 0;
      this.y = 0;
      this.marked = [];
      this.folded = new Set();  // ids of the clusters folded on this page
      // Pages drawn before, kept parsed: going back is not parsed again.
      this.drawn = new Map();  // page -> {svg, folded}
      // Instruction -> its nodes (a collapsed group stands for many).
      this.nodesOf = new Map();
      pic.nodes.forEach((span, n) => {
        if (!span) return;
        const stream = model.streams[span[1]] || [];
        for (let p = span[2]; p <= span[3]; ++p) {
          const i = stream[p];
          if (i === undefined) continue;
          if (!this.nodesOf.has(i)) this.nodesOf.set(i, []);
          this.nodesOf.get(i).push(n);
        }
      });
      this.installPanZoom();
      NV.trackSize(this);
    }

    pageCount() { return this.pic.pages.length; }

    // Shows page `page` (0-based); returns false when it cannot be drawn.
    showPage(page) {
      if (page === this.page && this.svg) return true;
      if (this.svg) this.drawn.set(this.page, { svg: this.svg, folded: this.folded });
      this.page = page;
      this.clearMarks();
      this.box.textContent = '';
      this.svg = null;
      this.folded = new Set();
      const kept = this.drawn.get(page) || this.parse(page);
      if (!kept) {
        NV.absent(this.box, this.name + ' picture',
                  this.pic.error || 'Graphviz could not lay it out');
        return false;
      }
      this.svg = kept.svg;
      this.folded = kept.folded;
      this.box.append(this.svg);
      this.fit();
      if (this.onPage) this.onPage(page);
      return true;
    }
    // Parses page `page`'s SVG, detached; null when it has none.
    parse(page) {
      const text = this.pic.pages[page];
      if (!text) return null;
      const holder = document.createElement('div');
      holder.innerHTML = text;
      const svg = holder.querySelector('svg');
      svg.removeAttribute('width');
      svg.removeAttribute('height');
      const vb = svg.viewBox.baseVal;
      svg.setAttribute('width', vb.width);
      svg.setAttribute('height', vb.height);
      // Graphviz's hover tooltips are <a xlink:title> wrappers: keep the
      // text, drop any link so a click selects instead of navigating.
      for (const a of svg.querySelectorAll('a')) {
        a.removeAttributeNS('http://www.w3.org/1999/xlink', 'href');
      }
      const kept = { svg, folded: new Set() };
      this.drawn.set(page, kept);
      return kept;
    }
    // Parses the pages not seen yet, one per idle moment, so that moving
    // to one later does not parse it then.
    parseWhenIdle() {
      const idle = window.requestIdleCallback ||
          ((f) => setTimeout(() => f({ timeRemaining: () => 10 }), 50));
      let next = 0;
      const step = (deadline) => {
        while (next < this.pageCount() && deadline.timeRemaining() > 5) {
          if (!this.drawn.has(next) && next !== this.page) this.parse(next);
          ++next;
        }
        if (next < this.pageCount()) idle(step);
      };
      idle(step);
    }

    // --- pan and zoom (a CSS transform on the svg) ---
    apply() {
      if (this.svg) {
        this.svg.style.transform =
            `translate(${this.x}px, ${this.y}px) scale(${this.scale})`;
      }
    }
    fit() {
      if (!this.svg) return;
      const vb = this.svg.viewBox.baseVal;
      const { w, h } = NV.paneSize(this);
      this.scale = Math.min(w / vb.width, h / vb.height, 1.5);
      this.x = (w - vb.width * this.scale) / 2;
      this.y = Math.max(0, (h - vb.height * this.scale) / 2);
      this.apply();
    }
    installPanZoom() {
      let drag = null;
      this.box.addEventListener('mousedown', (e) => {
        if (e.button !== 0) return;
        drag = { x: e.clientX, y: e.clientY, x0: this.x, y0: this.y, moved: false };
      });
      window.addEventListener('mousemove', (e) => {
        if (!drag) return;
        const dx = e.clientX - drag.x, dy = e.clientY - drag.y;
        if (Math.abs(dx) + Math.abs(dy) > 3) {
          drag.moved = true;
          this.box.classList.add('dragging');
        }
        this.x = drag.x0 + dx;
        this.y = drag.y0 + dy;
        if (drag.moved) this.apply();
      });
      window.addEventListener('mouseup', () => {
        this.dragged = drag && drag.moved;
        drag = null;
        this.box.classList.remove('dragging');
      });
      this.box.addEventListener('wheel', (e) => {
        if (!this.svg) return;
        e.preventDefault();
        const r = this.box.getBoundingClientRect();
        const mx = e.clientX - r.left, my = e.clientY - r.top;
        const k = Math.exp(-e.deltaY * 0.0015);
        const s = Math.min(8, Math.max(0.02, this.scale * k));
        this.x = mx - (mx - this.x) * (s / this.scale);
        this.y = my - (my - this.y) * (s / this.scale);
        this.scale = s;
        this.apply();
      }, { passive: false });
      this.box.addEventListener('click', (e) => this.onClick(e));
    }
    // The centre of node element `g` in the svg's viewBox units, read from
    // its shape's attributes: asking the browser (getBBox) would lay out
    // the whole picture there and then, a tenth of a second on a big page.
    nodeCenter(g) {
      const shape = g.querySelector('ellipse, polygon, path');
      if (!shape) return null;
      let x, y;
      if (shape.tagName === 'ellipse') {
        x = Number(shape.getAttribute('cx'));
        y = Number(shape.getAttribute('cy'));
      } else {
        const v = (shape.getAttribute('points') || shape.getAttribute('d') || '')
            .match(/-?[\d.]+/g);
        if (!v || v.length < 2) return null;
        let x0 = Infinity, x1 = -Infinity, y0 = Infinity, y1 = -Infinity;
        for (let k = 0; k + 1 < v.length; k += 2) {
          x0 = Math.min(x0, +v[k]); x1 = Math.max(x1, +v[k]);
          y0 = Math.min(y0, +v[k + 1]); y1 = Math.max(y1, +v[k + 1]);
        }
        x = (x0 + x1) / 2;
        y = (y0 + y1) / 2;
      }
      // Graphviz translates its top group to put y = 0 at the bottom.
      const top = this.svg.querySelector('g');
      const t = /translate\((-?[\d.]+)[ ,]+(-?[\d.]+)\)/.exec(
          (top && top.getAttribute('transform')) || '');
      return t ? { x: x + Number(t[1]), y: y + Number(t[2]) } : { x, y };
    }
    // Pans so that node element `g` is in the middle of the pane, zoomed
    // in to at least readable size.
    centerOn(g) {
      const c = this.nodeCenter(g);
      if (!c) return;
      const vb = this.svg.viewBox.baseVal;
      this.scale = Math.max(this.scale, 1);
      const { w, h } = NV.paneSize(this);
      this.x = w / 2 - (c.x - vb.x) * this.scale;
      this.y = h / 2 - (c.y - vb.y) * this.scale;
      this.apply();
    }

    // --- selection ---
    nodeElement(n) {
      return this.svg ? this.svg.getElementById(this.prefix + n) : null;
    }
    // The instruction a node element stands for: itself, or the first of
    // a collapsed group.
    instrOfElement(g) {
      const n = Number(g.id.slice(this.prefix.length));
      const span = this.pic.nodes[n];
      if (!span || !g.id.startsWith(this.prefix)) return -1;
      const stream = this.model.streams[span[1]] || [];
      return stream[span[2]] !== undefined ? stream[span[2]] : -1;
    }
    onClick(e) {
      if (this.dragged) return;
      // A scope box's name (or a folded box) toggles the box.
      const fold = e.target.closest('.fold, .fold-label') ||
          (e.target.tagName === 'text' && e.target.closest('g.cluster'));
      if (fold) return this.toggleFold(fold.closest('g.cluster'));
      const g = e.target.closest('g.node');
      if (!g) return;
      const title = g.querySelector('title');
      const stub = title && /^page_(before|after)$/.exec(title.textContent);
      if (stub) {
        this.showPage(this.page + (stub[1] === 'before' ? -1 : 1));
        if (this.model.selected >= 0) this.mark(this.model.selected, false, true);
        return;
      }
      const i = this.instrOfElement(g);
      if (i >= 0) this.model.select(i, this.name);
    }
    clearMarks() {
      for (const [e, cls] of this.marked) e.classList.remove(cls);
      this.marked = [];
    }
    markNodes(i, cls) {
      const out = [];
      for (const n of this.nodesOf.get(i) || []) {
        const e = this.nodeElement(n);
        if (e) {
          e.classList.add(cls);
          this.marked.push([e, cls]);
          out.push(e);
        }
      }
      return out;
    }
    // The page holding instruction i's first node, or -1.
    pageOf(i) {
      const nodes = this.nodesOf.get(i);
      return nodes && nodes.length ? this.pic.nodes[nodes[0]][0] : -1;
    }
    // Marks instruction i with its producers and consumers, switching to
    // its page unless `stay`; `center`: pan to it.
    mark(i, center, stay) {
      const page = this.pageOf(i);
      if (!stay && page >= 0 && page !== this.page) this.showPage(page);
      this.clearMarks();
      if (!this.svg) return;
      for (const p of this.model.producers[i]) this.markNodes(p, 'producer');
      for (const c of this.model.consumers[i]) this.markNodes(c, 'consumer');
      const own = this.markNodes(i, 'selected');
      if (own.length) this.unfoldAround(own[0]);
      if (center && own.length && this.box.offsetParent !== null) {
        this.centerOn(own[0]);
      }
    }

    // --- folding scope boxes ---
    clusterBox(cluster) {
      const shape = cluster.querySelector('polygon, path');
      return shape ? shape.getBBox() : null;
    }
    // A box's name (Graphviz wraps a box with a tooltip in a link group,
    // so it is not always a direct child).
    static label(cluster) { return cluster.querySelector('text'); }
    static isLane(cluster) {
      const label = PictureView.label(cluster);
      return !label || /^(core|rank|lane) /.test(label.textContent) ||
          /^cluster_(core|lane)/.test(cluster.querySelector('title').textContent);
    }
    static inside(a, b) {
      return a.x >= b.x - 0.5 && a.y >= b.y - 0.5 &&
             a.x + a.width <= b.x + b.width + 0.5 &&
             a.y + a.height <= b.y + b.height + 0.5;
    }
    toggleFold(cluster) {
      if (!cluster) return;
      const key = cluster.id;
      if (this.folded.has(key)) this.unfold(cluster); else this.fold(cluster);
    }
    fold(cluster) {
      const box = this.clusterBox(cluster);
      if (!box || this.folded.has(cluster.id)) return;
      this.folded.add(cluster.id);
      const hidden = new Set();
      let count = 0;
      for (const g of this.svg.querySelectorAll('g.node')) {
        if (!PictureView.inside(g.getBBox(), box)) continue;
        g.classList.add('folded-away');
        hidden.add(g.querySelector('title').textContent);
        const span = this.pic.nodes[Number(g.id.slice(this.prefix.length))];
        if (span && g.id.startsWith(this.prefix)) count += span[3] - span[2] + 1;
      }
      for (const e of this.svg.querySelectorAll('g.edge')) {
        const ends = e.querySelector('title').textContent.split('->');
        if (ends.length === 2 && hidden.has(ends[0]) && hidden.has(ends[1])) {
          e.classList.add('folded-away');
        }
      }
      for (const c of this.svg.querySelectorAll('g.cluster')) {
        if (c !== cluster && PictureView.inside(this.clusterBox(c) || box, box)) {
          c.classList.add('folded-away');
        }
      }
      const rect = document.createElementNS(SVGNS, 'rect');
      rect.setAttribute('class', 'fold');
      for (const k of ['x', 'y', 'width', 'height']) rect.setAttribute(k, box[k]);
      const text = document.createElementNS(SVGNS, 'text');
      text.setAttribute('class', 'fold-label');
      text.setAttribute('x', box.x + 6);
      text.setAttribute('y', box.y + Math.min(box.height - 4, 28));
      const title = PictureView.label(cluster);
      text.textContent = (title ? title.textContent : 'scope') + ': ' + count +
          ' instructions folded (click to unfold)';
      cluster.append(rect, text);
    }
    unfold(cluster) {
      if (!this.folded.delete(cluster.id)) return;
      for (const e of cluster.querySelectorAll('.fold, .fold-label')) e.remove();
      // Show again what no other folded box still covers.
      const boxes = [...this.folded].map((id) =>
          this.clusterBox(this.svg.getElementById(id)));
      const covered = (b) => boxes.some((f) => f && PictureView.inside(b, f));
      for (const g of this.svg.querySelectorAll('.folded-away')) {
        const b = g.classList.contains('cluster') ? this.clusterBox(g) : g.getBBox();
        if (!b || !covered(b)) g.classList.remove('folded-away');
      }
    }
    // Unfolds the boxes hiding node element `g` (a selection shows).
    unfoldAround(g) {
      if (!this.folded.size || !g.classList.contains('folded-away')) return;
      const b = g.getBBox();
      for (const id of [...this.folded]) {
        const c = this.svg.getElementById(id);
        const box = c && this.clusterBox(c);
        if (box && PictureView.inside(b, box)) this.unfold(c);
      }
    }
    // Folds the outermost scope boxes (those not inside another).
    foldAll() {
      if (!this.svg) return;
      const clusters = [...this.svg.querySelectorAll('g.cluster')];
      const boxes = clusters.map((c) => this.clusterBox(c));
      clusters.forEach((c, k) => {
        // Lane (core) boxes stay open: only scope boxes fold.
        if (PictureView.isLane(c)) return;
        const inner = boxes.some((b, j) => j !== k && b && boxes[k] &&
            PictureView.inside(boxes[k], b) && !PictureView.inside(b, boxes[k]) &&
            !PictureView.isLane(clusters[j]));
        if (!inner) this.fold(c);
      });
    }
    unfoldAll() {
      for (const id of [...this.folded]) this.unfold(this.svg.getElementById(id));
    }
  }

  NV.PictureView = PictureView;
})(window.NkiView);
