#include "ops/blas_threads.h"

#include <cblas.h>

#include <algorithm>

namespace nkigraph::ops {

ScopedBlasThreads::ScopedBlasThreads(int threads)
    : previous_(openblas_get_num_threads()) {
  openblas_set_num_threads(std::max(1, threads));
}

ScopedBlasThreads::~ScopedBlasThreads() { openblas_set_num_threads(previous_); }

}  // namespace nkigraph::ops
