#ifndef NKIGRAPH_OPS_BLAS_THREADS_H_
#define NKIGRAPH_OPS_BLAS_THREADS_H_

// How many threads one instruction may use (nc_matmul's kernel,
// ops/matmul_kernel.h, splits its product over LentThreads(), the big row
// ops their rows, ops/split_work.h; BLAS calls elsewhere use BLAS's own
// count, which the scope sets alike). A run whose programs leave threads of
// its allowance idle (one program, or fewer programs than threads) lends
// them to BLAS; a run whose programs use every thread keeps BLAS to one:
// OpenBLAS's idle workers spin (sched_yield) for a while after every call, on
// the very cores the programs run on (a 16-rank fgcc run spent about 40% of its
// time there, and took 1.7x as long). Results do not depend on it: OpenBLAS
// divides a product's rows and columns among its threads, never a dot product,
// so every element is summed in the same order.

namespace nkigraph::ops {

// Sets BLAS's thread count for the scope (at least 1). BLAS's count is
// process-wide, so scopes alive at once in one process (interpreters
// running side by side) count themselves: while several are alive BLAS
// runs the fewest threads any of them asked for, so none oversubscribes
// the cores, and the last to end restores the count the first found.
class ScopedBlasThreads {
 public:
  explicit ScopedBlasThreads(int threads);
  ~ScopedBlasThreads();
  ScopedBlasThreads(const ScopedBlasThreads&) = delete;
  ScopedBlasThreads& operator=(const ScopedBlasThreads&) = delete;
};

// BLAS's thread count now.
int BlasThreads();

// The threads lent to one instruction now: the count the live scopes
// settled on (the fewest any asked for), 1 outside any scope. Kept here
// rather than read back from BLAS, which a single-threaded BLAS build
// would always answer with 1.
int LentThreads();

}  // namespace nkigraph::ops

#endif  // NKIGRAPH_OPS_BLAS_THREADS_H_
