// Running the programs: each runs until it reaches a synchronising
// instruction, then groups whose participants have all arrived execute
// together; when nothing can move, a deadlock report.
#include <algorithm>
#include <string>
#include <vector>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "graph/describe.h"
#include "interp/interpreter.h"
#include "interp/interpreter_impl.h"
#include "interp/program_state.h"
#include "ops/op_def.h"
#include "ops/sync_rule.h"
#include "util/status_macros.h"

namespace nkigraph::interp {
namespace {

// Wraps an error from executing an instruction with where it happened,
// keeping what the error itself says it is (a race, the tensor, ...).
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

// The run has taken its --max-steps instructions; `instr`, program p's
// next, is where it stopped.
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

}  // namespace

absl::Status Interpreter::Run() {
  if (std::vector<std::string> missing = MissingInputs(); !missing.empty()) {
    Diagnostic d = MakeDiagnostic(
        DiagnosticKind::kInput,
        absl::StrCat("input", missing.size() > 1 ? "s " : " ",
                     absl::StrJoin(missing, ", "), " not given"));
    if (missing.size() == 1) d.tensor = missing[0];
    return DiagnosticError(absl::StatusCode::kInvalidArgument, d);
  }
  Impl& impl = *impl_;
  const proto::Graph& g = graph_;
  const int64_t max_steps = options_.max_steps;
  auto over_step_limit = [&] {
    return max_steps > 0 && instructions_executed_ >= max_steps;
  };

  auto notify_writes = [&](ProgramState& p, const proto::Instruction& instr) {
    if (!options_.on_write) return;
    const ops::InstrView& view = p.view();
    absl::flat_hash_set<uint32_t> seen;
    for (int i = 0; i < view.num_operands(); ++i) {
      const ops::OperandInfo& op = view.operand(i);
      if (!op.present() ||
          ops::OperandRoleOf(view.def(), i)->access == ops::Access::kRead) {
        continue;
      }
      if (!seen.insert(op.tensor->id()).second) continue;
      options_.on_write(
          RunOptions::WriteEvent{p.rank(), p.core(), &instr, op.tensor});
    }
  };

  // Runs a program until it finishes or reaches a synchronising
  // instruction.
  auto run_until_sync = [&](ProgramState& p, bool* progressed) -> absl::Status {
    while (!p.done()) {
      const proto::Instruction& instr = p.current();
      const ops::OpDef* def = ops::FindOp(instr.opcode());
      if (def->sync != ops::SyncKind::kNone) return absl::OkStatus();
      if (over_step_limit()) return StepLimitError(g, p, instr, max_steps);
      NKI_RETURN_IF_ERROR(p.Bind(instr));
      if (absl::Status s = def->execute(p); !s.ok()) {
        return DeviceError(g, p, instr, s);
      }
      notify_writes(p, instr);
      p.Advance();
      ++instructions_executed_;
      *progressed = true;
    }
    return absl::OkStatus();
  };

  // The programs a waiting program synchronises with, in the order the op
  // expects them (ops/sync_rule.h); false until all of them have arrived.
  ops::SyncGroup sync_group;
  auto match = [&](ProgramState& p, std::vector<ProgramState*>* group) {
    auto waiting_at = [&](ops::ProgramId q) -> const proto::Instruction* {
      if (q.rank < 0 || q.rank >= impl.num_ranks || q.core < 0 ||
          q.core >= impl.num_cores) {
        return nullptr;
      }
      ProgramState& state = impl.program(q.rank, q.core);
      return state.done() ? nullptr : &state.current();
    };
    // Not ready: a deadlock unless others move.
    if (!ops::SyncGroupReady(g.world(), {p.rank(), p.core()}, p.current(),
                             waiting_at, &sync_group)) {
      return false;
    }
    group->clear();
    for (const ops::ProgramId& member : sync_group.members) {
      group->push_back(&impl.program(member.rank, member.core));
    }
    return true;
  };

  std::vector<ProgramState*> group;
  std::vector<ops::ExecContext*> contexts;
  while (true) {
    bool progressed = false;
    for (auto& program : impl.programs) {
      NKI_RETURN_IF_ERROR(run_until_sync(*program, &progressed));
    }
    for (auto& program : impl.programs) {
      ProgramState& p = *program;
      if (p.done()) continue;
      if (!match(p, &group)) continue;
      const proto::Instruction& instr = p.current();
      if (max_steps > 0 &&
          instructions_executed_ + static_cast<int64_t>(group.size()) >
              max_steps) {
        return StepLimitError(g, p, instr, max_steps);
      }
      const ops::OpDef* def = ops::FindOp(instr.opcode());
      contexts.clear();
      for (ProgramState* q : group) {
        NKI_RETURN_IF_ERROR(q->Bind(q->current()));
        contexts.push_back(q);
      }
      if (absl::Status s = def->execute_group(contexts); !s.ok()) {
        return DeviceError(g, p, instr, s);
      }
      std::vector<int> cores;
      for (ProgramState* q : group) {
        if (q->rank() == p.rank()) cores.push_back(q->core());
      }
      if (cores.size() > 1) impl.race.Sync(p.rank(), cores);
      for (ProgramState* q : group) {
        notify_writes(*q, q->current());
        q->Advance();
        ++instructions_executed_;
      }
      progressed = true;
    }
    bool all_done = true;
    for (auto& program : impl.programs) all_done &= program->done();
    if (all_done) return absl::OkStatus();
    if (progressed) continue;

    // One note per program: where it waits, or that it finished.
    Diagnostic deadlock = MakeDiagnostic(
        DiagnosticKind::kDeadlock,
        "deadlock: no program can proceed (mismatched synchronisation):");
    for (auto& program : impl.programs) {
      const ProgramState& p = *program;
      Diagnostic note =
          MakeDiagnostic(DiagnosticKind::kDeadlock, "finished its stream");
      if (!p.done()) {
        note = graph::InstructionDiagnostic(DiagnosticKind::kDeadlock, g,
                                            p.current(), "waits");
      }
      note.rank = p.rank();
      note.core = p.core();
      deadlock.notes.push_back(std::move(note));
      if (deadlock.notes.size() >= 64) {
        deadlock.notes.push_back(
            MakeDiagnostic(DiagnosticKind::kDeadlock, "…"));
        break;
      }
    }
    return DiagnosticError(kDeviceErrorCode, deadlock);
  }
}

}  // namespace nkigraph::interp
