#ifndef NKIGRAPH_KERNELS_CROSS_ENTROPY_FORWARD_H_
#define NKIGRAPH_KERNELS_CROSS_ENTROPY_FORWARD_H_

// cross_entropy_forward (§4) — online log-sum-exp over a vocabulary
// streamed in chunks, and the target logit fetched by an indirect DMA.
//
// Params: num_positions P, vocab_size V, chunk_size=2048, ignore_index
// (default: none), dtype ∈ {float32, bfloat16} (default bfloat16).
// Inputs: logits [P, V] dtype; targets [P] int32.
// Outputs: loss [P] float32 (reduction none); lse_state [P] float32.
//   lse[i] = log Σ_j exp(logits[i, j]);  loss[i] = lse[i] − logits[i,
//   targets[i]], 0 where targets[i] == ignore_index.

#include <vector>

#include "absl/status/statusor.h"
#include "builder/tensor.h"
#include "kernels/cross_entropy_common.h"
#include "util/host_array.h"

namespace nkigraph::kernels {

// The device kernel, for use inside a trace: logits [P, V] of params.dtype
// and targets [P] int32 in HBM; writes loss [P] and lse_state [P] (float32,
// HBM).
void CrossEntropyForward(const builder::Tensor& logits,
                         const builder::Tensor& targets,
                         const builder::Tensor& loss,
                         const builder::Tensor& lse_state,
                         const CrossEntropyParams& params);

// The oracle, in double: inputs logits (float32 values already rounded to
// params.dtype) and targets (int32); returns float32 loss and lse_state.
HostOutputs CrossEntropyForwardReference(const CrossEntropyParams& params,
                                         const HostArrays& inputs);

// The registered kernel: sizes bounded (CrossEntropyFields) and a bounded
// trace; messages name the parameter and the limit.
const KernelSpec<CrossEntropyParams>& CrossEntropyForwardSpec();

}  // namespace nkigraph::kernels

#endif  // NKIGRAPH_KERNELS_CROSS_ENTROPY_FORWARD_H_
