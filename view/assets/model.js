// The page's data (the JSON `nkigraph view` embeds) with the indexes the
// views need, and the selection every view follows.
'use strict';
window.NkiView = window.NkiView || {};

(function (NV) {
  // Fields of one instruction in data.instrs (view/graph_data.cc).
  const I = { id: 0, op: 1, engine: 2, core: 3, pos: 4, scope: 5, file: 6,
              line: 7, operands: 8, attrs: 9 };
  // Fields of one operand and one tensor.
  const O = { role: 0, tensor: 1, access: 2, extent: 3, bytes: 4, view: 5 };
  const T = { name: 0, space: 1, dtype: 2, shape: 3, address: 4, core: 5 };
  NV.fields = { I, O, T };

  class Model {
    constructor(data) {
      this.data = data;
      this.instrs = data.instrs;
      this.count = data.instrs.length;
      this.byId = new Map();
      this.streams = [];  // by core: instruction indexes in program order
      this.instrs.forEach((ins, i) => {
        this.byId.set(ins[I.id], i);
        const core = ins[I.core];
        (this.streams[core] = this.streams[core] || [])[ins[I.pos]] = i;
      });
      this.producers = data.producers;
      this.consumers = this.instrs.map(() => []);
      this.producers.forEach((from, to) => {
        for (const p of from) this.consumers[p].push(to);
      });
      // Tensor name -> the instructions writing it, in program order.
      this.writers = new Map();
      this.instrs.forEach((ins, i) => {
        for (const op of ins[I.operands]) {
          if (!op[O.access].includes('w')) continue;
          const name = data.tensors[op[O.tensor] - 1][T.name];
          if (!this.writers.has(name)) this.writers.set(name, []);
          this.writers.get(name).push(i);
        }
      });
      this.critical = new Set(
          data.schedule && data.schedule.critical ? data.schedule.critical : []);
      this.listeners = [];
      this.selected = -1;
    }

    tensor(id) { return this.data.tensors[id - 1]; }
    file(i) {
      const f = this.instrs[i][I.file];
      return f < this.data.files.length ? this.data.files[f] : '';
    }
    // "kernels/foo.cc:42", or "" when the graph has no source table.
    source(i) {
      const file = this.file(i);
      return file ? file + ':' + this.instrs[i][I.line] : '';
    }
    scope(i) { return this.data.scopes[this.instrs[i][I.scope]] || ''; }
    label(i) {
      const ins = this.instrs[i];
      return '#' + ins[I.id] + ' ' + ins[I.op];
    }
    hasSchedule() { return !!(this.data.schedule && this.data.schedule.slots); }
    slot(i) { return this.hasSchedule() ? this.data.schedule.slots[i] : null; }
    laneName(lane) {
      const s = this.data.schedule;
      const core = Math.floor(lane / s.lanes_per_core);
      return 'core ' + core + ' ' + s.lane_names[lane % s.lanes_per_core];
    }
    values(i) {
      const v = this.data.values;
      return v && v.by_instr ? v.by_instr[String(i)] || [] : null;
    }

    // An instruction index from what a user types or links: an id
    // ("12", "#12") or a tensor name (its first writer); -1 if none.
    resolve(text) {
      text = String(text).trim();
      const id = /^#?(\d+)$/.exec(text);
      if (id && this.byId.has(Number(id[1]))) return this.byId.get(Number(id[1]));
      const writers = this.writers.get(text);
      return writers ? writers[0] : -1;
    }

    // Selection: every view listens; `source` names the view that asked
    // so it need not scroll to what the user just clicked.
    onSelect(listener) { this.listeners.push(listener); }
    select(i, source) {
      if (i < 0 || i >= this.count) return;
      this.selected = i;
      for (const listener of this.listeners) listener(i, source);
    }
  }

  NV.Model = Model;

  // Shared helpers.
  NV.el = function (tag, attrs, text) {
    const e = document.createElement(tag);
    for (const k in attrs || {}) e.setAttribute(k, attrs[k]);
    if (text !== undefined) e.textContent = text;
    return e;
  };
  NV.escape = function (text) {
    return String(text).replace(/[&<>"']/g, (c) => ({
      '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c]);
  };
  NV.ns = function (ns) {
    if (ns >= 1e6) return (ns / 1e6).toFixed(3) + ' ms';
    if (ns >= 1e3) return (ns / 1e3).toFixed(3) + ' µs';
    return ns.toFixed(1) + ' ns';
  };
  // A pane's size, kept up to date by a ResizeObserver: reading
  // clientWidth after a change lays the whole page out there and then.
  NV.trackSize = function (view) {
    view.size = null;
    new ResizeObserver((entries) => {
      const r = entries[entries.length - 1].contentRect;
      view.size = { w: r.width, h: r.height };
    }).observe(view.box);
  };
  NV.paneSize = function (view) {
    if (view.size && view.size.w > 0) return view.size;
    return { w: view.box.clientWidth || 800, h: view.box.clientHeight || 400 };
  };
  NV.absent = function (container, what, why) {
    container.textContent = '';
    const div = NV.el('div', { class: 'absent', 'data-absent': what });
    div.append(NV.el('b', {}, what + ' absent: '), why);
    container.append(div);
  };
})(window.NkiView);
