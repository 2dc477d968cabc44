// Search by instruction id ("12", "#12"), opcode ("matmul"), tensor name
// ("rhs_tile"), source line ("attention.cc:42", ":42") or scope. Hits
// list below the box; Enter or a click selects one.
'use strict';

(function (NV) {
  const { I, O, T } = NV.fields;
  const MAX_SHOWN = 200;

  class Search {
    constructor(model, input, list) {
      this.model = model;
      this.input = input;
      this.list = list;
      this.hits = [];
      this.active = 0;
      input.addEventListener('input', () => this.update());
      input.addEventListener('focus', () => this.update());
      input.addEventListener('keydown', (e) => this.key(e));
      document.addEventListener('mousedown', (e) => {
        if (!e.target.closest('.search-box')) this.list.hidden = true;
      });
    }

    // The instruction indexes matching `query`, best first: an exact id,
    // then source lines, opcodes, tensors and scopes containing it.
    find(query) {
      const m = this.model, q = query.trim().toLowerCase();
      if (!q) return [];
      const out = [], seen = new Set();
      const add = (i) => { if (!seen.has(i)) { seen.add(i); out.push(i); } };
      const id = /^#?(\d+)$/.exec(q);
      if (id && m.byId.has(Number(id[1]))) add(m.byId.get(Number(id[1])));
      if (id && q.startsWith('#')) return out;
      const line = /^(.*):(\d+)$/.exec(q);
      for (let i = 0; i < m.count; ++i) {
        const ins = m.instrs[i];
        if (line) {
          if (String(ins[I.line]) === line[2] &&
              m.file(i).toLowerCase().includes(line[1])) add(i);
          continue;
        }
        if (ins[I.op].includes(q) || m.scope(i).toLowerCase().includes(q)) {
          add(i);
          continue;
        }
        for (const op of ins[I.operands]) {
          if (m.tensor(op[O.tensor])[T.name].toLowerCase().includes(q)) {
            add(i);
            break;
          }
        }
      }
      return out;
    }

    update() {
      this.hits = this.find(this.input.value);
      this.active = 0;
      const list = this.list;
      list.textContent = '';
      if (!this.input.value.trim()) {
        list.hidden = true;
        return;
      }
      list.hidden = false;
      list.append(NV.el('div', { class: 'count', id: 'hit-count' },
          `${this.hits.length} instruction${this.hits.length === 1 ? '' : 's'}` +
          (this.hits.length > MAX_SHOWN ? ` (first ${MAX_SHOWN} shown)` : '')));
      this.hits.slice(0, MAX_SHOWN).forEach((i, k) => {
        const m = this.model;
        const div = NV.el('div', { class: 'hit' + (k === 0 ? ' active' : ''),
                                   'data-i': i });
        div.textContent = `${m.label(i)}  ${m.source(i)}  ${m.scope(i)}`;
        div.addEventListener('mousedown', (e) => {
          e.preventDefault();
          this.pick(i);
        });
        list.append(div);
      });
    }

    key(e) {
      const rows = this.list.querySelectorAll('.hit');
      if (e.key === 'Enter' && this.hits.length) {
        this.pick(this.hits[this.active]);
      } else if ((e.key === 'ArrowDown' || e.key === 'ArrowUp') && rows.length) {
        e.preventDefault();
        rows[this.active].classList.remove('active');
        this.active = (this.active + (e.key === 'ArrowDown' ? 1 : rows.length - 1)) % rows.length;
        rows[this.active].classList.add('active');
        rows[this.active].scrollIntoView({ block: 'nearest' });
      } else if (e.key === 'Escape') {
        this.list.hidden = true;
      }
    }

    pick(i) {
      this.list.hidden = true;
      this.model.select(i, 'search');
    }
  }

  NV.Search = Search;
})(window.NkiView);
