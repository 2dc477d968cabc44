// Reads what the browser tests compare the page with straight from a
// graph's text format (.pbtxt), independently of nkigraph: each
// instruction's id, source file:line and scope path, in stream order.
//
// The text format nkigraph writes puts each field on its own line,
// nested messages indented by two spaces; zero values are left out.
export function readPbtxt(text) {
  const files = [...text.matchAll(/^files: "((?:[^"\\]|\\.)*)"$/gm)].map((m) => m[1]);
  const scopes = [...text.matchAll(/^scopes: "((?:[^"\\]|\\.)*)"$/gm)].map((m) => m[1]);
  const instrs = [];
  // An instruction: "  instructions {" to its closing "  }".
  for (const m of text.matchAll(/^ {2}instructions \{\n([\s\S]*?)^ {2}\}$/gm)) {
    const field = (name) => {
      const f = new RegExp(`^ {4}${name}: (\\d+)$`, 'm').exec(m[1]);
      return f ? Number(f[1]) : 0;
    };
    instrs.push({ id: field('id'), file: field('file'), line: field('line'),
                  scope: field('scope') });
  }
  const byId = new Map(instrs.map((ins) => [ins.id, ins]));
  return {
    ids: instrs.map((ins) => ins.id),
    scope(id) {
      const ins = byId.get(id);
      return (ins && scopes[ins.scope]) || '';
    },
    source(id) {
      const ins = byId.get(id);
      return ins && files.length ? `${files[ins.file]}:${ins.line}` : '';
    },
  };
}
