#ifndef NKIGRAPH_KERNELS_FGCC_H_
#define NKIGRAPH_KERNELS_FGCC_H_

// fgcc (allgather_compute_matmul, design notes §2): the all-gather of lhs
// fused with the matmul that consumes it, as a double-buffered ring.
//
// Params: tp_degree (even, ≥ 2), num_groups=1, m, k, n, force_hbm_cc=0,
// nc_version=3, lnc=2, dtype.
// Inputs: lhs [m, k] per rank; rhs [k, n] per rank.
// Output: out [tp_degree·m, n] per rank = (the group's lhs rows in rank
// order) · rhs.
//
// Ring step s delivers group rank (r − s) mod tp's rows; they are
// multiplied by rhs while the permute of step s + 1 moves them on, and the
// product lands at the slot the runtime resolver names.

#include <cstdint>
#include <vector>

#include "absl/status/statusor.h"
#include "builder/tensor.h"
#include "kernels/collective_ring.h"
#include "util/host_array.h"

namespace nkigraph::kernels {

struct FgccParams : RingParams {
  int64_t n = 512;
};

// The registered kernel: the ring's parameters (collective_ring.h), n in
// [1, 65536], a bounded number of matmul tiles.
const KernelSpec<FgccParams>& FgccSpec();

// rhs stays in SBUF for the whole ring when 2 · (rhs bytes) ≤ 16 MiB (and
// its [128, KT, n] layout fits the same share of a partition); otherwise
// its tiles are streamed from HBM for every matmul.
bool FgccRhsInSbuf(const FgccParams& params);
// The ring's transport: SBUF unless force_hbm_cc or the double buffer does
// not fit what the SBUF-held rhs leaves of the 24 MiB budget.
RingPath FgccRingPath(const FgccParams& params);

// The device kernel, for use inside a trace: lhs [m, k] and rhs [k, n] in
// HBM, out [tp·m, n] in shared HBM, all of params.dtype.
void AllgatherComputeMatmul(const builder::Tensor& lhs,
                            const builder::Tensor& rhs,
                            const builder::Tensor& out,
                            const FgccParams& params);

// The oracle: per-rank lhs [R, m, k] and rhs [R, k, n] (R = num_ranks; no
// leading axis when R is 1), rounded to the dtype; each rank's gathered rows
// times its rhs in double, as float32 out [R, tp·m, n].
HostOutputs FgccReference(const FgccParams& params, const HostArrays& inputs);

}  // namespace nkigraph::kernels

#endif  // NKIGRAPH_KERNELS_FGCC_H_
