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
#include <chrono>
#include <climits>
#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "absl/cleanup/cleanup.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/synchronization/mutex.h"
#include "graph/describe.h"
#include "interp/interpreter.h"
#include "interp/interpreter_impl.h"
#include "interp/program_state.h"
#include "interp/remote_member.h"
#include "interp/round_wire.h"
#include "interp/segment_footprint.h"
#include "interp/tensor_snapshot.h"
#include "interp/transport.h"
#include "interp/worker_pool.h"
#include "ops/blas_threads.h"
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

bool AtSync(const ProgramState& p) {
  return ops::FindOp(p.current().opcode())->sync != ops::SyncKind::kNone;
}

// Calls on_progress every interval from its own thread while it lives,
// then once with `finished`.
class ProgressReporter {
 public:
  ProgressReporter(const RunOptions& options, int64_t total,
                   std::function<int64_t()> done)
      : options_(options), total_(total), done_(std::move(done)) {
    if (!options_.on_progress) return;
    thread_ = std::thread([this] { Loop(); });
  }
  ~ProgressReporter() {
    if (!thread_.joinable()) return;
    {
      std::lock_guard<std::mutex> lock(mu_);
      stop_ = true;
    }
    cv_.notify_all();
    thread_.join();
    Report(/*finished=*/true);
  }

 private:
  void Loop() {
    const auto interval = std::chrono::duration<double>(
        std::max(0.01, options_.progress_interval_seconds));
    std::unique_lock<std::mutex> lock(mu_);
    while (!cv_.wait_for(lock, interval, [&] { return stop_; })) {
      lock.unlock();
      Report(/*finished=*/false);
      lock.lock();
    }
  }
  void Report(bool finished) {
    RunOptions::Progress p;
    p.done = done_();
    p.total = total_;
    p.elapsed_seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start_)
            .count();
    p.finished = finished;
    options_.on_progress(p);
  }

  const RunOptions& options_;
  const int64_t total_;
  const std::function<int64_t()> done_;
  const std::chrono::steady_clock::time_point start_ =
      std::chrono::steady_clock::now();
  std::mutex mu_;
  std::condition_variable cv_;
  bool stop_ = false;
  std::thread thread_;
};

int ThreadsFor(const RunOptions& options, int programs) {
  if (options.on_write) return 1;
  int threads = options.threads;
  if (threads <= 0) {
    threads = static_cast<int>(std::thread::hardware_concurrency());
  }
  return std::clamp(threads, 1, std::max(1, programs));
}

// Every program of the run and which ranks this process holds.
struct Programs {
  std::vector<std::unique_ptr<ProgramState>>& all;  // [rank][core]
  int num_ranks;
  int num_cores;
  RankBlock block;
  ProgramState& at(int rank, int core) { return *all[rank * num_cores + core]; }
};

// The first group that failed in this process during a round's firing:
// its position in firing order and the number of the failing call within
// its execution (interp/remote_member.h's CountingContext), or -1.
struct GroupFailure {
  int64_t fired = -1;
  int64_t call = 0;
  absl::Status status;
  // Instructions executed by every program before the group: what the
  // run reports as executed when it stops there.
  int64_t executed = 0;
};

// Tells every process where this process's programs got to in their
// segments and how they ended, and learns the same of theirs: remote
// programs advance to where their process ran them, and `errors` gets
// their errors, so every process finds the same first one. The writes
// reported so far (`write_sequence`) are the last process's count, whose
// turn came last.
absl::Status ShareSegments(Transport& transport, Programs impl,
                           std::vector<absl::Status>& errors,
                           int64_t& write_sequence) {
  const int processes = transport.num_processes();
  const int cores = impl.num_cores;
  WireWriter out;
  out.Int(write_sequence);
  for (int r = impl.block.first; r < impl.block.end; ++r) {
    for (int c = 0; c < cores; ++c) {
      out.Int(impl.at(r, c).pc());
      out.Status(errors[r * cores + c]);
    }
  }
  NKI_ASSIGN_OR_RETURN(std::vector<std::string> all,
                       transport.AllGather(out.bytes()));
  for (int q = 0; q < processes; ++q) {
    if (q == transport.process()) continue;
    WireReader in(all[q]);
    const int64_t their_sequence = in.Int();
    if (q == processes - 1) write_sequence = their_sequence;
    const RankBlock theirs = BlockOf(q, processes, impl.num_ranks);
    for (int r = theirs.first; r < theirs.end; ++r) {
      for (int c = 0; c < cores; ++c) {
        const int64_t pc = in.Int();
        errors[r * cores + c] = in.Status();
        ProgramState& p = impl.at(r, c);
        NKI_RETURN_IF_ERROR(in.Check("round state"));
        if (pc < p.pc()) {
          return absl::InternalError(
              absl::StrCat("process ", q, " reports rank ", r, " core ", c,
                           " at position ", pc, ", behind ", p.pc()));
        }
        while (p.pc() < pc && !p.done()) p.Advance();
      }
    }
    NKI_RETURN_IF_ERROR(in.Check("round state"));
  }
  return absl::OkStatus();
}

// After a round's groups have fired (or before the run stops at its step
// limit in the middle of them, or after each group when every write is
// reported): the first group failure of any process, in firing order and
// call number, as one process would have met it; `fired` is -1 if none.
absl::StatusOr<GroupFailure> FirstFailure(Transport& transport,
                                          const GroupFailure& failure) {
  WireWriter out;
  out.Int(failure.fired);
  out.Int(failure.call);
  out.Int(failure.executed);
  out.Status(failure.status);
  NKI_ASSIGN_OR_RETURN(std::vector<std::string> all,
                       transport.AllGather(out.bytes()));
  GroupFailure first;
  for (const std::string& bytes : all) {
    WireReader in(bytes);
    GroupFailure theirs;
    theirs.fired = in.Int();
    theirs.call = in.Int();
    theirs.executed = in.Int();
    theirs.status = in.Status();
    NKI_RETURN_IF_ERROR(in.Check("group outcome"));
    if (theirs.fired < 0) continue;
    if (first.fired < 0 || theirs.fired < first.fired ||
        (theirs.fired == first.fired && theirs.call < first.call)) {
      first = std::move(theirs);
    }
  }
  return first;
}

// The first failure (FirstFailure) is the run's error, with the
// instruction count it had there.
absl::Status AgreeOnFailure(Transport& transport, const GroupFailure& failure,
                            int64_t* executed) {
  NKI_ASSIGN_OR_RETURN(GroupFailure first, FirstFailure(transport, failure));
  if (first.fired >= 0) *executed = first.executed;
  return first.status;
}

// What a process keeps of a group it fired, when every write is reported:
// enough to end its execution where another process's member failed.
struct FiredHere {
  bool executed = false;    // its members' execution ran here
  int64_t stopped_at = -1;  // the call it failed at here, or -1
  std::vector<MemberContribution> contributions;
  std::vector<TensorSnapshot> before;  // what its members may write
};

// Executes a ready group over this process's members (their
// ProgramStates, bound) and the others' `contributions`, numbering the
// calls (`stop_at`: see CountingContext). A failure comes back as the
// device error, its call number in `failed_call`.
absl::Status ExecuteHere(const Programs& impl, const proto::Graph& graph,
                         ProgramState& p, const ops::OpDef& def,
                         const std::vector<ProgramState*>& group,
                         const std::vector<MemberContribution>& contributions,
                         int64_t stop_at, int64_t* failed_call) {
  const int n = static_cast<int>(group.size());
  const ops::InstrView* view = nullptr;
  for (int j = 0; j < n && view == nullptr; ++j) {
    if (impl.block.Holds(group[j]->rank())) view = &group[j]->view();
  }
  std::vector<std::unique_ptr<RemoteMember>> remotes;
  std::vector<std::unique_ptr<CountingContext>> counted;
  std::vector<ops::ExecContext*> contexts;
  int64_t calls = 0;
  int64_t first_failure = -1;
  for (int j = 0; j < n; ++j) {
    ops::ExecContext* member = group[j];
    if (!impl.block.Holds(group[j]->rank())) {
      remotes.push_back(std::make_unique<RemoteMember>(
          *view, group[j]->rank(), group[j]->core(), contributions[j]));
      member = remotes.back().get();
    }
    counted.push_back(std::make_unique<CountingContext>(
        *member, calls, first_failure, stop_at));
    contexts.push_back(counted.back().get());
  }
  absl::Status s = def.execute_group(contexts);
  if (s.ok()) return s;
  *failed_call = first_failure >= 0 ? first_failure : calls;
  return DeviceError(graph, p, p.current(), s);
}

// The tensors an instruction writes, each once, in operand order, as
// declared: what on_write is told of (those `filter` accepts). Known from
// the instruction alone, so a process counts the events of members it
// does not hold as well.
void WrittenTensors(const proto::Graph& graph, const proto::Instruction& instr,
                    const std::function<bool(const proto::Tensor&)>& filter,
                    std::vector<const proto::Tensor*>& written) {
  written.clear();
  const ops::OpDef* def = ops::FindOp(instr.opcode());
  for (int i = 0; i < instr.operands_size(); ++i) {
    const uint32_t id = instr.operands(i).tensor_id();
    const ops::OperandRole* role = ops::OperandRoleOf(*def, i);
    if (id == 0 || role == nullptr || role->access == ops::Access::kRead) {
      continue;
    }
    const proto::Tensor* tensor = &graph.tensors(static_cast<int>(id) - 1);
    if (std::find(written.begin(), written.end(), tensor) != written.end()) {
      continue;
    }
    if (filter && !filter(*tensor)) continue;
    written.push_back(tensor);
  }
}

// Fires a ready group that may span processes: only the processes holding
// a member execute it, each over its own members and the others'
// contributions. A failure is recorded in `failure` (the run goes on to
// the end of the round's groups, so that every process fires the same
// ones); what is returned is a failure to reach another process. With
// `here` (every write reported), what the members may write is saved
// first, and `here` says how the execution went.
absl::Status FireAcrossProcesses(Transport& transport, Programs impl,
                                 DeviceMemory& memory,
                                 const proto::Graph& graph, ProgramState& p,
                                 const ops::OpDef& def,
                                 const std::vector<ProgramState*>& group,
                                 int64_t fired, int64_t executed,
                                 GroupFailure& failure, FiredHere* here) {
  const RankBlock& block = impl.block;
  const int n = static_cast<int>(group.size());
  const int processes = transport.num_processes();
  std::vector<int> owner(n);
  int first_local = -1;
  std::vector<int> peers;
  for (int j = 0; j < n; ++j) {
    owner[j] = ProcessOfRank(group[j]->rank(), processes, impl.num_ranks);
    if (block.Holds(group[j]->rank())) {
      if (first_local < 0) first_local = j;
    } else if (std::find(peers.begin(), peers.end(), owner[j]) == peers.end()) {
      peers.push_back(owner[j]);
    }
  }
  if (first_local < 0) return absl::OkStatus();  // none of ours
  std::sort(peers.begin(), peers.end());
  auto fail = [&](int64_t call, absl::Status status) {
    if (failure.fired < 0) {
      failure = {fired, call, std::move(status), executed};
    }
  };

  // Our members' contributions, in group order; theirs.
  WireWriter out;
  std::vector<absl::Status> bound(n);
  for (int j = 0; j < n; ++j) {
    if (block.Holds(group[j]->rank())) {
      bound[j] = WriteContribution(*group[j], out);
    }
  }
  FiredHere local;
  if (here == nullptr) here = &local;
  std::vector<MemberContribution>& contributions = here->contributions;
  contributions.assign(n, MemberContribution{});
  if (!peers.empty()) {
    NKI_ASSIGN_OR_RETURN(std::vector<std::string> replies,
                         transport.Exchange(peers, out.bytes()));
    for (size_t k = 0; k < peers.size(); ++k) {
      WireReader in(replies[k]);
      for (int j = 0; j < n; ++j) {
        if (owner[j] != peers[k]) continue;
        contributions[j] = ReadContribution(in);
        bound[j] = contributions[j].bind;
      }
      NKI_RETURN_IF_ERROR(in.Check("collective operands"));
    }
  }
  // As one process binds the members in group order before executing.
  for (int j = 0; j < n; ++j) {
    if (!bound[j].ok()) {
      fail(-1, bound[j]);
      return absl::OkStatus();
    }
  }

  // Only a group spanning processes can have run past another process's
  // failure.
  if (here != &local && !peers.empty()) {
    std::vector<const proto::Tensor*> written;
    for (ProgramState* q : group) {
      if (!block.Holds(q->rank())) continue;
      WrittenTensors(graph, q->current(), nullptr, written);
      for (const proto::Tensor* t : written) {
        here->before.push_back(
            TensorSnapshot::Take(memory, *t, q->rank(), q->core()));
      }
    }
  }
  here->executed = true;
  int64_t call = -1;
  if (absl::Status s = ExecuteHere(impl, graph, p, def, group, contributions,
                                   /*stop_at=*/-1, &call);
      !s.ok()) {
    here->stopped_at = call;
    fail(call, std::move(s));
  }
  return absl::OkStatus();
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
  const Programs programs{impl.programs, impl.num_ranks, impl.num_cores, block};
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

  // The step limit is shared by all programs, but a count read while other
  // threads run would make where the run stops depend on their timing.
  // Instead each round hands out allowances in one-thread order: a
  // program's segment (up to its next synchronising instruction) has a
  // length known before it runs, so the first program in that order whose
  // segment passes the limit gets what is left and stops there, with the
  // error a one-thread run gives, and the programs after it get nothing.
  std::vector<std::vector<int>> next_sync(impl.num_cores);  // [core][pc]
  if (max_steps > 0) {
    for (int c = 0; c < impl.num_cores; ++c) {
      const proto::Stream& stream = g.streams(c);
      std::vector<int>& next = next_sync[c];
      next.resize(stream.instructions_size() + 1);
      next.back() = stream.instructions_size();
      for (int i = stream.instructions_size() - 1; i >= 0; --i) {
        const bool sync = ops::FindOp(stream.instructions(i).opcode())->sync !=
                          ops::SyncKind::kNone;
        next[i] = sync ? i : next[i + 1];
      }
    }
  }
  std::vector<int64_t> allowance(num_programs, INT64_MAX);

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
    if (max_steps > 0) {
      // Over every process's programs: the allowances are the same in all.
      int64_t left = std::max<int64_t>(0, max_steps - executed_at_start);
      for (int i = 0; i < num_programs; ++i) {
        if (!moves[i]) continue;
        const ProgramState& p = *impl.programs[i];
        allowance[i] =
            std::min<int64_t>(left, next_sync[p.core()][p.pc()] - p.pc());
        left -= allowance[i];
      }
    }
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
      NKI_RETURN_IF_ERROR(
          ShareSegments(transport, programs, errors, write_sequence));
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
        NKI_RETURN_IF_ERROR(FireAcrossProcesses(
            transport, programs, impl.memory, g, p, *def, group, fired,
            executed(), failure, process_by_process ? &here : nullptr));
        if (process_by_process) {
          // As one process, which stops at the group's first failing call.
          NKI_ASSIGN_OR_RETURN(GroupFailure first,
                               FirstFailure(transport, failure));
          if (first.fired >= 0) {
            if (here.executed && here.stopped_at != first.call) {
              for (const TensorSnapshot& saved : here.before) {
                saved.Restore(impl.memory);
              }
              for (ProgramState* q : group) {
                if (block.Holds(q->rank())) {
                  NKI_RETURN_IF_ERROR(q->Bind(q->current()));
                }
              }
              int64_t call = -1;
              ExecuteHere(programs, g, p, *def, group, here.contributions,
                          first.call, &call)
                  .IgnoreError();
            }
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
    if (across_processes) {
      NKI_RETURN_IF_ERROR(
          AgreeOnFailure(transport, failure, &executed_at_failure));
    }
    bool all_done = true;
    for (auto& program : impl.programs) all_done &= program->done();
    // Shadow pages a run's writes touched are charged as they are touched;
    // a run that went past the limit that way stops at the round's end.
    NKI_RETURN_IF_ERROR(budget_->Overdrawn());
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
