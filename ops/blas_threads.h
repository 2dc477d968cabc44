#ifndef NKIGRAPH_OPS_BLAS_THREADS_H_
#define NKIGRAPH_OPS_BLAS_THREADS_H_

namespace nkigraph::ops {

// Holds OpenBLAS at one thread while the interpreter's own worker threads
// run programs. OpenBLAS's idle workers spin (sched_yield) for a while
// after every call, on the very cores the programs run on: a 16-rank fgcc
// run spent about 40% of its time there and took 1.7x as long. The thread
// count is process-wide, so holders count themselves: the first sets one
// thread, the last restores the count it found, and interpreters running
// side by side in one process never see it change under them.
class SingleThreadedBlas {
 public:
  SingleThreadedBlas();
  ~SingleThreadedBlas();
  SingleThreadedBlas(const SingleThreadedBlas&) = delete;
  SingleThreadedBlas& operator=(const SingleThreadedBlas&) = delete;
};

// OpenBLAS's thread count now.
int BlasThreads();

}  // namespace nkigraph::ops

#endif  // NKIGRAPH_OPS_BLAS_THREADS_H_
