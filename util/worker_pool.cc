#include "util/worker_pool.h"

#include <algorithm>

namespace nkigraph {

int WorkerPool::MachineThreads() {
  return std::max(1, static_cast<int>(std::thread::hardware_concurrency()));
}

WorkerPool::WorkerPool(int threads) {
  for (int i = 1; i < std::max(1, threads); ++i) {
    workers_.emplace_back([this] { WorkerLoop(); });
  }
}

WorkerPool::~WorkerPool() {
  {
    absl::MutexLock lock(&mu_);
    stopping_ = true;
  }
  for (std::thread& t : workers_) t.join();
}

void WorkerPool::Drain(absl::FunctionRef<void(int)> task) {
  while (true) {
    int i;
    {
      absl::MutexLock lock(&mu_);
      if (next_ >= count_) return;
      i = next_++;
    }
    task(i);
  }
}

void WorkerPool::WorkerLoop() {
  int64_t seen = 0;
  while (true) {
    const absl::FunctionRef<void(int)>* task;
    {
      absl::MutexLock lock(&mu_);
      auto woken = [&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
        return stopping_ || batch_ != seen;
      };
      mu_.Await(absl::Condition(&woken));
      if (stopping_) return;
      seen = batch_;
      // A batch the other threads finished before this one woke.
      if (next_ >= count_) continue;
      task = task_;
      ++running_;
    }
    Drain(*task);
    absl::MutexLock lock(&mu_);
    --running_;
  }
}

void WorkerPool::Run(int count, absl::FunctionRef<void(int)> task) {
  if (workers_.empty() || count <= 1) {
    for (int i = 0; i < count; ++i) task(i);
    return;
  }
  {
    absl::MutexLock lock(&mu_);
    next_ = 0;
    count_ = count;
    task_ = &task;
    ++batch_;
    ++running_;
  }
  Drain(task);
  absl::MutexLock lock(&mu_);
  --running_;
  // Every task has been started once next_ reached count_; wait for the
  // threads still running one.
  auto finished = [&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    return running_ == 0;
  };
  mu_.Await(absl::Condition(&finished));
  task_ = nullptr;
}

}  // namespace nkigraph
