#include "interp/race_detector.h"

#include <algorithm>

#include "absl/strings/str_cat.h"

namespace nkigraph::interp {

bool RaceDetector::ByteState::operator==(const ByteState& o) const {
  return write_epoch == o.write_epoch && write_instr == o.write_instr &&
         write_core == o.write_core &&
         std::equal(read_epoch, read_epoch + kMaxCores, o.read_epoch) &&
         std::equal(read_instr, read_instr + kMaxCores, o.read_instr);
}

RaceDetector::RaceDetector(int num_ranks, int num_cores, MemoryBudget* budget)
    : enabled_(num_cores >= 2 && num_cores <= kMaxCores),
      num_cores_(num_cores),
      budget_(budget) {
  if (!enabled_) return;
  clocks_.assign(static_cast<size_t>(num_ranks) * num_cores * num_cores, 0);
  // Every core starts in epoch 1, so epoch 0 means "no access yet".
  for (int r = 0; r < num_ranks; ++r) {
    for (int c = 0; c < num_cores; ++c) Clock(r, c, c) = 1;
  }
  bytes_.resize(num_ranks);
}

RaceDetector::~RaceDetector() {
  if (budget_ != nullptr) budget_->Release(charged_);
}

absl::Status RaceDetector::ChargeGrowth() {
  constexpr int64_t kStep = 64 << 10;
  const int64_t state = StateBytes();
  if (budget_ == nullptr || state <= charged_) return absl::OkStatus();
  const int64_t more = (state - charged_ + kStep - 1) / kStep * kStep;
  if (absl::Status status = budget_->Charge(
          more, absl::StrCat("race-detection state for shared HBM (",
                             intervals_, " access intervals)"));
      !status.ok()) {
    return status;
  }
  charged_ += more;
  return absl::OkStatus();
}

std::optional<RaceDetector::Conflict> RaceDetector::Access(int rank, int core,
                                                           int64_t offset,
                                                           int64_t length,
                                                           bool write,
                                                           uint32_t instr) {
  if (!enabled_ || length <= 0) return std::nullopt;
  IntervalMap<ByteState>& map = bytes_[rank];
  // Check the whole range first; bytes never accessed hold ByteState{},
  // which conflicts with nothing, so the map need not visit them.
  std::optional<Conflict> conflict;
  map.Visit(
      offset, offset + length,
      [&](int64_t begin, int64_t, const ByteState& state) {
        if (state.write_core != kNoCore && state.write_core != core &&
            state.write_epoch > Clock(rank, core, state.write_core)) {
          conflict = Conflict{begin, state.write_core, state.write_instr, true};
          return true;
        }
        if (!write) return false;
        for (int other = 0; other < num_cores_; ++other) {
          if (other != core &&
              state.read_epoch[other] > Clock(rank, core, other)) {
            conflict = Conflict{begin, other, state.read_instr[other], false};
            return true;
          }
        }
        return false;
      });
  if (conflict) return conflict;
  const uint32_t epoch = Clock(rank, core, core);
  const int64_t before = map.size();
  map.Update(offset, offset + length, [&](ByteState& state) {
    if (write) {
      state.write_core = static_cast<uint8_t>(core);
      state.write_epoch = epoch;
      state.write_instr = instr;
    } else {
      state.read_epoch[core] = epoch;
      state.read_instr[core] = instr;
    }
  });
  intervals_ += map.size() - before;
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
