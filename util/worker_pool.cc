#include "util/worker_pool.h"

#include <sys/resource.h>

#include <algorithm>
#include <chrono>
#include <cstdint>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#endif

namespace nkigraph {
namespace {

// Context switches of the calling thread it did not ask for: preemptions,
// and yields that ran another thread.
int64_t InvoluntarySwitches() {
  rusage usage;
  if (getrusage(RUSAGE_THREAD, &usage) != 0) return 0;
  return usage.ru_nivcsw;
}

// Polls `done` for up to `spin`; whether it became true. A thread whose
// poll lost its core to another thread skips the next kSkipAfterContention
// polls (it blocks at once): on a machine with more runnable threads than
// cores a polling thread used up its share and then waited behind the
// others, where a blocked one is woken first (BM_PoolHandOff at load 9-10:
// the polling helper started no task of most batches, the blocking one
// half of them).
constexpr int kSkipAfterContention = 100;

bool SpinUntil(absl::Duration spin, absl::FunctionRef<bool()> done) {
  thread_local int skip = 0;
  if (spin <= absl::ZeroDuration()) return done();
  if (skip > 0) {
    --skip;
    return done();
  }
  const int64_t switches = InvoluntarySwitches();
  using Clock = std::chrono::steady_clock;
  const Clock::time_point end = Clock::now() + absl::ToChronoNanoseconds(spin);
  bool ok = false;
  while (!ok) {
    // The clock read (tens of ns) once per 32 polls (a few us).
    for (int i = 0; i < 32 && !ok; ++i) {
      ok = done();
#if defined(__x86_64__) || defined(__i386__)
      if (!ok) _mm_pause();
#endif
    }
    if (ok || Clock::now() >= end) break;
    // Another thread waiting for this core (a loaded machine) gets it.
    std::this_thread::yield();
  }
  if (InvoluntarySwitches() != switches) skip = kSkipAfterContention;
  return ok || done();
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
