#ifndef NKIGRAPH_UTIL_WORKER_POOL_H_
#define NKIGRAPH_UTIL_WORKER_POOL_H_

#include <atomic>
#include <cstdint>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/functional/function_ref.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"

namespace nkigraph {

// A fixed set of threads that runs one batch of tasks at a time, the
// calling thread taking part. Tasks are started in index order (a task
// may wait for one with a lower index: it has been started, so it will
// finish). The interpreter runs its programs on one; whole-graph analyses
// (validation, the index, the dependency analysis) split independent work
// over one; nc_matmul's kernel splits one product over one.
//
// Idle threads block. With a `spin` they first poll for a new batch that
// long after each batch (and the caller polls that long for the last
// tasks before it blocks): a product split into tens of microseconds of
// work per thread, handed over through a blocked thread, paid a futex
// wake-up and a reschedule each time (about 20-60 us on the development
// machine). The spin is bounded, so an idle pool burns no core, and a
// thread whose poll lost its core to another thread blocks at once for a
// while (on a machine with more runnable threads than cores a blocked
// thread is woken sooner than a polling one gets its turn).
class WorkerPool {
 public:
  // `threads` in all, the caller included; at least 1.
  explicit WorkerPool(int threads, absl::Duration spin = absl::ZeroDuration());
  ~WorkerPool();
  WorkerPool(const WorkerPool&) = delete;
  WorkerPool& operator=(const WorkerPool&) = delete;

  int threads() const { return static_cast<int>(workers_.size()) + 1; }

  // The machine's hardware threads (at least 1): the default size.
  static int MachineThreads();

  // Runs task(0) ... task(count - 1) and returns when all have returned.
  void Run(int count, absl::FunctionRef<void(int)> task);

 private:
  void WorkerLoop();
  // Takes and runs tasks of the current batch until none is left.
  void Drain(absl::FunctionRef<void(int)> task);

  const absl::Duration spin_;
  absl::Mutex mu_;
  // Bumped per Run. Written under mu_; read without it by spinning threads.
  std::atomic<int64_t> batch_ = 0;
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  int next_ ABSL_GUARDED_BY(mu_) = 0;   // the next task to start
  int count_ ABSL_GUARDED_BY(mu_) = 0;  // tasks in the batch
  // Threads inside Drain. Written under mu_; read without it by the
  // spinning caller.
  std::atomic<int> running_ = 0;
  const absl::FunctionRef<void(int)>* task_ ABSL_GUARDED_BY(mu_) = nullptr;
  std::vector<std::thread> workers_;
};

}  // namespace nkigraph

#endif  // NKIGRAPH_UTIL_WORKER_POOL_H_
