#include "cost/schedule.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"
#include "cost/known_values.h"
#include "graph/describe.h"
#include "ops/op_def.h"
#include "ops/sync_rule.h"
#include "util/diagnostic.h"
#include "util/worker_pool.h"

namespace nkigraph::cost {

std::string LaneName(int lane) {
  if (lane >= kFirstDmaLane) return absl::StrCat("dma e", lane - kFirstDmaLane);
  return std::string(ops::EngineName(static_cast<ops::Engine>(lane)));
}

namespace {

class Scheduler {
 public:
  Scheduler(const graph::GraphIndex& index, const CostTable& table,
            absl::Span<const graph::Dependency> deps)
      : index_(index), table_(table), deps_(deps) {}

  absl::StatusOr<Schedule> Run();

 private:
  struct Ready {
    double time = 0;
    int critical = -1;
    int lane = 0;
    int lanes = 1;  // a DMA's engines: lanes [lane, lane + lanes)
  };

  // Lane index of core `core`, lane `lane` in the flat arrays.
  int Flat(int core, int lane) const { return core * lanes_ + lane; }
  Ready ReadyOf(int i) const;
  // Books instruction `i` on its lane from `start` for `duration`.
  void Book(int i, const Ready& ready, double start, double duration);
  absl::Status Deadlock() const;

  const graph::GraphIndex& index_;
  const CostTable& table_;
  absl::Span<const graph::Dependency> deps_;
  std::vector<size_t>
      dep_begin_;  // deps of instruction i: [begin[i], begin[i+1])
  int lanes_ = 0;
  std::vector<double> lane_free_;
  std::vector<int> lane_last_;
  std::vector<double> hbm_free_;  // per core
  // Per core: the latest end so far and its instruction; the end of the
  // last core barrier (a fence) and the barrier.
  std::vector<double> core_end_;
  std::vector<int> core_end_instr_;
  std::vector<double> fence_;
  std::vector<int> fence_instr_;
  Schedule out_;
  std::vector<size_t> cursor_;
  std::vector<int> waiting_;  // per core: the sync instruction it waits at
  std::vector<Ready> waiting_ready_;
};

Scheduler::Ready Scheduler::ReadyOf(int i) const {
  Ready r;
  for (size_t d = dep_begin_[i]; d < dep_begin_[i + 1]; ++d) {
    const int from = deps_[d].from;
    if (out_.slots[from].end_ns > r.time) {
      r.time = out_.slots[from].end_ns;
      r.critical = from;
    }
  }
  const graph::InstrInfo& info = index_.info(i);
  const int core = static_cast<int>(info.core);
  if (info.engine == ops::Engine::kDma) {
    // The engines of the partitions it moves (cost/instr_cost.h), all
    // free before it starts.
    const InstrCost& cost = out_.costs[i];
    r.lane = kFirstDmaLane + cost.dma_first_engine;
    r.lanes = cost.dma_engines;
    for (int q = r.lane + 1; q < r.lane + r.lanes; ++q) {
      const int flat = Flat(core, q);
      if (lane_free_[flat] > r.time) {
        r.time = lane_free_[flat];
        r.critical = lane_last_[flat];
      }
    }
  } else if (info.engine == ops::Engine::kCollective &&
             info.def->sync == ops::SyncKind::kNone) {
    // A collective-engine instruction that meets no one (the ring's rank
    // resolver) reads a register: the sequencer's work, not a transfer
    // queued behind the permutes.
    r.lane = static_cast<int>(ops::Engine::kSync);
  } else {
    r.lane = static_cast<int>(info.engine);
  }
  const int flat = Flat(core, r.lane);
  if (lane_free_[flat] > r.time) {
    r.time = lane_free_[flat];
    r.critical = lane_last_[flat];
  }
  if (fence_[core] > r.time) {
    r.time = fence_[core];
    r.critical = fence_instr_[core];
  }
  // A core barrier orders the core's memory accesses across cores: it
  // waits for everything before it.
  if (info.def->sync == ops::SyncKind::kCoreBarrier &&
      core_end_[core] > r.time) {
    r.time = core_end_[core];
    r.critical = core_end_instr_[core];
  }
  return r;
}

void Scheduler::Book(int i, const Ready& ready, double start, double duration) {
  const graph::InstrInfo& info = index_.info(i);
  const int core = static_cast<int>(info.core);
  double end = start + duration;
  const int64_t hbm = out_.costs[i].traffic.hbm();
  if (hbm > 0) {
    const double flow =
        info.engine == ops::Engine::kDma ? start + table_.dma_fixed_ns : start;
    const double begin = std::max(hbm_free_[core], flow);
    hbm_free_[core] = begin + hbm / table_.hbm_core_bytes_per_ns();
    end = std::max(end, hbm_free_[core]);
  }
  Slot& slot = out_.slots[i];
  slot.start_ns = start;
  slot.end_ns = end;
  slot.lane = ready.lane;
  slot.lanes = ready.lanes;
  slot.critical = ready.critical;
  for (int lane = ready.lane; lane < ready.lane + ready.lanes; ++lane) {
    const int flat = Flat(core, lane);
    lane_free_[flat] = end;
    lane_last_[flat] = i;
  }
  if (end > core_end_[core]) {
    core_end_[core] = end;
    core_end_instr_[core] = i;
  }
  if (info.def->sync == ops::SyncKind::kCoreBarrier) {
    fence_[core] = end;
    fence_instr_[core] = i;
  }
  out_.makespan_ns = std::max(out_.makespan_ns, end);
}

absl::Status Scheduler::Deadlock() const {
  Diagnostic diagnostic = MakeDiagnostic(
      DiagnosticKind::kDeadlock,
      "the cost model cannot schedule the graph: programs wait at "
      "synchronisation that never completes");
  for (int core = 0; core < index_.num_cores(); ++core) {
    const std::vector<int>& stream = index_.stream(core);
    Diagnostic note;
    if (cursor_[core] >= stream.size()) {
      note = MakeDiagnostic(DiagnosticKind::kDeadlock, "finished its stream");
    } else {
      note = graph::InstructionDiagnostic(
          DiagnosticKind::kDeadlock, index_.graph(),
          index_.instr(stream[cursor_[core]]), "waits");
    }
    note.rank = 0;
    note.core = core;
    diagnostic.notes.push_back(std::move(note));
  }
  return DiagnosticError(absl::StatusCode::kFailedPrecondition, diagnostic);
}

absl::StatusOr<Schedule> Scheduler::Run() {
  const int n = index_.size();
  const int cores = index_.num_cores();
  lanes_ = kFirstDmaLane + std::max(table_.dma_queues, 1);
  out_.index = &index_;
  out_.table = &table_;
  out_.lanes_per_core = lanes_;
  out_.slots.assign(n, Slot{});
  out_.costs.resize(n);
  // Each instruction's cost is its own: a big graph's are asked in tasks
  // over the machine's threads, each filling its own slots.
  constexpr int kCostsPerTask = 1 << 14;
  auto cost_task = [&](int t) {
    const int end = std::min(n, (t + 1) * kCostsPerTask);
    constexpr int kFar = graph::GraphIndex::kPrefetchAhead, kNear = kFar / 2;
    for (int i = t * kCostsPerTask; i < end; ++i) {
      index_.Prefetch(i + kFar < end ? i + kFar : -1,
                      i + kNear < end ? i + kNear : -1);
      out_.costs[i] = CostOf(index_, i, table_);
    }
  };
  const int cost_tasks = (n + kCostsPerTask - 1) / kCostsPerTask;
  if (cost_tasks > 1) {
    WorkerPool pool(WorkerPool::MachineThreads());
    pool.Run(cost_tasks, cost_task);
  } else if (cost_tasks == 1) {
    cost_task(0);
  }
  dep_begin_.assign(n + 1, 0);
  for (const graph::Dependency& d : deps_) ++dep_begin_[d.to + 1];
  for (int i = 0; i < n; ++i) dep_begin_[i + 1] += dep_begin_[i];
  lane_free_.assign(static_cast<size_t>(cores) * lanes_, 0.0);
  lane_last_.assign(static_cast<size_t>(cores) * lanes_, -1);
  hbm_free_.assign(cores, 0.0);
  core_end_.assign(cores, 0.0);
  core_end_instr_.assign(cores, -1);
  fence_.assign(cores, 0.0);
  fence_instr_.assign(cores, -1);
  cursor_.assign(cores, 0);
  waiting_.assign(cores, -1);
  waiting_ready_.assign(cores, Ready{});

  const proto::World& world = index_.graph().world();
  // Every rank runs rank 0's streams at rank 0's times: another rank's
  // core waits where rank 0's does.
  auto waiting_at = [&](ops::ProgramId p) -> const proto::Instruction* {
    if (p.core < 0 || p.core >= cores || p.rank < 0 ||
        p.rank >= static_cast<int>(index_.num_ranks())) {
      return nullptr;
    }
    const int i = waiting_[p.core];
    return i < 0 ? nullptr : &index_.instr(i);
  };
  ops::SyncGroup group;
  std::vector<int> member_cores;
  size_t done = 0;
  for (int core = 0; core < cores; ++core) {
    if (index_.stream(core).empty()) ++done;
  }
  while (done < static_cast<size_t>(cores)) {
    bool progress = false;
    for (int core = 0; core < cores; ++core) {
      const std::vector<int>& stream = index_.stream(core);
      while (cursor_[core] < stream.size() && waiting_[core] < 0) {
        const int i = stream[cursor_[core]];
        const Ready ready = ReadyOf(i);
        if (index_.info(i).def->sync != ops::SyncKind::kNone) {
          waiting_[core] = i;
          waiting_ready_[core] = ready;
          break;
        }
        Book(i, ready, ready.time, out_.costs[i].duration_ns);
        progress = true;
        if (++cursor_[core] == stream.size()) ++done;
      }
    }
    for (int core = 0; core < cores; ++core) {
      const int i = waiting_[core];
      if (i < 0) continue;
      if (!ops::SyncGroupReady(world, ops::ProgramId{0, core}, index_.instr(i),
                               waiting_at, &group)) {
        continue;
      }
      member_cores.clear();
      for (const ops::ProgramId& p : group.members) {
        if (std::find(member_cores.begin(), member_cores.end(), p.core) ==
            member_cores.end()) {
          member_cores.push_back(p.core);
        }
      }
      std::sort(member_cores.begin(), member_cores.end());
      int last = member_cores.front();
      double duration = 0;
      for (int c : member_cores) {
        if (waiting_ready_[c].time > waiting_ready_[last].time) last = c;
        duration = std::max(duration, out_.costs[waiting_[c]].duration_ns);
      }
      const double start = waiting_ready_[last].time;
      // (Read before the loop below clears the members' waits: the last
      // to arrive may come before others in core order.)
      const int last_instr = waiting_[last];
      for (int c : member_cores) {
        Ready ready = waiting_ready_[c];
        if (c != last) {
          ready.critical = last_instr;
          out_.waits.push_back({last_instr, waiting_[c]});
        }
        Book(waiting_[c], ready, start, duration);
        waiting_[c] = -1;
        if (++cursor_[c] == index_.stream(c).size()) ++done;
      }
      progress = true;
    }
    if (!progress) return Deadlock();
  }
  return std::move(out_);
}

}  // namespace

absl::StatusOr<Schedule> ScheduleGraph(
    const graph::GraphIndex& index, const CostTable& table,
    absl::Span<const graph::Dependency> deps) {
  Scheduler scheduler(index, table, deps);
  return scheduler.Run();
}

absl::StatusOr<Schedule> ScheduleGraph(const graph::GraphIndex& index,
                                       const CostTable& table) {
  const KnownOffsets known = ResolveKnownOffsets(index);
  const std::vector<graph::Dependency> deps = graph::AnalyzeDependencies(
      index, graph::DependencyOptions{.drop_implied = false,
                                      .resolved = &known.resolved});
  absl::StatusOr<Schedule> schedule = ScheduleGraph(index, table, deps);
  if (schedule.ok()) {
    schedule->dynamic_operands = known.dynamic_operands;
    schedule->data_dependent_offsets = known.data_dependent;
  }
  return schedule;
}

}  // namespace nkigraph::cost
