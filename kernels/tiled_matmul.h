#ifndef NKIGRAPH_KERNELS_TILED_MATMUL_H_
#define NKIGRAPH_KERNELS_TILED_MATMUL_H_

// tiled_matmul — the example kernel: out = act(lhs @ rhs + bias).
//
// Params: m, k, n (256 each), bias (0/1, default 1), activation ∈ {none,
// relu, silu, gelu_tanh} (default none), dtype ∈ {float32, bfloat16}
// (default bfloat16).
// Inputs: lhs [m, k], rhs [k, n], bias [n] (float32, only when bias=1).
// Output: out [m, n].
//
// The kernel computes out^T tiles, so n sits on the PSUM partitions and the
// bias is one value per partition, fused into the PSUM evacuation.

#include <cstdint>
#include <vector>

#include "absl/status/statusor.h"
#include "builder/tensor.h"
#include "kernels/epilogue.h"
#include "kernels/kernel_spec.h"
#include "proto/nkigraph.pb.h"
#include "util/host_array.h"

namespace nkigraph::kernels {

struct TiledMatmulParams {
  int64_t m = 256;
  int64_t k = 256;
  int64_t n = 256;
  bool bias = true;
  Activation activation = Activation::kNone;
  proto::DType dtype = proto::BFLOAT16;
};

// The registered kernel: sizes in [1, 65536] and a bounded number of
// matmul tiles; messages name the parameter and the limit.
const KernelSpec<TiledMatmulParams>& TiledMatmulSpec();

// The device kernel, for use inside a trace (directly, or wrapped by
// builder::jit into a composer). lhs [m, k] and rhs [k, n] in HBM of
// params.dtype, bias [n] float32 in HBM (an invalid Tensor when
// !params.bias), out [m, n] of params.dtype in HBM.
void TiledMatmul(const builder::Tensor& lhs, const builder::Tensor& rhs,
                 const builder::Tensor& bias, const builder::Tensor& out,
                 const TiledMatmulParams& params);

// The oracle: inputs named lhs, rhs (and bias when params.bias), already
// rounded to params.dtype; computed in double, returned as float32 `out`.
HostOutputs TiledMatmulReference(const TiledMatmulParams& params,
                                 const HostArrays& inputs);

}  // namespace nkigraph::kernels

#endif  // NKIGRAPH_KERNELS_TILED_MATMUL_H_
