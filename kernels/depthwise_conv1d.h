#ifndef NKIGRAPH_KERNELS_DEPTHWISE_CONV1D_H_
#define NKIGRAPH_KERNELS_DEPTHWISE_CONV1D_H_

// depthwise_conv1d — true depthwise 1-D convolution as an implicit GEMM per
// channel (design notes §4, depthwise_conv1d_implicit_gemm; KERNELS.md
// "Family 4").
//
// Params: batch N, channels C, width W, kernel_size S, stride=1,
// pad_left=0, pad_right=0, dtype ∈ {float32, bfloat16} (default bfloat16);
// dilation=1, stride_h=1 and feature_group_count=C exist to be checked: any
// other value is refused at trace time, as the original kernel asserts.
// Inputs: img [N, C, 1, W]; filter [C, 1, 1, S].
// Output: out [N, C, 1, Q], Q = (W + pad_left + pad_right − S) // stride + 1.
// out[n,c,0,q] = Σ_s filter[c,0,0,s] · img[n,c,0,q·stride + s − pad_left].
//
// Per channel one (S × 1)^T · (S × Q) matmul: the contraction is over the
// taps only (no sum over channels); the (S × Q) windows are loaded by an
// access pattern whose partition s starts s elements further along the row
// (the slide), and the filters are transposed on chip.

#include <cstdint>
#include <optional>
#include <vector>

#include "absl/status/statusor.h"
#include "builder/tensor.h"
#include "kernels/conv_common.h"
#include "kernels/kernel_spec.h"
#include "proto/nkigraph.pb.h"
#include "util/host_array.h"

namespace nkigraph::kernels {

struct DepthwiseConv1dParams : ConvWindow {
  int64_t batch = 1;
  int64_t channels = 1;
  int64_t width = 1;
  proto::DType dtype = proto::BFLOAT16;
  // Checked only: refused unless 1 (also the window's dilation), 1 and
  // `channels` (unset: channels).
  int64_t stride_h = 1;
  std::optional<int64_t> feature_group_count;

  int64_t q_out() const;
};

// How the kernel tiles a problem; refused when it does not fit on chip.
struct DepthwiseConv1dPlan {
  int64_t q_tile = 0;          // output columns per matmul (≤ 512)
  int64_t window_columns = 0;  // input columns under one q tile
  int64_t channel_group = 0;   // channels whose windows one DMA loads
};
absl::StatusOr<DepthwiseConv1dPlan> PlanDepthwiseConv1d(
    const DepthwiseConv1dParams& params);

// The registered kernel: sizes required and bounded, dilation, stride_h and
// feature_group_count refused unless they match the original's asserts;
// messages name the parameter and the limit.
const KernelSpec<DepthwiseConv1dParams>& DepthwiseConv1dSpec();

// The device kernel, for use inside a trace: img [N, C, 1, W] and filter
// [C, 1, 1, S] in HBM, out [N, C, 1, Q] in HBM, all of params.dtype.
void DepthwiseConv1d(const builder::Tensor& img, const builder::Tensor& filter,
                     const builder::Tensor& out,
                     const DepthwiseConv1dParams& params);

// The oracle: inputs img and filter already rounded to params.dtype;
// accumulated in double, returned as float32 `out`.
HostOutputs DepthwiseConv1dReference(const DepthwiseConv1dParams& params,
                                     const HostArrays& inputs);

}  // namespace nkigraph::kernels

#endif  // NKIGRAPH_KERNELS_DEPTHWISE_CONV1D_H_
