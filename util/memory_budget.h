#ifndef NKIGRAPH_UTIL_MEMORY_BUDGET_H_
#define NKIGRAPH_UTIL_MEMORY_BUDGET_H_

// One account of the bytes a run holds, whoever allocates them: device
// memory and its shadow state, race-detection state, host arrays (inputs
// read from files, random inputs, outputs read back, a reference's
// outputs). `--memory-limit` is its limit. The interpreter, host I/O and
// the verbs share one budget, so the limit bounds their sum.
//
// Charge before allocating, release after freeing. Thread-safe: charges
// from several threads add up exactly, and a charge that would pass the
// limit is refused without being recorded.

#include <atomic>
#include <cstdint>
#include <mutex>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"

namespace nkigraph {

class MemoryBudget {
 public:
  static constexpr int64_t kDefaultLimit = int64_t{8} << 30;  // 8 GiB

  explicit MemoryBudget(int64_t limit_bytes = kDefaultLimit)
      : limit_(limit_bytes) {}
  MemoryBudget(const MemoryBudget&) = delete;
  MemoryBudget& operator=(const MemoryBudget&) = delete;

  // Records `bytes` more held for `what`, a noun phrase ("device memory
  // and its shadow state", "host memory for output 'out'"), or refuses
  // with ResourceExhausted carrying a resource diagnostic: "the run needs
  // N more bytes of <what>; with the M bytes already held that is over the
  // limit of L (raise --memory-limit)". Negative `bytes` are an internal
  // error.
  absl::Status Charge(int64_t bytes, absl::string_view what);
  // Records `bytes` more held for `what` even past the limit: memory a run
  // already touched (a page of shadow state a write needed). Past the
  // limit, Overdrawn() then says so, for the run to stop with it; nothing
  // is formatted here, as it may be called for every page past the limit.
  void ChargeTouched(int64_t bytes, absl::string_view what);
  // The error of the first ChargeTouched past the limit, naming its
  // `what`; OK if none.
  absl::Status Overdrawn() const;
  // Gives back bytes charged earlier.
  void Release(int64_t bytes);

  int64_t limit() const { return limit_; }
  int64_t used() const { return used_.load(std::memory_order_relaxed); }
  // The most ever held at once.
  int64_t peak() const { return peak_.load(std::memory_order_relaxed); }
  int64_t available() const { return limit_ - used(); }

 private:
  // Adds `bytes` to what is held unless that passes the limit; `held` is
  // what was held before.
  bool TryCharge(int64_t bytes, int64_t& held);
  // Raises the peak to `now` if it is higher.
  void RaisePeak(int64_t now);

  const int64_t limit_;
  std::atomic<int64_t> used_{0};
  std::atomic<int64_t> peak_{0};
  // Set once, by the first ChargeTouched past the limit, under `mu_`.
  std::atomic<bool> overdrawn_{false};
  mutable std::mutex mu_;
  int64_t overdrawn_need_ = 0;
  std::string overdrawn_what_;
};

// A charge released when it goes out of scope (a temporary host array).
class ScopedCharge {
 public:
  ScopedCharge() = default;
  // Charges `bytes` for `what`; check status() before using the memory.
  ScopedCharge(MemoryBudget* budget, int64_t bytes, absl::string_view what);
  ScopedCharge(ScopedCharge&& other) noexcept;
  ScopedCharge& operator=(ScopedCharge&& other) noexcept;
  ~ScopedCharge();

  const absl::Status& status() const { return status_; }

 private:
  MemoryBudget* budget_ = nullptr;
  int64_t bytes_ = 0;
  absl::Status status_;
};

// Host bytes of an array of `elements` values in the .npy exchange form of
// `dtype` (4 per value; 2 for raw bits), saturating at INT64_MAX.
int64_t HostArrayBytes(int64_t elements, bool raw_bits16 = false);

}  // namespace nkigraph

#endif  // NKIGRAPH_UTIL_MEMORY_BUDGET_H_
