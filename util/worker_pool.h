#ifndef NKIGRAPH_UTIL_WORKER_POOL_H_
#define NKIGRAPH_UTIL_WORKER_POOL_H_

#include <cstdint>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/functional/function_ref.h"
#include "absl/synchronization/mutex.h"

namespace nkigraph {

// A fixed set of threads that runs one batch of tasks at a time, the
// calling thread taking part. Tasks are started in index order (a task
// may wait for one with a lower index: it has been started, so it will
// finish); idle threads block, they never spin. The interpreter runs its
// programs on one; whole-graph analyses (validation, the index, the
// dependency analysis) split independent work over one.
class WorkerPool {
 public:
  // `threads` in all, the caller included; at least 1.
  explicit WorkerPool(int threads);
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

  absl::Mutex mu_;
  int64_t batch_ ABSL_GUARDED_BY(mu_) = 0;  // bumped per Run
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  int next_ ABSL_GUARDED_BY(mu_) = 0;     // the next task to start
  int count_ ABSL_GUARDED_BY(mu_) = 0;    // tasks in the batch
  int running_ ABSL_GUARDED_BY(mu_) = 0;  // threads inside Drain
  const absl::FunctionRef<void(int)>* task_ ABSL_GUARDED_BY(mu_) = nullptr;
  std::vector<std::thread> workers_;
};

}  // namespace nkigraph

#endif  // NKIGRAPH_UTIL_WORKER_POOL_H_
