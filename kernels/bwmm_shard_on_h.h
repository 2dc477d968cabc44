#ifndef NKIGRAPH_KERNELS_BWMM_SHARD_ON_H_H_
#define NKIGRAPH_KERNELS_BWMM_SHARD_ON_H_H_

// bwmm_shard_on_H — the blockwise MoE expert FFN forward with the hidden
// dim H sharded over the two logical cores (§1,
// blockwise_mm_baseline_shard_hidden), the producer of the checkpoints
// blockwise_mm_bwd consumes.
//
// Params: num_tokens T, hidden H (even), num_experts E, intermediate I,
// block_size B, num_blocks N, activation ∈ {silu, swish}, bias (0/1),
// dtype. Inputs: see MoeInputs. Outputs: output [T, H],
// gate_up_proj_act_checkpoint_T [N, 2, I, B], down_proj_act_checkpoint
// [N, B, H].

#include <vector>

#include "absl/status/statusor.h"
#include "builder/tensor.h"
#include "kernels/moe_common.h"
#include "util/host_array.h"

namespace nkigraph::kernels {

struct BwmmShardOnHOutputs {
  builder::Tensor output;                         // [T, H]
  builder::Tensor gate_up_proj_act_checkpoint_T;  // [N, 2, I, B]
  builder::Tensor down_proj_act_checkpoint;       // [N, B, H]
};

// The device kernel, run once per core inside a trace of a 2-core world;
// outputs are shared-HBM tensors of params.dtype.
void BwmmShardOnH(const MoeInputs& inputs, const BwmmShardOnHOutputs& outputs,
                  const MoeParams& params);

// The oracle, in double: inputs as the device holds them (float32 values
// rounded to dtype, int32 routing). Checkpoint rows of empty slots are
// those of an all-zero hidden row, as the kernel computes them.
HostOutputs BwmmShardOnHReference(const MoeParams& params,
                                  const HostArrays& inputs);

// The registered kernel (MoeFields, MoeInputRows and the outputs above).
const KernelSpec<MoeParams>& BwmmShardOnHSpec();
// The forward's output rows, the backward's checkpoint inputs.
std::vector<IoEntry<MoeParams>> BwmmShardOnHOutputRows();

}  // namespace nkigraph::kernels

#endif  // NKIGRAPH_KERNELS_BWMM_SHARD_ON_H_H_
