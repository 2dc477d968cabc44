// Running the programs, in rounds: every program runs until it reaches a
// synchronising instruction (on a pool of threads), then the groups whose
// participants have all arrived execute together, in program order; when
// nothing can move, a deadlock report.
//
// What a one-thread run does is the definition: within a round, programs
// in order (ranks, then each rank's cores), each to its next synchronising
// instruction. Programs of different ranks share no memory between
// synchronisations, so they may run in any order or at once; two cores of
// one rank share HBM, so a higher core executes an instruction only once
// the lower one has passed the last instruction of its segment that may
// touch a common block with a write (segment_footprint.h).
// Each program then sees the memory, shadow and race-detection state of
// the one-thread order, and its first error is the same; the error
// reported is the first program's in that order.
//
// Across processes (interp/transport.h) each process runs the segments of
// its own ranks' programs, then every process learns every program's
// position and error, so all of them hold the same view of the round: they
// report the same first error, fire the same groups in the same order and
// find the same deadlock. A collective whose group spans processes runs in
// each process holding a member, over the members' contributions
// (interp/remote_member.h); a group that fails is known at first only to
// the processes whose members failed, so they all go on to the end of the
// round's groups, then agree on the first failure in firing order.
//
// A run that reports every write (on_write: dumps) runs as one thread
// would across processes too: each round's segments run one process after
// another, in process order, a turn handed from each to the next saying
// whether an earlier program failed (the later ones then do not run) and
// how many writes have been reported; each group's outcome is agreed on
// before the next fires, and a process whose members' execution went past
// the call where another process's member failed puts back what they wrote
// and executes again up to that call. Every event then has its one-thread
// sequence number and every memory the one-thread state.
#include <algorithm>
#include <atomic>
#include <climits>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "absl/cleanup/cleanup.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "interp/cross_process_round.h"
#include "interp/interpreter.h"
#include "interp/interpreter_impl.h"
#include "interp/program_state.h"
#include "interp/progress_reporter.h"
#include "interp/round_wire.h"
#include "interp/run_errors.h"
#include "interp/segment_footprint.h"
#include "interp/step_allowance.h"
#include "interp/transport.h"
#include "interp/worker_pool.h"
#include "ops/blas_threads.h"
#include "ops/op_def.h"
#include "ops/sync_rule.h"
#include "util/diagnostic.h"
#include "util/status_macros.h"

namespace nkigraph::interp {
namespace {

bool AtSync(const ProgramState& p) {
  return ops::FindOp(p.current().opcode())->sync != ops::SyncKind::kNone;
}

int ThreadsFor(const RunOptions& options, int programs) {
  if (options.on_write) return 1;
  int threads = options.threads;
  if (threads <= 0) {
    threads = static_cast<int>(std::thread::hardware_concurrency());
  }
  return std::clamp(threads, 1, std::max(1, programs));
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
  const int num_programs = static_cast<int>(impl.programs.size());
  LocalTransport local_transport;
  Transport& transport =
      impl.transport != nullptr ? *impl.transport : local_transport;
  const bool across_processes = transport.num_processes() > 1;
  const RankBlock block = impl.block;
  const Round round{transport,
                    {impl.programs, impl.num_ranks, impl.num_cores, block},
                    impl.memory,
                    g};
  auto held_here = [&](int index) {
    return block.Holds(index / impl.num_cores);
  };
  // The race state's shares: one per program this process runs.
  impl.race.BeginRun(block.size() * impl.num_cores);
  // With on_write, each event may read the machine: programs run one at a
  // time, and the run stops at the first error.
  const bool stop_at_first_error = static_cast<bool>(options_.on_write);
  // ... and across processes, one process after another (see the top).
  const bool process_by_process = stop_at_first_error && across_processes;
  WorkerPool pool(ThreadsFor(options_, num_programs));
  // Threads the programs leave idle go to their matmuls' BLAS calls.
  const int allowed =
      options_.threads > 0
          ? options_.threads
          : static_cast<int>(std::thread::hardware_concurrency());
  const ops::ScopedBlasThreads blas_threads(allowed / pool.threads());
  // Only cores of one rank running beside each other ask the footprints.
  if (impl.footprints == nullptr && pool.threads() > 1 && impl.num_cores > 1) {
    impl.footprints = std::make_unique<SegmentFootprints>(g);
  }
  const SegmentFootprints* footprints = impl.footprints.get();

  auto executed = [&] {
    int64_t n = 0;
    for (const auto& p : impl.programs) n += p->executed();
    return n;
  };
  // Set the count however Run returns. A run across processes that stops
  // at a group another process saw fail has gone on past it (see
  // FireAcrossProcesses); it reports the count before that group.
  int64_t executed_at_failure = -1;
  absl::Cleanup count_executed = [&] {
    instructions_executed_ =
        executed_at_failure >= 0 ? executed_at_failure : executed();
  };

  // Rank 0's programs record what their dynamic offsets reach each into
  // their own map, merged into the sink at the end.
  std::vector<graph::ResolvedOffsets> reached(impl.num_cores);
  if (impl.resolved_sink != nullptr) {
    for (int c = 0; c < impl.num_cores; ++c) {
      impl.program(0, c).set_resolved_sink(&reached[c]);
    }
  }
  absl::Cleanup merge_reached = [&] {
    if (impl.resolved_sink == nullptr) return;
    for (int c = 0; c < impl.num_cores; ++c) {
      impl.program(0, c).set_resolved_sink(nullptr);
      for (const auto& [key, range] : reached[c]) {
        const auto [it, inserted] = impl.resolved_sink->try_emplace(key, range);
        if (!inserted) {
          it->second.lo = std::min(it->second.lo, range.lo);
          it->second.hi = std::max(it->second.hi, range.hi);
        }
      }
    }
  };

  int64_t total = 0;
  for (const proto::Stream& stream : g.streams()) {
    total += stream.instructions_size();
  }
  total *= impl.num_ranks;
  const int64_t executed_before = executed();
  ProgressReporter progress(options_, total - executed_before,
                            [&] { return executed() - executed_before; });

  // The writes reported so far, in one-thread order over every process:
  // a program this process does not hold counts its writes without
  // reporting them.
  int64_t write_sequence = 0;
  std::vector<const proto::Tensor*> written;
  auto notify_writes = [&](ProgramState& p, const proto::Instruction& instr) {
    if (!options_.on_write) return;
    WrittenTensors(g, instr, options_.write_filter, written);
    const bool held = block.Holds(p.rank());
    for (const proto::Tensor* tensor : written) {
      const int64_t sequence = write_sequence++;
      if (held) {
        options_.on_write(RunOptions::WriteEvent{p.rank(), p.core(), &instr,
                                                 tensor, sequence});
      }
    }
  };

  // The step limit, handed out round by round in one-thread order.
  StepAllowances allowance(g, max_steps, num_programs);

  // Runs a program until it finishes or reaches a synchronising
  // instruction, or stops it at its step allowance; `before` runs before
  // each instruction, `after` after.
  auto run_until_sync = [&](ProgramState& p, int64_t steps, auto&& before,
                            auto&& after) -> absl::Status {
    for (int64_t taken = 0; !p.done(); ++taken) {
      const proto::Instruction& instr = p.current();
      const ops::OpDef* def = &p.current_def();
      if (def->sync != ops::SyncKind::kNone) return absl::OkStatus();
      if (taken == steps) return StepLimitError(g, p, instr, max_steps);
      before(p);
      NKI_RETURN_IF_ERROR(p.Bind(instr));
      if (absl::Status s = def->execute(p); !s.ok()) {
        return DeviceError(g, p, instr, s);
      }
      notify_writes(p, instr);
      p.Advance();
      after(p);
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

  // One round's segments. A task runs one program; tasks start in the
  // order of `tasks`: with one thread the one-thread order, with more
  // every rank's core 0 first, then every core 1, ..., so that a core
  // waiting for a lower core of its rank waits for a started task.
  const bool one_thread = pool.threads() == 1;
  std::vector<int> tasks;
  std::vector<int> start_pc(num_programs, 0);
  std::vector<bool> moves(num_programs, false);     // runs a segment
  std::vector<bool> in_round(num_programs, false);  // ... in this process
  std::vector<absl::Status> errors(num_programs);
  std::atomic<bool> failed = false;  // for runs that stop at the first error
  // How far each program of the round has got: every position before
  // `passed` is done (INT_MAX once its task has returned). A higher core
  // waiting for it counts itself in `waiters` and sleeps on `cv`.
  struct Progress {
    std::atomic<int> passed{0};
    std::atomic<int> waiters{0};
    std::mutex mu;
    std::condition_variable cv;
  };
  std::unique_ptr<Progress[]> progress_of(new Progress[num_programs]);
  auto publish = [&](int index, int passed) {
    Progress& pr = progress_of[index];
    pr.passed.store(passed);
    if (pr.waiters.load() > 0) {
      std::lock_guard<std::mutex> lock(pr.mu);
      pr.cv.notify_all();
    }
  };
  // Before a core executes an instruction: wait until every lower core of
  // its rank has passed the last instruction of its segment that may touch
  // a block this one touches, one of them writing.
  auto wait_for_lower_cores = [&](ProgramState& p) {
    for (int c = 0; c < p.core(); ++c) {
      const int lower = p.rank() * impl.num_cores + c;
      Progress& pr = progress_of[lower];
      if (!in_round[lower] || pr.passed.load() == INT_MAX) continue;
      const int last =
          footprints->LastConflict(c, start_pc[lower], p.core(), p.pc());
      if (last < 0 || pr.passed.load() > last) continue;
      pr.waiters.fetch_add(1);
      {
        std::unique_lock<std::mutex> lock(pr.mu);
        pr.cv.wait(lock, [&] { return pr.passed.load() > last; });
      }
      pr.waiters.fetch_sub(1);
    }
  };

  auto run_task = [&](int t) {
    const int index = tasks[t];
    ProgramState& p = *impl.programs[index];
    if (!(stop_at_first_error && failed)) {
      if (one_thread) {
        // Lower cores have run their segments already.
        errors[index] = run_until_sync(
            p, allowance[index], [](ProgramState&) {}, [](ProgramState&) {});
      } else {
        errors[index] =
            run_until_sync(p, allowance[index], wait_for_lower_cores,
                           [&](ProgramState& q) { publish(index, q.pc()); });
      }
      if (!errors[index].ok()) failed = true;
    }
    publish(index, INT_MAX);
  };

  std::vector<ProgramState*> group;
  std::vector<ops::ExecContext*> contexts;
  while (true) {
    const int64_t executed_at_start = executed();
    tasks.clear();
    for (int i = 0; i < num_programs; ++i) {
      const ProgramState& p = *impl.programs[i];
      moves[i] = !p.done() && !AtSync(p);
      in_round[i] = moves[i] && held_here(i);
      start_pc[i] = p.pc();
      progress_of[i].passed.store(p.pc());
    }
    allowance.HandOut(impl.programs, moves, executed_at_start);
    if (one_thread) {
      for (int i = 0; i < num_programs; ++i) {
        if (in_round[i]) tasks.push_back(i);
      }
    } else {
      for (int c = 0; c < impl.num_cores; ++c) {
        for (int r = 0; r < impl.num_ranks; ++r) {
          if (in_round[r * impl.num_cores + c]) {
            tasks.push_back(r * impl.num_cores + c);
          }
        }
      }
    }
    const int process = transport.process();
    if (process_by_process && process > 0) {
      // Our turn: after the earlier processes' programs.
      NKI_ASSIGN_OR_RETURN(const std::string turn,
                           transport.Receive(process - 1));
      WireReader in(turn);
      if (in.Int() != 0) failed = true;
      write_sequence = in.Int();
      NKI_RETURN_IF_ERROR(in.Check("turn"));
    }
    pool.Run(static_cast<int>(tasks.size()), run_task);
    if (process_by_process && process + 1 < transport.num_processes()) {
      WireWriter out;
      out.Int(failed ? 1 : 0);
      out.Int(write_sequence);
      NKI_RETURN_IF_ERROR(transport.Send(process + 1, out.bytes()));
    }
    if (across_processes) {
      NKI_RETURN_IF_ERROR(ShareSegments(round, errors, write_sequence));
    }
    for (absl::Status& error : errors) {
      if (!error.ok()) return error;
    }
    bool progressed = executed() != executed_at_start;

    GroupFailure failure;
    int64_t fired = 0;
    for (auto& program : impl.programs) {
      ProgramState& p = *program;
      if (p.done()) continue;
      if (!match(p, &group)) continue;
      const proto::Instruction& instr = p.current();
      if (max_steps > 0 &&
          executed() + static_cast<int64_t>(group.size()) > max_steps) {
        if (across_processes) {
          NKI_RETURN_IF_ERROR(
              AgreeOnFailure(transport, failure, &executed_at_failure));
        }
        return StepLimitError(g, p, instr, max_steps);
      }
      const ops::OpDef* def = ops::FindOp(instr.opcode());
      if (across_processes) {
        FiredHere here;
        NKI_RETURN_IF_ERROR(
            FireAcrossProcesses(round, p, *def, group, fired, executed(),
                                failure, process_by_process ? &here : nullptr));
        if (process_by_process) {
          // As one process, which stops at the group's first failing call.
          NKI_ASSIGN_OR_RETURN(GroupFailure first,
                               FirstFailure(transport, failure));
          if (first.fired >= 0) {
            NKI_RETURN_IF_ERROR(
                EndAtFailure(round, p, *def, group, here, first));
            executed_at_failure = first.executed;
            return first.status;
          }
        }
      } else {
        contexts.clear();
        for (ProgramState* q : group) {
          NKI_RETURN_IF_ERROR(q->Bind(q->current()));
          contexts.push_back(q);
        }
        if (absl::Status s = def->execute_group(contexts); !s.ok()) {
          return DeviceError(g, p, instr, s);
        }
      }
      std::vector<int> cores;
      for (ProgramState* q : group) {
        if (q->rank() == p.rank()) cores.push_back(q->core());
      }
      if (cores.size() > 1 && block.Holds(p.rank())) {
        impl.race.Sync(p.rank(), cores);
      }
      for (ProgramState* q : group) {
        notify_writes(*q, q->current());  // counts the others' writes
        q->Advance();
      }
      ++fired;
      progressed = true;
    }
    // Shadow pages a run's writes touched are charged as they are touched;
    // a run that went past the limit that way stops at the round's end,
    // across processes all of them together.
    if (across_processes) {
      NKI_RETURN_IF_ERROR(AgreeAtRoundEnd(transport, failure,
                                          budget_->Overdrawn(), executed(),
                                          &executed_at_failure));
    }
    NKI_RETURN_IF_ERROR(budget_->Overdrawn());
    bool all_done = true;
    for (auto& program : impl.programs) all_done &= program->done();
    if (all_done) return absl::OkStatus();
    if (progressed) continue;

    return DeadlockError(g, impl.programs);
  }
}

}  // namespace nkigraph::interp
