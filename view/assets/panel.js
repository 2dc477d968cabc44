// The instruction panel: what the selected instruction is, touches and
// costs, where it comes from in the kernel source, its producers and
// consumers, and the values it wrote (with a dump).
'use strict';

(function (NV) {
  const { I, O, T } = NV.fields;

  // Blue (low) to white to red (high) for the heat-map.
  function heatColor(v, lo, hi) {
    if (v === null) return '#000';
    const t = hi > lo ? (v - lo) / (hi - lo) : 0.5;
    const a = Math.round(255 * Math.min(1, 2 * t));
    const b = Math.round(255 * Math.min(1, 2 * (1 - t)));
    return t < 0.5 ? `rgb(${a},${a},255)` : `rgb(255,${b},${b})`;
  }

  class Panel {
    constructor(model, container) {
      this.model = model;
      this.box = container;
    }

    link(i) {
      const a = NV.el('a', { 'data-i': i }, this.model.label(i));
      a.addEventListener('click', () => this.model.select(i, 'panel'));
      return a;
    }
    row(table, name, value) {
      const tr = NV.el('tr');
      tr.append(NV.el('th', {}, name));
      const td = NV.el('td');
      if (value instanceof Node) td.append(value); else td.textContent = value;
      tr.append(td);
      table.append(tr);
      return td;
    }

    show(i) {
      const m = this.model, ins = m.instrs[i];
      const box = this.box;
      box.textContent = '';
      box.dataset.instr = ins[I.id];
      const h = NV.el('h2');
      const swatch = NV.el('span', { class: 'swatch' });
      swatch.style.background = NV.engineColor(ins[I.engine]);
      h.append(swatch, `#${ins[I.id]} ${ins[I.op]}`);
      box.append(h);

      const facts = NV.el('table', { class: 'facts' });
      this.row(facts, 'engine', ins[I.engine]);
      this.row(facts, 'core', `${ins[I.core]}, position ${ins[I.pos]}`);
      const src = this.row(facts, 'source', m.source(i) || '(no source line)');
      src.className = 'src';
      src.id = 'panel-source';
      if (m.scope(i)) this.row(facts, 'scope', m.scope(i)).className = 'mono';
      const slot = m.slot(i);
      if (slot) {
        this.row(facts, 'start', NV.ns(slot[0]));
        this.row(facts, 'duration', NV.ns(slot[1]));
        this.row(facts, 'lane', m.laneName(slot[2]));
        this.row(facts, 'critical path', m.critical.has(i) ? 'yes' : 'no');
      } else {
        this.row(facts, 'timing', 'absent (no schedule)');
      }
      const drawn = this.drawnAs(i);
      if (drawn) this.row(facts, 'drawn', drawn);
      box.append(facts);

      box.append(NV.el('h3', {}, 'operands'));
      const ops = NV.el('table', { class: 'operands mono' });
      for (const op of ins[I.operands]) {
        const t = m.tensor(op[O.tensor]);
        const tr = NV.el('tr');
        tr.append(NV.el('th', {}, `${op[O.role]} (${op[O.access]})`));
        const td = NV.el('td');
        const name = NV.el('a', { 'data-tensor': t[T.name] }, t[T.name]);
        name.title = 'select the instruction that writes it';
        name.addEventListener('click', () => {
          const w = m.writers.get(t[T.name]) || [];
          // The last writer before this instruction, else the first.
          const before = w.filter((k) => k < i);
          const k = before.length ? before[before.length - 1] : w[0];
          if (k !== undefined) m.select(k, 'panel');
        });
        td.append(name, ` ${t[T.space]} ${op[O.view] ? op[O.view] + ' view of ' : ''}` +
            `${t[T.dtype]}[${t[T.shape].join(', ')}]`, NV.el('br'),
            `access [${op[O.extent]}], ${op[O.bytes]}`);
        tr.append(td);
        ops.append(tr);
      }
      box.append(ops);

      if (ins[I.attrs].length) {
        box.append(NV.el('h3', {}, 'attributes'));
        const attrs = NV.el('table', { class: 'attrs mono' });
        for (const [k, v] of ins[I.attrs]) this.row(attrs, k, JSON.stringify(v));
        box.append(attrs);
      }

      for (const [title, list] of [['producers', m.producers[i]],
                                   ['consumers', m.consumers[i]]]) {
        box.append(NV.el('h3', {}, `${title} (${list.length})`));
        const div = NV.el('div', { class: title });
        list.slice(0, 50).forEach((k, n) => {
          if (n) div.append(', ');
          div.append(this.link(k));
        });
        if (list.length > 50) div.append(` and ${list.length - 50} more`);
        if (!list.length) div.append('none');
        box.append(div);
      }
      this.showValues(i);
    }

    // How the dataflow picture draws instruction i when not as a node of
    // its own: inside a collapsed group, which a narrower page opens.
    drawnAs(i) {
      const view = NV.app && NV.app.views && NV.app.views.dataflow;
      const nodes = view ? view.nodesOf.get(i) || [] : [];
      if (!nodes.length) return 'not in the dataflow picture (--scope, --core)';
      const span = view.pic.nodes[nodes[0]];
      const n = span[3] - span[2] + 1;
      if (n === 1) return '';
      const scope = this.model.scope(i);
      return `inside a collapsed group of ${n} instructions` +
          (scope ? `; its own picture: nkigraph view GRAPH --scope ${scope}` : '');
    }

    showValues(i) {
      const m = this.model, box = this.box;
      box.append(NV.el('h3', {}, 'values written'));
      const values = m.values(i);
      if (values === null) {
        const v = m.data.values || {};
        NV.absent(box.appendChild(NV.el('div', { class: 'values' })), 'Values',
                  v.absent || 'no dump');
        return;
      }
      const holder = NV.el('div', { class: 'values' });
      box.append(holder);
      if (!values.length) {
        holder.append('none dumped for this instruction');
        return;
      }
      for (const v of values) {
        const t = NV.el('table', { class: 'mono' });
        this.row(t, 'tensor', v.tensor);
        this.row(t, 'shape', `[${v.shape.join(', ')}] ${v.dtype}`);
        if (v.min !== undefined) {
          this.row(t, 'min / max', `${v.min.toPrecision(5)} / ${v.max.toPrecision(5)}`);
          this.row(t, 'mean', v.mean.toPrecision(5));
        }
        const bad = this.row(t, 'NaN / Inf', `${v.nan} / ${v.inf}`);
        if (v.nan || v.inf) bad.className = 'bad';
        this.row(t, 'file', v.file);
        holder.append(t);
        if (v.heat) holder.append(this.heatMap(v.heat));
      }
      const d = m.data.values;
      if (d.ranks > 1) {
        holder.append(NV.el('div', { class: 'hint' },
            `rank ${d.rank} of ${d.ranks} shown`));
      }
    }

    heatMap(heat) {
      const cell = Math.max(4, Math.floor(256 / Math.max(heat.rows, heat.cols)));
      let lo = Infinity, hi = -Infinity;
      for (const v of heat.cells) {
        if (v !== null) { lo = Math.min(lo, v); hi = Math.max(hi, v); }
      }
      const parts = [`<svg xmlns="http://www.w3.org/2000/svg" class="heat" width="${heat.cols * cell}" height="${heat.rows * cell}">`];
      heat.cells.forEach((v, k) => {
        const r = Math.floor(k / heat.cols), c = k % heat.cols;
        parts.push(`<rect x="${c * cell}" y="${r * cell}" width="${cell}" height="${cell}" fill="${heatColor(v, lo, hi)}"/>`);
      });
      parts.push('</svg>');
      const div = NV.el('div', { class: 'heatmap' });
      div.innerHTML = parts.join('');
      div.append(NV.el('div', { class: 'hint' },
          `last two dims [${heat.of.join(' x ')}] as ${heat.rows} x ${heat.cols} ` +
          `block means; blue ${lo.toPrecision(3)} to red ${hi.toPrecision(3)}`));
      return div;
    }
  }

  NV.Panel = Panel;
})(window.NkiView);
