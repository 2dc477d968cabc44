#ifndef NKIGRAPH_INTERP_RACE_DETECTOR_H_
#define NKIGRAPH_INTERP_RACE_DETECTOR_H_

#include <atomic>
#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "absl/types/span.h"
#include "interp/interval_map.h"
#include "util/memory_budget.h"

namespace nkigraph::interp {

// Happens-before race detection on shared HBM between the cores of each
// rank, with vector clocks: each core's clock ticks at every
// synchronisation it takes part in (core_barrier, sendrecv), and
// synchronising joins the participants' clocks. Two accesses to the same
// byte by different cores, at least one a write, race unless the earlier
// one's epoch is covered by the later core's clock.
//
// Each program (rank, core) keeps its own accesses in an interval map
// keyed by HBM byte offset: per byte, the epoch and instruction of its last
// write and of its last read. Bytes last touched by the same accesses share
// one interval, so memory follows the number of distinct access runs
// rather than the size of HBM, and every byte still has its own exact
// state. An access is checked against the other cores' maps and recorded
// in its own. Keeping the maps apart (rather than one map per rank holding
// the last writer) reports the same races — a core's own later write
// replaces another core's earlier write only after finding it ordered, and
// clocks only grow — and makes each map, and so each program's share of
// the state budget, depend on that program's accesses alone, whatever
// runs beside it.
//
// Thread safety: Access and Sync may be called from several threads at
// once; one mutex per rank guards that rank's maps and clocks.
class RaceDetector {
 public:
  struct Conflict {
    int64_t offset;  // the lowest racing byte
    int other_core;
    uint32_t other_instr;
    bool other_was_write;
  };

  // Enabled only when there are at least two cores per rank (and at most
  // kMaxCores). The state's growth is charged to `budget` (none:
  // unbounded) by ChargeGrowth.
  RaceDetector(int num_ranks, int num_cores, MemoryBudget* budget = nullptr);
  ~RaceDetector();
  RaceDetector(const RaceDetector&) = delete;
  RaceDetector& operator=(const RaceDetector&) = delete;

  bool enabled() const { return enabled_; }

  // Splits what the budget leaves (with what this detector already holds)
  // into equal shares, one per program that runs here: `programs_here` of
  // them when a run spread over processes holds only some (every program
  // when negative). Called by Run before any program runs, so the shares
  // do not depend on how the programs interleave.
  void BeginRun(int programs_here = -1);
  // Charges the budget for what program (rank, core)'s state has grown by
  // since its last call, in 64 KiB steps capped at its share, so the
  // programs' charges together never exceed what BeginRun split and a
  // charge cannot fail because of another program's timing. The error,
  // when the program's own state is past its share, depends only on that
  // program's accesses: the same for any number of threads. Called from
  // the program's own thread.
  absl::Status ChargeGrowth(int rank, int core);
  int64_t max_state_bytes() const { return max_state_bytes_; }
  int64_t program_budget() const { return program_budget_; }

  // Records an access of `length` bytes at `offset` of rank's HBM; returns
  // the earlier unordered access it races with, if any: the one on the
  // lowest racing byte (a write before a read on the same byte). A racing
  // access is not recorded.
  std::optional<Conflict> Access(int rank, int core, int64_t offset,
                                 int64_t length, bool write, uint32_t instr);
  // `pieces` accesses of `length` bytes each, at `offset` + k · `stride`
  // for k = 0, 1, ... in order: what as many Access calls give, the first
  // conflict ending them (the pieces before it recorded; its k in
  // `*piece`), under one lock (a strided operand's elements one by one).
  std::optional<Conflict> AccessStrided(int rank, int core, int64_t offset,
                                        int64_t pieces, int64_t stride,
                                        int64_t length, bool write,
                                        uint32_t instr, int64_t* piece);

  // `cores` of `rank` synchronise.
  void Sync(int rank, absl::Span<const int> cores);

  // Approximate heap bytes of the access state of one program, and of
  // all (exact when no Access runs).
  int64_t ProgramStateBytes(int rank, int core) const {
    return intervals(rank, core) * IntervalMap<ByteState>::kBytesPerInterval;
  }
  int64_t StateBytes() const {
    return intervals() * IntervalMap<ByteState>::kBytesPerInterval +
           static_cast<int64_t>(num_ranks_) * num_cores_ * num_cores_ *
               static_cast<int64_t>(sizeof(uint32_t));
  }
  int64_t intervals(int rank, int core) const {
    return enabled_ ? programs_[rank * num_cores_ + core].intervals.load(
                          std::memory_order_relaxed)
                    : 0;
  }
  int64_t intervals() const;

 private:
  static constexpr int kMaxCores = 2;
  // Access with rank's lock held.
  std::optional<Conflict> AccessLocked(int rank, int core, int64_t offset,
                                       int64_t length, bool write,
                                       uint32_t instr);
  // One program's last accesses to a byte.
  struct ByteState {
    uint32_t write_epoch = 0;  // 0: never written by this program
    uint32_t write_instr = 0;
    uint32_t read_epoch = 0;  // 0: never read by this program
    uint32_t read_instr = 0;
    bool operator==(const ByteState& o) const = default;
  };
  struct Program {
    IntervalMap<ByteState> bytes;
    std::atomic<int64_t> intervals{0};  // bytes.size(), readable unlocked
    int64_t charged = 0;  // bytes charged to the budget, by its own thread
  };
  struct Rank {
    absl::Mutex mu;
    std::vector<uint32_t> clocks;  // [core][of_core]
  };

  bool enabled_;
  int num_ranks_;
  int num_cores_;
  MemoryBudget* budget_;
  int64_t max_state_bytes_ = INT64_MAX;
  int64_t program_budget_ = INT64_MAX;
  std::unique_ptr<Rank[]> ranks_;
  std::unique_ptr<Program[]> programs_;  // [rank][core], guarded by its rank
};

}  // namespace nkigraph::interp

#endif  // NKIGRAPH_INTERP_RACE_DETECTOR_H_
