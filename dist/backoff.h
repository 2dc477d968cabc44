#ifndef NKIGRAPH_DIST_BACKOFF_H_
#define NKIGRAPH_DIST_BACKOFF_H_

#include <algorithm>
#include <chrono>
#include <thread>

namespace nkigraph::dist {

// How a process polling for a peer's message waits between polls: a few
// yields, then sleeps doubling up to a millisecond, so that processes
// sharing few cores (mpirun --oversubscribe) leave them to the process
// that is computing, and a message that comes soon is seen soon.
class Backoff {
 public:
  static constexpr int kYields = 63;
  static constexpr std::chrono::microseconds kFirstSleep{10};
  static constexpr std::chrono::microseconds kLongestSleep{1000};

  // What the next Pause() does: zero for a yield, else how long it sleeps.
  std::chrono::microseconds Next() {
    if (yields_ < kYields) {
      ++yields_;
      return std::chrono::microseconds(0);
    }
    const std::chrono::microseconds sleep = sleep_;
    sleep_ = std::min(kLongestSleep, sleep_ * 2);
    return sleep;
  }

  void Pause() {
    const std::chrono::microseconds sleep = Next();
    if (sleep.count() == 0) {
      std::this_thread::yield();
    } else {
      std::this_thread::sleep_for(sleep);
    }
  }

 private:
  int yields_ = 0;
  std::chrono::microseconds sleep_ = kFirstSleep;
};

}  // namespace nkigraph::dist

#endif  // NKIGRAPH_DIST_BACKOFF_H_
