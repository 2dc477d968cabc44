#ifndef NKIGRAPH_INTERP_RACE_DETECTOR_H_
#define NKIGRAPH_INTERP_RACE_DETECTOR_H_

#include <cstdint>
#include <optional>
#include <vector>

#include "absl/status/status.h"
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
// The per-byte access state lives in one interval map per rank, keyed by
// HBM byte offset: bytes last touched by the same accesses share one
// interval, so memory follows the number of distinct access runs rather
// than the size of HBM, and every byte still has its own exact state.
class RaceDetector {
 public:
  struct Conflict {
    int64_t offset;  // the lowest racing byte
    int other_core;
    uint32_t other_instr;
    bool other_was_write;
  };

  // Enabled only when there are at least two cores per rank. The state's
  // growth is charged to `budget` (none: unbounded) by ChargeGrowth.
  RaceDetector(int num_ranks, int num_cores, MemoryBudget* budget = nullptr);
  ~RaceDetector();
  RaceDetector(const RaceDetector&) = delete;
  RaceDetector& operator=(const RaceDetector&) = delete;

  bool enabled() const { return enabled_; }
  // Charges the budget for what the state has grown by since the last
  // call (in 64 KiB steps, so not every access touches the budget); the
  // budget's error when the limit is reached.
  absl::Status ChargeGrowth();

  // Records an access of `length` bytes at `offset` of rank's HBM; returns
  // the earlier unordered access it races with, if any: the one on the
  // lowest racing byte. A racing access is not recorded.
  std::optional<Conflict> Access(int rank, int core, int64_t offset,
                                 int64_t length, bool write, uint32_t instr);

  // `cores` of `rank` synchronise.
  void Sync(int rank, absl::Span<const int> cores);

  // Approximate heap bytes of the access state.
  int64_t StateBytes() const {
    return intervals_ * IntervalMap<ByteState>::kBytesPerInterval +
           static_cast<int64_t>(clocks_.size() * sizeof(uint32_t));
  }
  int64_t intervals() const { return intervals_; }

 private:
  static constexpr int kMaxCores = 2;
  static constexpr uint8_t kNoCore = 0xFF;
  struct ByteState {
    uint32_t write_epoch = 0;
    uint32_t write_instr = 0;
    uint32_t read_epoch[kMaxCores] = {0, 0};
    uint32_t read_instr[kMaxCores] = {0, 0};
    uint8_t write_core = kNoCore;
    bool operator==(const ByteState& o) const;
  };
  uint32_t& Clock(int rank, int core, int of_core) {
    return clocks_[(rank * num_cores_ + core) * num_cores_ + of_core];
  }

  bool enabled_;
  int num_cores_;
  MemoryBudget* budget_;
  int64_t charged_ = 0;           // bytes of StateBytes() charged to budget_
  std::vector<uint32_t> clocks_;  // [rank][core][of_core]
  std::vector<IntervalMap<ByteState>> bytes_;  // [rank]
  int64_t intervals_ = 0;                      // summed over ranks
};

}  // namespace nkigraph::interp

#endif  // NKIGRAPH_INTERP_RACE_DETECTOR_H_
