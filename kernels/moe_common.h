#ifndef NKIGRAPH_KERNELS_MOE_COMMON_H_
#define NKIGRAPH_KERNELS_MOE_COMMON_H_

// What the MoE family (§1: bwmm_shard_on_H and blockwise_mm_bwd) shares:
// the parameter struct and its validation, the routing loads (token rows
// gathered through token_position_to_id with a vector dynamic offset whose
// empty slots, −1, the DMA skips; the expert's weight rows addressed by the
// runtime expert index block_to_expert[n] as a scalar dynamic offset), the
// read-modify-write accumulations, and the host-side pieces of the
// references. Both kernels run on the two logical cores of one rank
// (TwoCoreWorld).

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "builder/tensor.h"
#include "builder/tiling.h"
#include "builder/tracer.h"
#include "kernels/device.h"
#include "kernels/kernel_spec.h"
#include "kernels/two_cores.h"
#include "ops/activation_functions.h"
#include "proto/nkigraph.pb.h"
#include "util/host_array.h"

namespace nkigraph::kernels {

// --- Parameters -------------------------------------------------------------

// `activation` of the family: silu, or swish = x·sigmoid(1.702·x), NKI's
// gelu_apprx_sigmoid.
enum class MoeActivation { kSilu, kSwish };

struct MoeParams {
  int64_t num_tokens = 64;     // T
  int64_t hidden = 256;        // H, split across the two cores
  int64_t num_experts = 4;     // E
  int64_t intermediate = 128;  // I (the per-rank I_TP)
  int64_t block_size = 64;     // B
  int64_t num_blocks = 4;      // N
  MoeActivation activation = MoeActivation::kSilu;
  bool bias = false;
  proto::DType dtype = proto::BFLOAT16;
};

// Upper limits: on-chip buffers are O(H + I) per partition, so hidden and
// intermediate are bounded by what one SBUF partition holds in float32.
inline constexpr int64_t kMoeMaxHidden = 4096;
inline constexpr int64_t kMoeMaxIntermediate = 4096;
inline constexpr int64_t kMoeMaxExperts = 1024;
inline constexpr int64_t kMoeMaxTokens = int64_t{1} << 20;
inline constexpr int64_t kMoeMaxBlockSize = 4096;
inline constexpr int64_t kMoeMaxBlocks = 4096;

// num_tokens, hidden, num_experts, intermediate, block_size, num_blocks,
// activation, bias, dtype — the family's parameter table, with the limits
// above.
std::vector<ParamField<MoeParams>> MoeFields();
// What the limits cannot say (hidden must be even); messages name the
// parameter and the limit.
absl::Status ValidateMoeParams(const MoeParams& params);

// The scalar-engine activation and its derivative: silu / silu_dx, or
// gelu_apprx_sigmoid / gelu_apprx_sigmoid_dx (get_activation_ops).
ops::ActFunc MoeActFunc(MoeActivation activation);
ops::ActFunc MoeActDerivativeFunc(MoeActivation activation);
// The exact functions, for the references.
double MoeReferenceAct(MoeActivation activation, double x);
double MoeReferenceActDerivative(MoeActivation activation, double x);

// --- Device side
// --------------------------------------------------------------

// The forward's inputs, as both kernels declare them.
struct MoeInputs {
  builder::Tensor hidden_states;             // [T, H]
  builder::Tensor expert_affinities_masked;  // [T·E, 1]
  builder::Tensor gate_up_proj_weight;       // [E, H, 2, I]
  builder::Tensor down_proj_weight;          // [E, I, H]
  builder::Tensor token_position_to_id;      // [N·B] int32
  builder::Tensor block_to_expert;           // [N] int32
  builder::Tensor gate_up_proj_bias;         // [E, 2, I], bias only
  builder::Tensor down_proj_bias;            // [E, H], bias only
};
// Their rows of the I/O table, routing values declared: token ids in
// [−1, T) (−1: an empty slot), expert ids in [0, E).
std::vector<IoEntry<MoeParams>> MoeInputRows();
MoeInputs DeclareMoeInputs(KernelIo& io);

// What one core owns: columns of H (halves: H is even) and rows of I.
struct MoeCoreShards {
  CoreShard hidden;
  CoreShard intermediate;
};
MoeCoreShards CoreShardsOf(const MoeParams& params, int core);

// What the kernels know about one tile of slots of block n, all on chip.
struct BlockRouting {
  int64_t block;
  builder::Tile slots;
  builder::Tensor expert_idx;    // [1, 1] int32: block_to_expert[n]
  builder::Tensor token_ids;     // [b, 1] int32: −1 for an empty slot
  builder::Tensor affinity_idx;  // [b, 1] int32: token·E + expert (< 0: empty)
  builder::Tensor affinity;      // [b, 1] float32: 0 for an empty slot
};
// Loads the routing of `slots` of block `block` into the current scope.
BlockRouting LoadBlockRouting(const MoeInputs& inputs, const MoeParams& params,
                              int64_t block, const builder::Tile& slots);

// One tile of slots of one block, as every stage of a MoE kernel sees it:
// the kernel's inputs and outputs, the parameters, this core's shards and
// the block's routing.
template <typename Inputs, typename Outputs>
struct MoeBlock {
  const Inputs& in;
  const Outputs& out;
  const MoeParams& p;
  const MoeCoreShards& shards;
  const BlockRouting& routing;

  // b: the slots of the tile.
  int64_t slots() const { return routing.slots.size; }
};

// dst_T = src^T 128 columns at a time on the tensor engine: for src
// [b, K], the partition-tiled dst_T [min(K, 128), KT, b] (PSUM tiles named
// `psum_name`).
void TransposeToPartitionTiles(const builder::Tensor& dst_T,
                               const builder::Tensor& src,
                               const char* psum_name);

// The view of `table`[token_ids[p], col : col + size] for each partition
// p: a vector dynamic offset along dim 0 whose out-of-range rows (empty
// slots) the DMA skips. `table` is a 2-D HBM tensor.
builder::Tensor TokenRows(const builder::Tensor& table,
                          const builder::Tensor& token_ids, int64_t col,
                          int64_t size);
// dst[b, :] = table[token, col : col + dst cols], zero for empty slots.
void GatherTokenRows(const builder::Tensor& dst, const builder::Tensor& table,
                     const builder::Tensor& token_ids, int64_t col);
// table[token, col : col + cols] += contribution[b, :] for every routed
// slot: gather → add → scatter (no token repeats within one block).
void AccumulateIntoTokenRows(const builder::Tensor& table,
                             const builder::Tensor& token_ids, int64_t col,
                             const builder::Tensor& contribution);

// weight[e] for the runtime expert index: a scalar dynamic offset along
// dim 0; slice it further as needed.
builder::Tensor ExpertSlice(const builder::Tensor& weight,
                            const builder::Tensor& expert_idx);
// The per-expert read-modify-write: load the expert's rows `grad_rows` (an
// ExpertSlice view), add them into `result` (SBUF float32 of the same
// shape), store `result` back to the same rows.
void AccumulateIntoExpertRows(const builder::Tensor& grad_rows,
                              const builder::Tensor& result);

// rows += stationary^T · moving, one matmul tile: the product in PSUM
// (`name`_psum), staged into a float32 SBUF tile `name`, then added into
// the expert's rows (AccumulateIntoExpertRows).
void AccumulateMatmulIntoExpertRows(const builder::Tensor& rows,
                                    const builder::Tensor& stationary,
                                    const builder::Tensor& moving,
                                    absl::string_view name);

// Writes zeros over a view of an HBM tensor (any rank), from a zero tile.
void ZeroFill(const builder::Tensor& view);

// --- Host side (references)
// ---------------------------------------------------

// The inputs a reference reads, checked for name, shape and dtype.
struct MoeHostInputs {
  const HostArray* hidden_states = nullptr;
  const HostArray* expert_affinities_masked = nullptr;
  const HostArray* gate_up_proj_weight = nullptr;
  const HostArray* down_proj_weight = nullptr;
  const HostArray* token_position_to_id = nullptr;
  const HostArray* block_to_expert = nullptr;
  const HostArray* gate_up_proj_bias = nullptr;  // bias only
  const HostArray* down_proj_bias = nullptr;     // bias only

  // Token of slot b of block n, or −1 for an empty (or out-of-range) slot.
  int64_t Token(const MoeParams& params, int64_t n, int64_t b) const;
};
// The inputs bound to the kernel's I/O table `io`, once every
// block_to_expert entry is checked to lie in [0, E).
absl::StatusOr<MoeHostInputs> MoeHostInputsOf(const HostIo& io,
                                              const MoeParams& params);

// Valid forward inputs, deterministic in `seed` (float32 values already
// rounded to params.dtype): routing where each block's expert is random (so
// experts get several blocks), about a quarter of the slots are empty
// (−1) and each token appears at most once per expert; hidden states in
// [−1, 1), affinities in [0, 1), weights uniform with variance 1/fan-in,
// biases in [−0.5, 0.5).
std::vector<HostArray> MakeMoeInputs(const MoeParams& params, uint64_t seed);

// A top-k dropless routing: the three routing inputs as host vectors.
struct MoeRouting {
  std::vector<int32_t> token_position_to_id;    // [N·B], −1: empty slot
  std::vector<int32_t> block_to_expert;         // [N]
  std::vector<float> expert_affinities_masked;  // [T·E], 0 unless routed
};

// Top-k routing of every token, deterministic in `seed`: each token draws
// one logit per expert and goes to the k experts with the largest ones
// (k distinct experts), its affinities the softmax over those k logits
// (summing to 1) and 0 elsewhere. Dropless blocking: expert 0's tokens, in
// increasing order, fill consecutive blocks of B slots, its last block
// padded with −1, then expert 1's, and so on; the blocks left over up to N
// are empty (all −1) and assigned expert E − 1. Fails when k is not in
// [1, E] or the blocks needed exceed N (at most T·k / B + E are).
absl::StatusOr<MoeRouting> MakeTopKRouting(const MoeParams& params, int64_t k,
                                           uint64_t seed);

// MakeMoeInputs with the routing of MakeTopKRouting(params, top_k, seed)
// in place of the random one (its affinities rounded to params.dtype);
// top_k = 0 gives MakeMoeInputs(params, seed).
HostOutputs MakeMoeInputs(const MoeParams& params, uint64_t seed,
                          int64_t top_k);

}  // namespace nkigraph::kernels

#endif  // NKIGRAPH_KERNELS_MOE_COMMON_H_
