#include "ops/blas_threads.h"

#include <cblas.h>

#include "absl/base/const_init.h"
#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"

namespace nkigraph::ops {
namespace {

ABSL_CONST_INIT absl::Mutex holders_mu(absl::kConstInit);
int holders ABSL_GUARDED_BY(holders_mu) = 0;
// The count the first holder found, restored by the last.
int saved_threads ABSL_GUARDED_BY(holders_mu) = 0;

}  // namespace

SingleThreadedBlas::SingleThreadedBlas() {
  absl::MutexLock lock(&holders_mu);
  if (holders++ == 0) {
    saved_threads = openblas_get_num_threads();
    if (saved_threads != 1) openblas_set_num_threads(1);
  }
}

SingleThreadedBlas::~SingleThreadedBlas() {
  absl::MutexLock lock(&holders_mu);
  if (--holders == 0 && saved_threads != 1) {
    openblas_set_num_threads(saved_threads);
  }
}

int BlasThreads() { return openblas_get_num_threads(); }

}  // namespace nkigraph::ops
