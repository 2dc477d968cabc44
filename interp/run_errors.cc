// The errors a run stops with, each saying where it stopped (see
// run_errors.h).
#include "interp/run_errors.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "graph/describe.h"
#include "interp/interpreter.h"
#include "util/diagnostic.h"

namespace nkigraph::interp {

absl::Status DeviceError(const proto::Graph& graph, const ProgramState& p,
                         const proto::Instruction& instr,
                         const absl::Status& status) {
  const Diagnostic cause = DiagnosticOr(status, DiagnosticKind::kDevice);
  Diagnostic d =
      graph::InstructionDiagnostic(cause.kind, graph, instr, cause.message);
  d.tensor_id = cause.tensor_id;
  d.tensor = cause.tensor;
  if (graph.world().num_ranks() > 1) d.rank = p.rank();
  if (graph.world().num_cores() > 1) d.core = p.core();
  return DiagnosticError(kDeviceErrorCode, d);
}

absl::Status StepLimitError(const proto::Graph& graph, const ProgramState& p,
                            const proto::Instruction& instr, int64_t steps) {
  Diagnostic d = graph::InstructionDiagnostic(
      DiagnosticKind::kResource, graph, instr,
      absl::StrCat("the run stopped here, at its step limit of ", steps,
                   " instructions (--max-steps)"));
  if (graph.world().num_ranks() > 1) d.rank = p.rank();
  if (graph.world().num_cores() > 1) d.core = p.core();
  return DiagnosticError(absl::StatusCode::kResourceExhausted, d);
}

absl::Status DeadlockError(
    const proto::Graph& graph,
    const std::vector<std::unique_ptr<ProgramState>>& programs) {
  Diagnostic deadlock = MakeDiagnostic(
      DiagnosticKind::kDeadlock,
      "deadlock: no program can proceed (mismatched synchronisation):");
  for (const auto& program : programs) {
    const ProgramState& p = *program;
    Diagnostic note =
        MakeDiagnostic(DiagnosticKind::kDeadlock, "finished its stream");
    if (!p.done()) {
      note = graph::InstructionDiagnostic(DiagnosticKind::kDeadlock, graph,
                                          p.current(), "waits");
    }
    note.rank = p.rank();
    note.core = p.core();
    deadlock.notes.push_back(std::move(note));
    if (deadlock.notes.size() >= 64) {
      deadlock.notes.push_back(MakeDiagnostic(DiagnosticKind::kDeadlock, "…"));
      break;
    }
  }
  return DiagnosticError(kDeviceErrorCode, deadlock);
}

}  // namespace nkigraph::interp
