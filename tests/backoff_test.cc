#include "dist/backoff.h"

#include <time.h>

#include <chrono>
#include <vector>

#include "gtest/gtest.h"

namespace nkigraph::dist {
namespace {

using std::chrono::microseconds;

// The schedule, worked by hand: 63 yields, then 10, 20, 40, ..., 640 us,
// then a millisecond for as long as the wait lasts.
TEST(BackoffTest, YieldsThenSleepsDoublingToAMillisecond) {
  Backoff backoff;
  for (int i = 0; i < 63; ++i) {
    ASSERT_EQ(backoff.Next(), microseconds(0)) << "poll " << i;
  }
  const std::vector<int> want = {10, 20, 40, 80, 160, 320, 640, 1000, 1000};
  for (int us : want) EXPECT_EQ(backoff.Next(), microseconds(us));
  for (int i = 0; i < 1000; ++i) ASSERT_EQ(backoff.Next(), microseconds(1000));
}

double ThreadCpuSeconds() {
  timespec t;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return static_cast<double>(t.tv_sec) + t.tv_nsec * 1e-9;
}

// What the schedule is for: a process polling for 200 ms leaves the core
// to the others. Polling without sleeping would use all of the 200 ms.
// (How often it polls is the schedule above: on a loaded machine the
// yields and sleeps take longer than asked, so a count of polls is not.)
TEST(BackoffTest, APollingWaitUsesLittleCpu) {
  Backoff backoff;
  const double cpu_before = ThreadCpuSeconds();
  const auto end =
      std::chrono::steady_clock::now() + std::chrono::milliseconds(200);
  while (std::chrono::steady_clock::now() < end) backoff.Pause();
  const double used = ThreadCpuSeconds() - cpu_before;
  EXPECT_LT(used, 0.050) << used << " s of CPU";
}

}  // namespace
}  // namespace nkigraph::dist
