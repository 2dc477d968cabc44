#include "interp/race_detector.h"

#include <algorithm>

namespace nkigraph::interp {

RaceDetector::RaceDetector(int num_ranks, int num_cores, int64_t hbm_bytes)
    : enabled_(num_cores >= 2 && num_cores <= kMaxCores),
      num_cores_(num_cores),
      hbm_bytes_(hbm_bytes) {
  if (!enabled_) return;
  clocks_.assign(static_cast<size_t>(num_ranks) * num_cores * num_cores, 0);
  // Every core starts in epoch 1, so epoch 0 means "no access yet".
  for (int r = 0; r < num_ranks; ++r) {
    for (int c = 0; c < num_cores; ++c) Clock(r, c, c) = 1;
  }
  bytes_.resize(static_cast<size_t>(num_ranks) * hbm_bytes);
}

int64_t RaceDetector::BytesNeeded(int num_ranks, int num_cores,
                                  int64_t hbm_bytes) {
  if (num_cores < 2) return 0;
  return static_cast<int64_t>(num_ranks) * hbm_bytes *
         static_cast<int64_t>(sizeof(ByteState));
}

std::optional<RaceDetector::Conflict> RaceDetector::Access(
    int rank, int core, int64_t offset, int64_t length, bool write,
    uint32_t instr) {
  if (!enabled_) return std::nullopt;
  const uint32_t epoch = Clock(rank, core, core);
  ByteState* state = &bytes_[static_cast<size_t>(rank) * hbm_bytes_ + offset];
  for (int64_t i = 0; i < length; ++i, ++state) {
    if (state->write_core != kNoCore && state->write_core != core &&
        state->write_epoch > Clock(rank, core, state->write_core)) {
      return Conflict{state->write_core, state->write_instr, true};
    }
    if (write) {
      for (int other = 0; other < num_cores_; ++other) {
        if (other != core && state->read_epoch[other] > Clock(rank, core, other)) {
          return Conflict{other, state->read_instr[other], false};
        }
      }
      state->write_core = static_cast<uint8_t>(core);
      state->write_epoch = epoch;
      state->write_instr = instr;
    } else {
      state->read_epoch[core] = epoch;
      state->read_instr[core] = instr;
    }
  }
  return std::nullopt;
}

void RaceDetector::Sync(int rank, absl::Span<const int> cores) {
  if (!enabled_) return;
  std::vector<uint32_t> joined(num_cores_, 0);
  for (int c : cores) {
    for (int o = 0; o < num_cores_; ++o) {
      joined[o] = std::max(joined[o], Clock(rank, c, o));
    }
  }
  for (int c : cores) {
    for (int o = 0; o < num_cores_; ++o) Clock(rank, c, o) = joined[o];
  }
  for (int c : cores) ++Clock(rank, c, c);
}

}  // namespace nkigraph::interp
