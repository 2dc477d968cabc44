// Reporting a run's progress from a thread of its own (see
// progress_reporter.h).
#include "interp/progress_reporter.h"

#include <algorithm>
#include <utility>

namespace nkigraph::interp {

ProgressReporter::ProgressReporter(const RunOptions& options, int64_t total,
                                   std::function<int64_t()> done)
    : options_(options), total_(total), done_(std::move(done)) {
  if (!options_.on_progress) return;
  thread_ = std::thread([this] { Loop(); });
}

ProgressReporter::~ProgressReporter() {
  if (!thread_.joinable()) return;
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  thread_.join();
  Report(/*finished=*/true);
}

void ProgressReporter::Loop() {
  const auto interval = std::chrono::duration<double>(
      std::max(0.01, options_.progress_interval_seconds));
  std::unique_lock<std::mutex> lock(mu_);
  while (!cv_.wait_for(lock, interval, [&] { return stop_; })) {
    lock.unlock();
    Report(/*finished=*/false);
    lock.lock();
  }
}

void ProgressReporter::Report(bool finished) {
  RunOptions::Progress p;
  p.done = done_();
  p.total = total_;
  p.elapsed_seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start_)
          .count();
  p.finished = finished;
  options_.on_progress(p);
}

}  // namespace nkigraph::interp
