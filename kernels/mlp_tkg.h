#ifndef NKIGRAPH_KERNELS_MLP_TKG_H_
#define NKIGRAPH_KERNELS_MLP_TKG_H_

// mlp_tkg — the decode MLP block (§3): fused RMSNorm → gate/up → SiLU·up →
// down, H split across the two logical cores.
//
// Params: batch B, seq_tkg S, hidden H (even), intermediate I,
// rmsnorm_eps, dtype. Inputs: X [B, S, H]; rmsnorm_gamma [H];
// W_gate_up [H, 2, I]; W_down [I, H]. Output: out [B, S, H] =
// (silu(xn·W_gate_up[:, 0, :]) ⊙ (xn·W_gate_up[:, 1, :]))·W_down with
// xn = RMSNorm(X): this rank's partial sum.

#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "builder/tensor.h"
#include "kernels/decode_common.h"
#include "kernels/kernel_spec.h"
#include "util/host_array.h"

namespace nkigraph::kernels {

// B, S, H, I, rmsnorm_eps and dtype of the shared fields; the others stay
// at their defaults and are not read.
struct MlpParams : DecodeParams {};

// The block's weights: HBM views (a composer passes layer l's slices).
struct MlpWeights {
  builder::Tensor gamma;      // [H]
  builder::Tensor w_gate_up;  // [H, 2, I]
  builder::Tensor w_down;     // [I, H]
};

// The device kernel, run once per core of a 2-core world (either path of
// BlockIo). Wrap it in jit where it is called.
void MlpTkg(const BlockIo& io, const MlpWeights& weights,
            const MlpParams& params);

// The oracle of one block, in double: out [T, H] (T = B·S rows) from x
// [T, H], gamma [H], w_gate_up [H, 2, I] and w_down [I, H] as the device
// holds them. Unrounded.
std::vector<double> MlpTkgReferenceRows(const MlpParams& params,
                                        absl::Span<const float> x,
                                        absl::Span<const float> gamma,
                                        absl::Span<const float> w_gate_up,
                                        absl::Span<const float> w_down);
// The registered kernel's reference: `out` from the I/O table's inputs.
HostOutputs MlpTkgReference(const MlpParams& params, const HostArrays& inputs);

// X and rmsnorm_gamma in [−1, 1) and [0.5, 1.5), weights uniform with
// variance 1/fan-in, deterministic in `seed`, rounded to params.dtype.
HostOutputs MakeMlpTkgInputs(const MlpParams& params, uint64_t seed);

const KernelSpec<MlpParams>& MlpTkgSpec();

}  // namespace nkigraph::kernels

#endif  // NKIGRAPH_KERNELS_MLP_TKG_H_
