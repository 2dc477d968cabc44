#ifndef NKIGRAPH_OPS_SPLIT_WORK_H_
#define NKIGRAPH_OPS_SPLIT_WORK_H_

#include <cstdint>
#include <limits>

#include "absl/functional/function_ref.h"

namespace nkigraph::ops {

// Runs task(0) ... task(tasks - 1), on up to `threads` threads (the
// caller's included) when the work is split: the threads a run's programs
// leave idle (ops/blas_threads.h's LentThreads()) are lent to the one
// instruction executing, whose product (nc_matmul) or rows (the row ops)
// are cut into tasks that touch disjoint output. The threads are one
// process-wide pool, started on first use; one instruction uses them at a
// time, and another that finds them busy runs its tasks on its own thread.
// Which thread runs a task never changes its result, so callers stay bit
// for bit the same at any thread count.
void RunSplit(int threads, int tasks, absl::FunctionRef<void(int)> task);

// Below this many elements a row op's second thread costs more in its
// hand-off than it saves. Measured in a build with every size split (both
// thresholds at 4k; bench/interp_bench BM_RowOpSplit, the median of 5 runs
// of its median of 7 alternations, on an Intel Xeon at load 0.5-0.9), two
// threads took, against one: an exp activation 1.02x at 32k elements, 0.81x
// at 64k, 0.68x at 128k; a two-stage tensor_scalar 1.00x, 0.88x, 0.79x.
inline constexpr int64_t kMinRowSplitWork = int64_t{1} << 16;
// The same for the row ops that do least per element, where the rows'
// memory is most of the cost: tensor_tensor (add) took 1.12x at 64k, 1.06x
// at 128k, 0.91x at 256k, 0.61x at 512k; tensor_reduce (max over the free
// axis) 1.20x, 1.08x, 0.83x, 0.70x.
inline constexpr int64_t kMinCheapRowSplitWork = int64_t{1} << 18;

// The threshold for a row op that reads its rows from, or writes them to, a
// copy the calling thread makes or drains (a bfloat16 operand converted to
// float and back): none. The calling thread would then convert, out of
// the other cores' caches, the rows they computed: bf16
// cross_entropy_forward at 2 threads took 1.18-1.25x its one-thread time
// so (cross_entropy_bench, Intel Xeon), and about 1.07x with such ops kept
// on the calling thread (its chunk copies still split). tensor_reduce's
// result is one short column per row, so only its source counts.
inline int64_t RowSplitThreshold(bool rows_in_place, int64_t min_work) {
  return rows_in_place ? min_work : std::numeric_limits<int64_t>::max();
}

// Row ops: for an instruction over `rows` partitions of `work` elements in
// all, calls run(r0, r1) over consecutive row ranges, in multiples of
// `granule` rows, that cover [0, rows): split over LentThreads() when the
// work is at least `min_work` (big enough to repay a second thread's
// hand-off), else in one call.
// (Small work, most instructions, is called inline, before anything is
// looked up.)
void ForRowRangesOfBigWork(int64_t rows, int64_t granule,
                           absl::FunctionRef<void(int64_t, int64_t)> run);
inline void ForRowRanges(int64_t rows, int64_t work, int64_t granule,
                         absl::FunctionRef<void(int64_t, int64_t)> run,
                         int64_t min_work = kMinRowSplitWork) {
  if (work < min_work) {
    run(0, rows);
    return;
  }
  ForRowRangesOfBigWork(rows, granule, run);
}

}  // namespace nkigraph::ops

#endif  // NKIGRAPH_OPS_SPLIT_WORK_H_
