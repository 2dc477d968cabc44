#ifndef NKIGRAPH_KERNELS_FG_ALLGATHER_H_
#define NKIGRAPH_KERNELS_FG_ALLGATHER_H_

// fg_allgather (fine_grained_allgather, design notes §2): fgcc's ring with
// the matmul replaced by a transpose-and-scatter copy, built from the same
// ring helpers (collective_ring.h).
//
// Params: tp_degree (even, ≥ 2), num_groups=1, m, k, force_hbm_cc=0,
// nc_version=3, lnc=2, dtype.
// Input: lhs [m, k] per rank.
// Output: result [tp_degree·m, k] per rank, the group's lhs rows in rank
// order.

#include <cstdint>
#include <vector>

#include "absl/status/statusor.h"
#include "builder/tensor.h"
#include "kernels/collective_ring.h"
#include "util/host_array.h"

namespace nkigraph::kernels {

// The registered kernel: the ring's parameters (collective_ring.h) and a
// bounded number of copy tiles.
const KernelSpec<RingParams>& FgAllgatherSpec();

// The ring's transport: SBUF unless force_hbm_cc or 2 · (lhs bytes)
// exceeds the 24 MiB budget (no rhs here).
RingPath FgAllgatherRingPath(const RingParams& params);

// The device kernel, for use inside a trace: lhs [m, k] in HBM, result
// [tp·m, k] in shared HBM, both of params.dtype.
void FineGrainedAllgather(const builder::Tensor& lhs,
                          const builder::Tensor& result,
                          const RingParams& params);

// The oracle: per-rank lhs [R, m, k] (no leading axis when R is 1), rounded
// to the dtype; result [R, tp·m, k] concatenates each rank's group.
HostOutputs FgAllgatherReference(const RingParams& params,
                                 const HostArrays& inputs);

}  // namespace nkigraph::kernels

#endif  // NKIGRAPH_KERNELS_FG_ALLGATHER_H_
