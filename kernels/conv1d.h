#ifndef NKIGRAPH_KERNELS_CONV1D_H_
#define NKIGRAPH_KERNELS_CONV1D_H_

// conv1d — cross-channel 1-D convolution lowered to nc_matmul with
// im2col-by-scatter and K-replication (design notes §4, KERNELS.md
// "Family 4").
//
// Params: batch B, c_in, c_out, length L, kernel_size K, stride=1,
// pad_left=0, pad_right=0, dilation=1, bias=1, activation ∈ {none, relu,
// silu, gelu_tanh} (default none), lnc_shard=0 (1: two cores split C_out),
// dtype ∈ {float32, bfloat16} (default bfloat16).
// Inputs: x_in [B, c_in, L]; filters [K, c_in, c_out] (tap-major); bias
// [c_out] float32 (only when bias=1).
// Output: out [B, c_out, L_out], L_out = (L + pad_left + pad_right −
// dilation·(K−1) − 1) // stride + 1.
//
// The output is computed with C_out on the PSUM partitions (stationary =
// stacked filters, moving = stacked input windows), so the bias is one
// value per partition, fused into the PSUM evacuation with the activation.

#include <cstdint>
#include <vector>

#include "absl/status/statusor.h"
#include "builder/tensor.h"
#include "builder/tiling.h"
#include "kernels/conv_common.h"
#include "kernels/epilogue.h"
#include "kernels/kernel_spec.h"
#include "proto/nkigraph.pb.h"
#include "util/host_array.h"

namespace nkigraph::kernels {

struct Conv1dParams : ConvWindow {
  int64_t batch = 1;
  int64_t c_in = 1;
  int64_t c_out = 1;
  int64_t length = 1;
  bool bias = true;
  Activation activation = Activation::kNone;
  bool lnc_shard = false;
  proto::DType dtype = proto::BFLOAT16;

  int64_t l_out() const;
};

// K-replication of one c_in tile (_get_k_replication_params): K_REP taps
// stacked on the contraction dim, PARTITION_STRIDE partitions apart.
struct KReplication {
  int64_t k_rep;             // taps per matmul
  int64_t partition_stride;  // 32, 64, or the tile size when k_rep == 1
};
// c_in tile of ≤ 32 channels: min(K, 4) taps at stride 32; 33–64: min(K, 2)
// at stride 64; larger: one tap.
KReplication GetKReplicationParams(int64_t c_in_tile, int64_t kernel_size);

// One c_in tile of the contraction and how its taps are grouped.
struct CinTilePlan {
  builder::Tile tile;  // channels [offset, offset + size) of c_in
  KReplication rep;    // K_REP and partition stride
  int64_t num_groups;  // ceil(K / k_rep): matmuls per output tile
};

// How the kernel tiles a problem; PlanConv1d refuses what does not fit.
struct Conv1dPlan {
  std::vector<CinTilePlan> cin_tiles;
  int64_t l_tile = 0;        // output columns per matmul (≤ 512)
  int64_t window_width = 0;  // input columns under one l tile
  int64_t co_block = 0;      // c_out channels whose filters stay resident
};
absl::StatusOr<Conv1dPlan> PlanConv1d(const Conv1dParams& params);

// The registered kernel: sizes required and bounded, and refused when the
// tiling does not fit (PlanConv1d); messages name the parameter and limit.
const KernelSpec<Conv1dParams>& Conv1dSpec();

// The device kernel, for use inside a trace on each core: x_in, filters
// (params.dtype) and bias (float32; an invalid Tensor when !params.bias) in
// HBM; out [B, c_out, L_out] of params.dtype in shared HBM. With lnc_shard
// each core computes and writes only its half of c_out.
void Conv1d(const builder::Tensor& x_in, const builder::Tensor& filters,
            const builder::Tensor& bias, const builder::Tensor& out,
            const Conv1dParams& params);

// The oracle: inputs x_in, filters (and bias) already rounded to
// params.dtype; accumulated in double, returned as float32 `out`.
HostOutputs Conv1dReference(const Conv1dParams& params,
                            const HostArrays& inputs);

}  // namespace nkigraph::kernels

#endif  // NKIGRAPH_KERNELS_CONV1D_H_
