#ifndef NKIGRAPH_OPS_BLAS_THREADS_H_
#define NKIGRAPH_OPS_BLAS_THREADS_H_

// How many threads one matmul instruction's BLAS call may use. A run whose
// programs leave threads of its allowance idle (one program, or fewer
// programs than threads) lends them to BLAS; a run whose programs use every
// thread keeps BLAS to one, so the two never oversubscribe the cores.
// Results do not depend on it: OpenBLAS divides a product's rows and
// columns among its threads, never a dot product, so every element is
// summed in the same order.

namespace nkigraph::ops {

// Sets BLAS's thread count for the scope (at least 1); restores the count
// it found when it ends. BLAS's count is process-wide: concurrent scopes in
// one process leave whichever count was set last, which changes speed,
// never results.
class ScopedBlasThreads {
 public:
  explicit ScopedBlasThreads(int threads);
  ~ScopedBlasThreads();
  ScopedBlasThreads(const ScopedBlasThreads&) = delete;
  ScopedBlasThreads& operator=(const ScopedBlasThreads&) = delete;

 private:
  int previous_;
};

}  // namespace nkigraph::ops

#endif  // NKIGRAPH_OPS_BLAS_THREADS_H_
