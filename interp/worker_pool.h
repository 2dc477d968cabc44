#ifndef NKIGRAPH_INTERP_WORKER_POOL_H_
#define NKIGRAPH_INTERP_WORKER_POOL_H_

// The interpreter runs its programs on the pool the graph analyses use.
#include "util/worker_pool.h"

namespace nkigraph::interp {
using ::nkigraph::WorkerPool;
}  // namespace nkigraph::interp

#endif  // NKIGRAPH_INTERP_WORKER_POOL_H_
