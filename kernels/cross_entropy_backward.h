#ifndef NKIGRAPH_KERNELS_CROSS_ENTROPY_BACKWARD_H_
#define NKIGRAPH_KERNELS_CROSS_ENTROPY_BACKWARD_H_

// cross_entropy_backward (§4) — softmax − onehot, no scatter.
//
// Params: as cross_entropy_forward (num_positions P, vocab_size V,
// chunk_size=2048, ignore_index, dtype), plus reduction ∈ {mean, sum}
// (default mean) and inplace=1.
// Inputs: logits [P, V] dtype; targets [P] int32; lse_state [P] float32.
// Output: grad_logits [P, V] dtype; with inplace=1 it is the logits tensor,
// overwritten (no second [P, V] allocation).
//   grad[i, j] = s · (exp(logits[i, j] − lse[i]) − [j == targets[i]]),
//   s = 1/P for mean (1 / the number of non-ignored positions when
//   ignore_index is set; 0 of them gives an all-zero gradient), 1 for sum;
//   ignored positions get 0.

#include <vector>

#include "absl/status/statusor.h"
#include "builder/tensor.h"
#include "kernels/cross_entropy_common.h"
#include "util/host_array.h"

namespace nkigraph::kernels {

// The device kernel, for use inside a trace: logits [P, V] of params.dtype,
// targets [P] int32 and lse_state [P] float32 in HBM; writes grad_logits
// [P, V] (params.dtype, HBM), which may be `logits` itself (in place).
void CrossEntropyBackward(const builder::Tensor& logits,
                          const builder::Tensor& targets,
                          const builder::Tensor& lse_state,
                          const builder::Tensor& grad_logits,
                          const CrossEntropyBackwardParams& params);

// The oracle, in double: inputs logits (float32 values already rounded to
// params.dtype), targets (int32) and lse_state (float32); returns float32
// grad_logits.
HostOutputs CrossEntropyBackwardReference(
    const CrossEntropyBackwardParams& params, const HostArrays& inputs);

// The registered kernel: the forward's parameters and limits, plus
// reduction and inplace.
const KernelSpec<CrossEntropyBackwardParams>& CrossEntropyBackwardSpec();

}  // namespace nkigraph::kernels

#endif  // NKIGRAPH_KERNELS_CROSS_ENTROPY_BACKWARD_H_
