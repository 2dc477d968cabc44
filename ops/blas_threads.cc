#include "ops/blas_threads.h"

#include <cblas.h>

#include <algorithm>
#include <atomic>

#include "absl/base/const_init.h"
#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"

namespace nkigraph::ops {
namespace {

ABSL_CONST_INIT absl::Mutex scopes_mu(absl::kConstInit);
int live_scopes ABSL_GUARDED_BY(scopes_mu) = 0;
// The count the first live scope found, restored by the last.
int found_threads ABSL_GUARDED_BY(scopes_mu) = 0;
// LentThreads(): read by every big instruction, so not under the mutex.
std::atomic<int> lent_threads{1};

}  // namespace

ScopedBlasThreads::ScopedBlasThreads(int threads) {
  threads = std::max(1, threads);
  absl::MutexLock lock(&scopes_mu);
  const int now = openblas_get_num_threads();
  if (live_scopes++ == 0) {
    found_threads = now;
  } else {
    threads = std::min(threads, now);
  }
  if (threads != now) openblas_set_num_threads(threads);
  lent_threads.store(
      live_scopes == 1 ? threads : std::min(threads, lent_threads.load()),
      std::memory_order_relaxed);
}

ScopedBlasThreads::~ScopedBlasThreads() {
  absl::MutexLock lock(&scopes_mu);
  if (--live_scopes == 0) {
    lent_threads.store(1, std::memory_order_relaxed);
    if (openblas_get_num_threads() != found_threads) {
      openblas_set_num_threads(found_threads);
    }
  }
}

int BlasThreads() { return openblas_get_num_threads(); }

int LentThreads() { return lent_threads.load(std::memory_order_relaxed); }

}  // namespace nkigraph::ops
