#ifndef NKIGRAPH_INTERP_RACE_DETECTOR_H_
#define NKIGRAPH_INTERP_RACE_DETECTOR_H_

#include <cstdint>
#include <optional>
#include <vector>

#include "absl/types/span.h"

namespace nkigraph::interp {

// Happens-before race detection on shared HBM between the cores of each
// rank, with vector clocks: each core's clock ticks at every
// synchronisation it takes part in (core_barrier, sendrecv), and
// synchronising joins the participants' clocks. Two accesses to the same
// byte by different cores, at least one a write, race unless the earlier
// one's epoch is covered by the later core's clock.
class RaceDetector {
 public:
  struct Conflict {
    int other_core;
    uint32_t other_instr;
    bool other_was_write;
  };

  // Enabled only when there are at least two cores per rank.
  RaceDetector(int num_ranks, int num_cores, int64_t hbm_bytes);

  bool enabled() const { return enabled_; }
  static int64_t BytesNeeded(int num_ranks, int num_cores, int64_t hbm_bytes);

  // Records an access of `length` bytes at `offset` of rank's HBM; returns
  // the earlier unordered access it races with, if any.
  std::optional<Conflict> Access(int rank, int core, int64_t offset,
                                 int64_t length, bool write, uint32_t instr);

  // `cores` of `rank` synchronise.
  void Sync(int rank, absl::Span<const int> cores);

 private:
  static constexpr int kMaxCores = 2;
  static constexpr uint8_t kNoCore = 0xFF;
  struct ByteState {
    uint32_t write_epoch = 0;
    uint32_t write_instr = 0;
    uint32_t read_epoch[kMaxCores] = {0, 0};
    uint32_t read_instr[kMaxCores] = {0, 0};
    uint8_t write_core = kNoCore;
  };
  uint32_t& Clock(int rank, int core, int of_core) {
    return clocks_[(rank * num_cores_ + core) * num_cores_ + of_core];
  }

  bool enabled_;
  int num_cores_;
  int64_t hbm_bytes_;
  std::vector<uint32_t> clocks_;  // [rank][core][of_core]
  std::vector<ByteState> bytes_;  // [rank][byte]
};

}  // namespace nkigraph::interp

#endif  // NKIGRAPH_INTERP_RACE_DETECTOR_H_
