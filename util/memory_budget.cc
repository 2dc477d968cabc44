#include "util/memory_budget.h"

#include <algorithm>
#include <limits>
#include <utility>

#include "absl/strings/str_cat.h"
#include "util/diagnostic.h"

namespace nkigraph {

bool MemoryBudget::TryCharge(int64_t bytes, int64_t& held) {
  held = used_.load(std::memory_order_relaxed);
  while (true) {
    if (bytes > limit_ - held) return false;
    if (used_.compare_exchange_weak(held, held + bytes,
                                    std::memory_order_relaxed)) {
      RaisePeak(held + bytes);
      return true;
    }
  }
}

void MemoryBudget::RaisePeak(int64_t now) {
  int64_t peak = peak_.load(std::memory_order_relaxed);
  while (now > peak &&
         !peak_.compare_exchange_weak(peak, now, std::memory_order_relaxed)) {
  }
}

absl::Status MemoryBudget::Charge(int64_t bytes, absl::string_view what) {
  if (bytes < 0) {
    return absl::InternalError(
        absl::StrCat("negative memory charge for ", what));
  }
  int64_t held = 0;
  if (TryCharge(bytes, held)) return absl::OkStatus();
  return DiagnosticError(
      absl::StatusCode::kResourceExhausted,
      MakeDiagnostic(DiagnosticKind::kResource,
                     absl::StrCat("the run needs ", bytes, " more bytes of ",
                                  what, "; with the ", held,
                                  " bytes already held that is over the "
                                  "limit of ",
                                  limit_, " (raise --memory-limit)")));
}

void MemoryBudget::ChargeTouched(int64_t bytes, absl::string_view what) {
  int64_t held = 0;
  if (TryCharge(bytes, held)) return;
  const int64_t now = used_.fetch_add(bytes, std::memory_order_relaxed) + bytes;
  RaisePeak(now);
  if (overdrawn_.load(std::memory_order_acquire)) return;
  std::lock_guard<std::mutex> lock(mu_);
  if (overdrawn_.load(std::memory_order_relaxed)) return;
  overdrawn_need_ = now;
  overdrawn_what_ = std::string(what);
  overdrawn_.store(true, std::memory_order_release);
}

absl::Status MemoryBudget::Overdrawn() const {
  if (!overdrawn_.load(std::memory_order_acquire)) return absl::OkStatus();
  std::lock_guard<std::mutex> lock(mu_);
  return DiagnosticError(
      absl::StatusCode::kResourceExhausted,
      MakeDiagnostic(
          DiagnosticKind::kResource,
          absl::StrCat("the run needed ", overdrawn_need_, " bytes (",
                       overdrawn_what_, "), over the limit of ", limit_,
                       " (raise --memory-limit)")));
}

void MemoryBudget::Release(int64_t bytes) {
  used_.fetch_sub(bytes, std::memory_order_relaxed);
}

ScopedCharge::ScopedCharge(MemoryBudget* budget, int64_t bytes,
                           absl::string_view what) {
  if (budget == nullptr) return;
  status_ = budget->Charge(bytes, what);
  if (status_.ok()) {
    budget_ = budget;
    bytes_ = bytes;
  }
}

ScopedCharge::ScopedCharge(ScopedCharge&& other) noexcept
    : budget_(std::exchange(other.budget_, nullptr)),
      bytes_(std::exchange(other.bytes_, 0)),
      status_(std::move(other.status_)) {}

ScopedCharge& ScopedCharge::operator=(ScopedCharge&& other) noexcept {
  if (this != &other) {
    if (budget_ != nullptr) budget_->Release(bytes_);
    budget_ = std::exchange(other.budget_, nullptr);
    bytes_ = std::exchange(other.bytes_, 0);
    status_ = std::move(other.status_);
  }
  return *this;
}

ScopedCharge::~ScopedCharge() {
  if (budget_ != nullptr) budget_->Release(bytes_);
}

int64_t HostArrayBytes(int64_t elements, bool raw_bits16) {
  const int64_t size = raw_bits16 ? 2 : 4;
  if (elements <= 0) return 0;
  if (elements > std::numeric_limits<int64_t>::max() / size) {
    return std::numeric_limits<int64_t>::max();
  }
  return elements * size;
}

}  // namespace nkigraph
