#ifndef NKIGRAPH_INTERP_PROGRESS_REPORTER_H_
#define NKIGRAPH_INTERP_PROGRESS_REPORTER_H_

// Reporting a run's progress (RunOptions::on_progress) from a thread of its
// own while the run goes on.

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <thread>

#include "interp/interpreter.h"

namespace nkigraph::interp {

// Calls on_progress every interval from its own thread while it lives,
// then once with `finished`.
class ProgressReporter {
 public:
  // `done` counts the instructions executed of `total`; called from the
  // reporting thread.
  ProgressReporter(const RunOptions& options, int64_t total,
                   std::function<int64_t()> done);
  ~ProgressReporter();
  ProgressReporter(const ProgressReporter&) = delete;
  ProgressReporter& operator=(const ProgressReporter&) = delete;

 private:
  void Loop();
  void Report(bool finished);

  const RunOptions& options_;
  const int64_t total_;
  const std::function<int64_t()> done_;
  const std::chrono::steady_clock::time_point start_ =
      std::chrono::steady_clock::now();
  std::mutex mu_;
  std::condition_variable cv_;
  bool stop_ = false;
  std::thread thread_;
};

}  // namespace nkigraph::interp

#endif  // NKIGRAPH_INTERP_PROGRESS_REPORTER_H_
