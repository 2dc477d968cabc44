#ifndef NKIGRAPH_KERNELS_BLOCKWISE_MM_BWD_H_
#define NKIGRAPH_KERNELS_BLOCKWISE_MM_BWD_H_

// blockwise_mm_bwd — the backward of the blockwise MoE expert FFN (§1,
// blockwise_mm_bwd_dropless): exact gradients of
// L = Σ output ⊙ output_hidden_states_grad, replaying the forward's
// checkpoints (store-not-recompute) and accumulating the weight gradients
// per expert by read-modify-write. Two logical cores own disjoint slices
// of every gradient; no sendrecv.
//
// Params: as bwmm_shard_on_H. Inputs: the forward's (MoeInputs) plus
// gate_up_proj_act_checkpoint_T [N, 2, I, B], down_proj_act_checkpoint
// [N, B, H] and output_hidden_states_grad [T, H]. Outputs:
// hidden_states_grad [T, H], expert_affinities_masked_grad [T·E, 1],
// gate_up_proj_weight_grad [E, H, 2, I], down_proj_weight_grad [E, I, H],
// with bias gate_up_proj_bias_grad [E, 2, I] and down_proj_bias_grad [E, H].

#include <cstdint>
#include <vector>

#include "absl/status/statusor.h"
#include "builder/tensor.h"
#include "kernels/moe_common.h"
#include "util/host_array.h"

namespace nkigraph::kernels {

struct BlockwiseMmBwdInputs {
  MoeInputs forward;
  builder::Tensor gate_up_proj_act_checkpoint_T;  // [N, 2, I, B]
  builder::Tensor down_proj_act_checkpoint;       // [N, B, H]
  builder::Tensor output_hidden_states_grad;      // [T, H]
};

struct BlockwiseMmBwdOutputs {
  builder::Tensor hidden_states_grad;             // [T, H]
  builder::Tensor expert_affinities_masked_grad;  // [T·E, 1]
  builder::Tensor gate_up_proj_weight_grad;       // [E, H, 2, I]
  builder::Tensor down_proj_weight_grad;          // [E, I, H]
  builder::Tensor gate_up_proj_bias_grad;         // [E, 2, I], bias only
  builder::Tensor down_proj_bias_grad;            // [E, H], bias only
};

// The core_barriers that order the two cores' accesses to the shared
// gate/up gradient buffer of each tile of slots. Both are needed; turning
// one off exists only to show the interpreter's race check catching it.
struct BlockwiseMmBwdFences {
  // Read-after-write: both halves of the gate/up gradient are written
  // before either core reads the whole of it.
  bool after_gate_up_grad = true;
  // Write-after-read: both cores have read it before the next tile
  // overwrites it.
  bool before_next_tile = true;
};

// The device kernel, run once per core inside a trace of a 2-core world;
// outputs are shared-HBM tensors of params.dtype.
void BlockwiseMmBwd(const BlockwiseMmBwdInputs& inputs,
                    const BlockwiseMmBwdOutputs& outputs,
                    const MoeParams& params,
                    const BlockwiseMmBwdFences& fences = {});

// Declares the inputs, allocates the outputs and runs the kernel: the
// registered kernel's body, with the fences exposed for tests
// (BlockwiseMmBwdSpec().Trace(params, body)).
void TraceBlockwiseMmBwd(KernelIo& io, const MoeParams& params,
                         const BlockwiseMmBwdFences& fences = {});

// The oracle, in double: the analytic gradients, with g, u and y read from
// the checkpoint inputs as the kernel reads them.
HostOutputs BlockwiseMmBwdReference(const MoeParams& params,
                                    const HostArrays& inputs);

// Valid inputs from `seed`: MakeMoeInputs(params, seed, top_k) (top_k 0:
// its random routing; k ≥ 1: top-k dropless routing), the checkpoints the
// forward reference computes from them and an output gradient in [−1, 1),
// all rounded to params.dtype.
HostOutputs MakeBlockwiseMmBwdInputs(const MoeParams& params, uint64_t seed,
                                     int64_t top_k = 0);

// The registered kernel (MoeFields; inputs: the forward's, its checkpoints
// and output_hidden_states_grad; outputs: the gradients above).
const KernelSpec<MoeParams>& BlockwiseMmBwdSpec();

}  // namespace nkigraph::kernels

#endif  // NKIGRAPH_KERNELS_BLOCKWISE_MM_BWD_H_
