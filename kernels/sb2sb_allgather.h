#ifndef NKIGRAPH_KERNELS_SB2SB_ALLGATHER_H_
#define NKIGRAPH_KERNELS_SB2SB_ALLGATHER_H_

// sb2sb_allgather and sb2sb_allgather_tiled (allgather_sb2sb, design notes
// §2): the small-tensor all-gather, not the ring. The input is loaded into
// SBUF, gathered by one all_gather collective SBUF -> SBUF along dim 1, and
// stored.
//
// Params: tp_degree, num_groups=1, rows M, width W, dtype; the tiled one
// also lnc=2. The untiled one requires M ≤ 128.
// Input: inp [M, W] per rank. Output: out [M, W·tp] per rank;
// out[:, j·W:(j+1)·W] is group rank j's inp.

#include <cstdint>
#include <vector>

#include "absl/status/statusor.h"
#include "builder/tensor.h"
#include "kernels/kernel_spec.h"
#include "proto/nkigraph.pb.h"
#include "util/host_array.h"

namespace nkigraph::kernels {

struct Sb2sbAllgatherParams {
  int64_t tp_degree = 4;
  int64_t num_groups = 1;
  int64_t rows = 128;
  int64_t width = 256;
  bool tiled = false;
  int64_t lnc = 1;  // cores splitting the row tiles (tiled only)
  proto::DType dtype = proto::BFLOAT16;
};

// The tiled kernel's parameters: the same, with its defaults.
struct Sb2sbAllgatherTiledParams : Sb2sbAllgatherParams {
  Sb2sbAllgatherTiledParams() {
    rows = 256;
    lnc = 2;
    tiled = true;
  }
};

// The registered kernels: the untiled one takes rows at most 128 on one
// core, the tiled one up to 65536 rows on 1 or 2 cores; both bound the
// SBUF bytes per partition. Messages name the parameter and the limit.
const KernelSpec<Sb2sbAllgatherParams>& Sb2sbAllgatherSpec();
const KernelSpec<Sb2sbAllgatherTiledParams>& Sb2sbAllgatherTiledSpec();
// The host side of the I/O table of the kernel `params` is for, `inputs`
// bound.
absl::StatusOr<HostIo> Sb2sbHostIo(const Sb2sbAllgatherParams& params,
                                   const HostArrays& inputs);

// The device kernels, for use inside a trace: inp [M, W] in HBM, out
// [M, W·tp] in shared HBM. The untiled one gathers all M rows (≤ 128) with
// one all_gather; the tiled one gathers row tiles of min(M, 128), each core
// taking a contiguous share of the tiles.
void AllgatherSb2sb(const builder::Tensor& inp, const builder::Tensor& out,
                    const Sb2sbAllgatherParams& params);
void AllgatherSb2sbTiled(const builder::Tensor& inp, const builder::Tensor& out,
                         const Sb2sbAllgatherParams& params);

// The oracle: per-rank inp [R, M, W] (no leading axis when R is 1), rounded
// to the dtype; out [R, M, W·tp] puts group rank j's rows at columns
// [j·W, (j+1)·W).
HostOutputs Sb2sbAllgatherReference(const Sb2sbAllgatherParams& params,
                                    const HostArrays& inputs);

}  // namespace nkigraph::kernels

#endif  // NKIGRAPH_KERNELS_SB2SB_ALLGATHER_H_
