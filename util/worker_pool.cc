#include "util/worker_pool.h"

#include <algorithm>
#include <chrono>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#endif

namespace nkigraph {
namespace {

// Polls `done` for up to `spin`; whether it became true.
template <typename Done>
bool SpinUntil(absl::Duration spin, Done done) {
  if (spin <= absl::ZeroDuration()) return done();
  using Clock = std::chrono::steady_clock;
  const Clock::time_point end = Clock::now() + absl::ToChronoNanoseconds(spin);
  while (true) {
    // The clock read (tens of ns) once per 32 polls (a few us).
    for (int i = 0; i < 32; ++i) {
      if (done()) return true;
#if defined(__x86_64__) || defined(__i386__)
      _mm_pause();
#endif
    }
    if (Clock::now() >= end) return done();
    // Another thread waiting for this core (a loaded machine) gets it.
    std::this_thread::yield();
  }
}

}  // namespace

int WorkerPool::MachineThreads() {
  return std::max(1, static_cast<int>(std::thread::hardware_concurrency()));
}

WorkerPool::WorkerPool(int threads, absl::Duration spin) : spin_(spin) {
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
    SpinUntil(spin_,
              [&] { return batch_.load(std::memory_order_acquire) != seen; });
    const absl::FunctionRef<void(int)>* task;
    {
      absl::MutexLock lock(&mu_);
      auto woken = [&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
        return stopping_ || batch_.load(std::memory_order_relaxed) != seen;
      };
      mu_.Await(absl::Condition(&woken));
      if (stopping_) return;
      seen = batch_.load(std::memory_order_relaxed);
      // A batch the other threads finished before this one woke.
      if (next_ >= count_) continue;
      task = task_;
      running_.fetch_add(1, std::memory_order_relaxed);
    }
    Drain(*task);
    absl::MutexLock lock(&mu_);
    running_.fetch_sub(1, std::memory_order_release);
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
    running_.fetch_add(1, std::memory_order_relaxed);
    batch_.fetch_add(1, std::memory_order_release);
  }
  Drain(task);
  {
    absl::MutexLock lock(&mu_);
    running_.fetch_sub(1, std::memory_order_relaxed);
  }
  // Every task has been started once next_ reached count_, and a thread
  // that starts one counts itself in running_ first (under mu_); wait for
  // the threads still running one.
  SpinUntil(spin_,
            [&] { return running_.load(std::memory_order_acquire) == 0; });
  absl::MutexLock lock(&mu_);
  auto finished = [&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    return running_.load(std::memory_order_relaxed) == 0;
  };
  mu_.Await(absl::Condition(&finished));
  task_ = nullptr;
}

}  // namespace nkigraph
