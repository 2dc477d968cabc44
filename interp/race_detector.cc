#include "interp/race_detector.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "util/diagnostic.h"
#include "util/status_macros.h"

namespace nkigraph::interp {

RaceDetector::RaceDetector(int num_ranks, int num_cores, MemoryBudget* budget)
    : enabled_(num_cores >= 2 && num_cores <= kMaxCores),
      num_ranks_(num_ranks),
      num_cores_(num_cores),
      budget_(budget) {
  if (!enabled_) return;
  ranks_ = std::make_unique<Rank[]>(num_ranks);
  programs_ =
      std::make_unique<Program[]>(static_cast<size_t>(num_ranks) * num_cores);
  // Every core starts in epoch 1, so epoch 0 means "no access yet".
  for (int r = 0; r < num_ranks; ++r) {
    ranks_[r].clocks.assign(static_cast<size_t>(num_cores) * num_cores, 0);
    for (int c = 0; c < num_cores; ++c) {
      ranks_[r].clocks[c * num_cores + c] = 1;
    }
  }
}

int64_t RaceDetector::intervals() const {
  if (!enabled_) return 0;
  int64_t total = 0;
  for (int p = 0; p < num_ranks_ * num_cores_; ++p) {
    total += programs_[p].intervals.load(std::memory_order_relaxed);
  }
  return total;
}

RaceDetector::~RaceDetector() {
  if (budget_ == nullptr || !enabled_) return;
  for (int p = 0; p < num_ranks_ * num_cores_; ++p) {
    budget_->Release(programs_[p].charged);
  }
}

void RaceDetector::BeginRun(int programs_here) {
  if (!enabled_ || budget_ == nullptr) return;
  const int programs = num_ranks_ * num_cores_;
  int64_t held = 0;
  for (int p = 0; p < programs; ++p) held += programs_[p].charged;
  max_state_bytes_ = budget_->available() + held;
  program_budget_ =
      max_state_bytes_ / (programs_here > 0 ? programs_here : programs);
}

absl::Status RaceDetector::ChargeGrowth(int rank, int core) {
  if (!enabled_) return absl::OkStatus();
  Program& self = programs_[rank * num_cores_ + core];
  const int64_t state = ProgramStateBytes(rank, core);
  if (state > program_budget_) {
    return DiagnosticError(
        absl::StatusCode::kResourceExhausted,
        MakeDiagnostic(
            DiagnosticKind::kResource,
            absl::StrCat("race-detection state for shared HBM needs more than ",
                         program_budget_,
                         " bytes for this program, its share of the ",
                         max_state_bytes_,
                         " the memory limit leaves after device memory (",
                         intervals(rank, core),
                         " access intervals; raise --memory-limit)")));
  }
  if (budget_ == nullptr || state <= self.charged) return absl::OkStatus();
  constexpr int64_t kStep = 64 << 10;
  const int64_t target =
      std::min(program_budget_, (state + kStep - 1) / kStep * kStep);
  // Within the shares BeginRun split this cannot fail unless something
  // outside the run charges the budget while it runs.
  NKI_RETURN_IF_ERROR(budget_->Charge(
      target - self.charged,
      absl::StrCat("race-detection state for shared HBM (",
                   intervals(rank, core), " access intervals)")));
  self.charged = target;
  return absl::OkStatus();
}

std::optional<RaceDetector::Conflict> RaceDetector::Access(int rank, int core,
                                                           int64_t offset,
                                                           int64_t length,
                                                           bool write,
                                                           uint32_t instr) {
  if (!enabled_ || length <= 0) return std::nullopt;
  absl::MutexLock lock(&ranks_[rank].mu);
  return AccessLocked(rank, core, offset, length, write, instr);
}

std::optional<RaceDetector::Conflict> RaceDetector::AccessStrided(
    int rank, int core, int64_t offset, int64_t pieces, int64_t stride,
    int64_t length, bool write, uint32_t instr, int64_t* piece) {
  if (!enabled_ || length <= 0 || pieces <= 0) return std::nullopt;
  absl::MutexLock lock(&ranks_[rank].mu);
  for (int64_t k = 0; k < pieces; ++k) {
    std::optional<Conflict> conflict =
        AccessLocked(rank, core, offset + k * stride, length, write, instr);
    if (conflict.has_value()) {
      *piece = k;
      return conflict;
    }
  }
  return std::nullopt;
}

std::optional<RaceDetector::Conflict> RaceDetector::AccessLocked(
    int rank, int core, int64_t offset, int64_t length, bool write,
    uint32_t instr) {
  Rank& r = ranks_[rank];
  const uint32_t* clock = &r.clocks[core * num_cores_];
  // Check the whole range first, against every other core; bytes another
  // core never accessed hold ByteState{}, which conflicts with nothing, so
  // its map need not visit them. The racing access reported is the one on
  // the lowest byte, a write before a read there, then the lowest core.
  std::optional<Conflict> conflict;
  for (int other = 0; other < num_cores_; ++other) {
    if (other == core) continue;
    const uint32_t known = clock[other];
    programs_[rank * num_cores_ + other].bytes.Visit(
        offset, offset + length,
        [&](int64_t begin, int64_t, const ByteState& state) {
          if (conflict.has_value() && begin >= conflict->offset) return true;
          if (state.write_epoch > known) {
            conflict = Conflict{begin, other, state.write_instr, true};
            return true;
          }
          if (write && state.read_epoch > known) {
            conflict = Conflict{begin, other, state.read_instr, false};
            return true;
          }
          return false;
        });
  }
  if (conflict) return conflict;
  const uint32_t epoch = clock[core];
  Program& self = programs_[rank * num_cores_ + core];
  self.bytes.Update(offset, offset + length, [&](ByteState& state) {
    if (write) {
      state.write_epoch = epoch;
      state.write_instr = instr;
    } else {
      state.read_epoch = epoch;
      state.read_instr = instr;
    }
  });
  self.intervals.store(self.bytes.size(), std::memory_order_relaxed);
  return std::nullopt;
}

void RaceDetector::Sync(int rank, absl::Span<const int> cores) {
  if (!enabled_) return;
  Rank& r = ranks_[rank];
  absl::MutexLock lock(&r.mu);
  std::vector<uint32_t> joined(num_cores_, 0);
  for (int c : cores) {
    for (int o = 0; o < num_cores_; ++o) {
      joined[o] = std::max(joined[o], r.clocks[c * num_cores_ + o]);
    }
  }
  for (int c : cores) {
    for (int o = 0; o < num_cores_; ++o)
      r.clocks[c * num_cores_ + o] = joined[o];
  }
  for (int c : cores) ++r.clocks[c * num_cores_ + c];
}

}  // namespace nkigraph::interp
