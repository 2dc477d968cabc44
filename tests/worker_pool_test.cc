#include "util/worker_pool.h"

#include <pthread.h>
#include <time.h>

#include <atomic>
#include <chrono>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/time.h"
#include "gtest/gtest.h"

namespace nkigraph {
namespace {

// Every task of every batch runs exactly once, on pools that block and
// pools that spin, batch after batch (a worker still spinning on the
// last batch, or still leaving it, must not run a task twice or miss one).
TEST(WorkerPoolTest, RunsEveryTaskOnceInEveryBatch) {
  for (const absl::Duration spin :
       {absl::ZeroDuration(), absl::Microseconds(50)}) {
    for (const int threads : {1, 2, 4}) {
      SCOPED_TRACE(absl::StrCat("spin ", absl::FormatDuration(spin),
                                " threads ", threads));
      WorkerPool pool(threads, spin);
      EXPECT_EQ(pool.threads(), threads);
      for (int batch = 0; batch < 300; ++batch) {
        const int count = batch % 19;
        std::vector<std::atomic<int>> runs(count);
        pool.Run(count, [&](int i) { runs[i].fetch_add(1); });
        for (int i = 0; i < count; ++i) {
          ASSERT_EQ(runs[i].load(), 1) << "batch " << batch << " task " << i;
        }
      }
    }
  }
}

// A task may wait for one with a lower index: it has been started, so
// the batch finishes (a pool that let a thread hold a later task while the
// earlier one waited unstarted would hang here).
TEST(WorkerPoolTest, TaskMayWaitForAnEarlierOne) {
  for (const absl::Duration spin :
       {absl::ZeroDuration(), absl::Microseconds(50)}) {
    WorkerPool pool(3, spin);
    for (int batch = 0; batch < 50; ++batch) {
      constexpr int kCount = 12;
      std::vector<std::atomic<bool>> done(kCount);
      pool.Run(kCount, [&](int i) {
        if (i > 0) {
          while (!done[i - 1].load()) std::this_thread::yield();
        }
        done[i].store(true);
      });
      for (int i = 0; i < kCount; ++i) EXPECT_TRUE(done[i].load());
    }
  }
}

double CpuSeconds(clockid_t clock) {
  timespec t;
  clock_gettime(clock, &t);
  return static_cast<double>(t.tv_sec) + t.tv_nsec * 1e-9;
}

// The spin is bounded: a spinning pool left idle stops burning a core
// (polling through the whole sleep would cost its 200 ms). The worker's own
// CPU clock, not the process's: other threads of the test binary (BLAS's)
// may run meanwhile.
TEST(WorkerPoolTest, IdleSpinningPoolUsesNoCpu) {
  WorkerPool pool(2, absl::Milliseconds(2));
  // Whichever task the worker takes reports the worker's CPU clock; one
  // the caller takes waits for it (the worker polls from the start, so it
  // may take either task).
  const pthread_t caller = pthread_self();
  clockid_t worker_clock;
  std::atomic<bool> worker_started = false;
  pool.Run(2, [&](int) {
    if (!pthread_equal(pthread_self(), caller)) {
      ASSERT_EQ(pthread_getcpuclockid(pthread_self(), &worker_clock), 0);
      worker_started.store(true);
    } else {
      while (!worker_started.load()) std::this_thread::yield();
    }
  });
  ASSERT_TRUE(worker_started.load());
  const double before = CpuSeconds(worker_clock);
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  const double used = CpuSeconds(worker_clock) - before;
  // At most the 2 ms spin, plus scheduling noise on a loaded machine; a
  // worker that kept spinning would use most of the 200 ms.
  EXPECT_LT(used, 0.050) << used << " s of the worker's CPU while idle";
  // And it still wakes for the next batch once blocked.
  std::atomic<int> ran = 0;
  pool.Run(4, [&](int) { ran.fetch_add(1); });
  EXPECT_EQ(ran.load(), 4);
}

}  // namespace
}  // namespace nkigraph
