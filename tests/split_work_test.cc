#include "ops/split_work.h"

#include <atomic>
#include <cstdint>
#include <vector>

#include "absl/synchronization/mutex.h"
#include "gtest/gtest.h"
#include "ops/blas_threads.h"

namespace nkigraph::ops {
namespace {

struct Ranges {
  absl::Mutex mu;
  std::vector<std::pair<int64_t, int64_t>> seen;
};

// Calls ForRowRanges and checks that the ranges cover [0, rows) once each,
// start on granule boundaries, and are not empty; returns how many there
// were.
int CoveredOnce(int64_t rows, int64_t work, int64_t granule) {
  Ranges ranges;
  std::vector<std::atomic<int>> visits(rows);
  ForRowRanges(rows, work, granule, [&](int64_t r0, int64_t r1) {
    {
      absl::MutexLock lock(&ranges.mu);
      ranges.seen.emplace_back(r0, r1);
    }
    for (int64_t r = r0; r < r1; ++r) visits[r].fetch_add(1);
  });
  for (int64_t r = 0; r < rows; ++r) {
    EXPECT_EQ(visits[r].load(), 1) << "row " << r << " of " << rows;
  }
  for (const auto& [r0, r1] : ranges.seen) {
    EXPECT_LT(r0, r1);
    EXPECT_EQ(r0 % granule, 0) << "range [" << r0 << ", " << r1 << ")";
  }
  return static_cast<int>(ranges.seen.size());
}

TEST(SplitWorkTest, RowRangesCoverEveryRowOnceOnGranuleBoundaries) {
  const ScopedBlasThreads lend(4);
  ASSERT_EQ(LentThreads(), 4);
  for (const int64_t rows : {1, 2, 15, 16, 17, 72, 128, 200}) {
    for (const int64_t granule : {1, 16}) {
      SCOPED_TRACE(testing::Message() << rows << " rows, granule " << granule);
      const int calls = CoveredOnce(rows, kMinRowSplitWork, granule);
      // Split whenever there are two granules or more, into at most twice
      // the lent threads.
      const int64_t granules = (rows + granule - 1) / granule;
      if (granules > 1) {
        EXPECT_GT(calls, 1);
        EXPECT_LE(calls, 8);
      } else {
        EXPECT_EQ(calls, 1);
      }
    }
  }
}

TEST(SplitWorkTest, SmallWorkAndNoLentThreadsRunInOneCall) {
  {
    const ScopedBlasThreads lend(4);
    EXPECT_EQ(CoveredOnce(128, kMinRowSplitWork - 1, 1), 1);
    EXPECT_EQ(CoveredOnce(128, 1000, 1), 1);
  }
  const ScopedBlasThreads one(1);
  EXPECT_EQ(CoveredOnce(128, kMinRowSplitWork * 8, 1), 1);
}

// A split started while another holds the pool runs on the caller's
// thread, all of its tasks, and finishes (no waiting for the pool).
TEST(SplitWorkTest, ASplitInsideASplitRunsOnItsOwnThread) {
  std::atomic<int> inner_tasks = 0;
  RunSplit(2, 2, [&](int) {
    RunSplit(2, 3, [&](int) { inner_tasks.fetch_add(1); });
  });
  EXPECT_EQ(inner_tasks.load(), 6);
}

}  // namespace
}  // namespace nkigraph::ops
