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
      const kept = this.drawn.get(page);
      if (kept) {
        this.svg = kept.svg;
        this.folded = kept.folded;
        this.box.append(this.svg);
      } else if (!this.draw(this.pic.pages[page])) {
        return false;
      }
      this.fit();
      if (this.onPage) this.onPage(page);
      return true;
    }
    // Parses a page's SVG into the pane.
    draw(svgText) {
      if (!svgText) {
        NV.absent(this.box, this.name + ' picture',
                  this.pic.error || 'Graphviz could not lay it out');
        return false;
      }
      this.box.innerHTML = svgText;
      this.svg = this.box.querySelector('svg');
      this.svg.removeAttribute('width');
      this.svg.removeAttribute('height');
      const vb = this.svg.viewBox.baseVal;
      this.svg.setAttribute('width', vb.width);
      this.svg.setAttribute('height', vb.height);
      // Graphviz's hover tooltips are <a xlink:title> wrappers: keep the
      // text, drop any link so a click selects instead of navigating.
      for (const a of this.svg.querySelectorAll('a')) {
        a.removeAttributeNS('http://www.w3.org/1999/xlink', 'href');
      }
      return true;
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
      const w = this.box.clientWidth || 800, h = this.box.clientHeight || 400;
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
    // Pans so that node element `g` is in the middle of the pane, zoomed
    // in to at least readable size.
    centerOn(g) {
      const b = g.getBBox();
      const vb = this.svg.viewBox.baseVal;
      // The node's coordinates in the svg's own units (Graphviz puts a
      // translate on the top group).
      const m = g.getCTM(), root = this.svg.getCTM();
      let cx = b.x + b.width / 2, cy = b.y + b.height / 2;
      if (m && root) {
        const p = new DOMPoint(cx, cy).matrixTransform(root.inverse().multiply(m));
        cx = p.x; cy = p.y;
      }
      cx -= vb.x; cy -= vb.y;
      this.scale = Math.max(this.scale, 1);
      const w = this.box.clientWidth, h = this.box.clientHeight;
      this.x = w / 2 - cx * this.scale;
      this.y = h / 2 - cy * this.scale;
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
        if (this.model.selected >= 0) this.mark(this.model.selected, false);
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
    // Marks instruction i (switching to its page) with its producers and
    // consumers; `center`: pan to it.
    mark(i, center) {
      const page = this.pageOf(i);
      if (page >= 0 && page !== this.page) this.showPage(page);
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
