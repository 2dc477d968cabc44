#include "graph/describe.h"

#include <string>
#include <utility>

#include "ops/op_def.h"

namespace nkigraph::graph {

Diagnostic InstructionDiagnostic(DiagnosticKind kind, const proto::Graph& graph,
                                 const proto::Instruction& instr,
                                 std::string message) {
  Diagnostic d;
  d.kind = kind;
  d.instruction_id = instr.id();
  if (const ops::OpDef* def = ops::FindOp(instr.opcode()); def != nullptr) {
    d.opcode = std::string(def->name);
  }
  if (instr.file() < static_cast<uint32_t>(graph.files_size())) {
    d.file = graph.files(instr.file());
    d.line = static_cast<int>(instr.line());
  }
  if (instr.scope() > 0 &&
      instr.scope() < static_cast<uint32_t>(graph.scopes_size())) {
    d.scope = graph.scopes(instr.scope());
  }
  d.message = std::move(message);
  return d;
}

}  // namespace nkigraph::graph
