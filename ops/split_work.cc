#include "ops/split_work.h"

#include <xmmintrin.h>

#include <algorithm>
#include <memory>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "ops/blas_threads.h"
#include "util/worker_pool.h"

namespace nkigraph::ops {
namespace {

// One product or row op uses the threads at a time; another that finds
// them busy runs on its own thread (its result is the same). They poll for
// the next split for kSplitSpin before they block (and the caller as long
// for the last tasks): a blocked helper cost each split a futex wake-up and
// a reschedule, about 20 us on the development machine (BM_PoolHandOff),
// and the gaps between tiled_matmul 2048^3's products were 43 us at the
// median and 92 us at the 90th percentile (under load), against ~170 us
// per product. Bounded, and yielding the core as it polls, so an idle run
// burns no core.
constexpr absl::Duration kSplitSpin = absl::Microseconds(100);

struct SplitPool {
  absl::Mutex mu;
  std::unique_ptr<WorkerPool> pool ABSL_GUARDED_BY(mu);
};
SplitPool& Splitter() {
  static SplitPool* const splitter = new SplitPool;
  return *splitter;
}

}  // namespace

void RunSplit(int threads, int tasks, absl::FunctionRef<void(int)> task) {
  threads = std::max(1, threads);
  if (threads > 1 && tasks > 1) {
    SplitPool& splitter = Splitter();
    if (splitter.mu.TryLock()) {
      // Exactly the lent threads: a pool left bigger by an earlier run would
      // put more threads (and their polling) on the programs' cores than
      // this run lends. The count changes between runs, not instructions.
      if (splitter.pool == nullptr || splitter.pool->threads() != threads) {
        splitter.pool = std::make_unique<WorkerPool>(threads, kSplitSpin);
      }
      // The caller's floating-point mode (rounding, flush to zero) on every
      // task: the pool's threads keep whatever they started with, and rows
      // computed on them must round as the caller's do.
      const unsigned int mode = _mm_getcsr();
      splitter.pool->Run(tasks, [&](int i) {
        if (_mm_getcsr() != mode) _mm_setcsr(mode);
        task(i);
      });
      splitter.mu.Unlock();
      return;
    }
  }
  for (int i = 0; i < tasks; ++i) task(i);
}

void ForRowRangesOfBigWork(int64_t rows, int64_t granule,
                           absl::FunctionRef<void(int64_t, int64_t)> run) {
  const int64_t granules = (rows + granule - 1) / granule;
  const int threads = LentThreads();
  if (threads <= 1 || granules <= 1) {
    run(0, rows);
    return;
  }
  // Twice as many tasks as threads: a thread that wakes late finds fewer
  // left rather than holding the caller up.
  const int tasks =
      static_cast<int>(std::min<int64_t>(granules, int64_t{2} * threads));
  RunSplit(threads, tasks, [&](int t) {
    const int64_t r0 = std::min(rows, granules * t / tasks * granule);
    const int64_t r1 = std::min(rows, granules * (t + 1) / tasks * granule);
    if (r0 < r1) run(r0, r1);
  });
}

}  // namespace nkigraph::ops
