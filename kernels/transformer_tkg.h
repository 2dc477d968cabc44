#ifndef NKIGRAPH_KERNELS_TRANSFORMER_TKG_H_
#define NKIGRAPH_KERNELS_TRANSFORMER_TKG_H_

// transformer_tkg — the multi-layer decode composer (§3). A plain C++
// function, not itself a kernel: the registered kernel wraps it in jit at
// its call site, its layer loop unrolls at trace time into one graph, and
// the leaf kernels it calls (attention_block_tkg, mlp_tkg) are inlined as
// the scopes transformer_tkg/layer{l}/attention_block_tkg/… and
// …/mlp_tkg/…. Per layer l, with layer l's weights and caches:
//   h = x + AllReduce_ranks(attention_block_tkg(x))
//   x = h + AllReduce_ranks(mlp_tkg(h))
// (no all-reduce with tp_degree = 1). The attention block runs with
// qk_norm=none, fp8_kv=0, o_proj=1.
//
// Two residual paths:
//  sbuf_residual_and_cc=0 (HBM): the residual, each block's output and the
//    all-reduce buffers live in HBM; each core reads and writes its own H
//    columns of them, and all-reduces its columns.
//  sbuf_residual_and_cc=1 (SBUF): each core holds the full residual [T, H]
//    in SBUF; a block leaves its [T, H/2] shard in SBUF, the core
//    all-reduces that shard in SBUF (one all_reduce per core per step),
//    adds it to its residual columns, and one sendrecv swaps the shards so
//    both cores hold the full residual again. A layer writes to HBM only
//    its KV-cache updates, and the last layer its output.
// Both paths run the same instructions on the same values in the same
// dtypes (only where the operands live differs, and the moves are
// bit-exact), so they agree bit for bit.

#include <cstdint>

#include "builder/tensor.h"
#include "kernels/attention_block_tkg.h"
#include "kernels/decode_common.h"
#include "kernels/kernel_spec.h"
#include "kernels/mlp_tkg.h"
#include "util/host_array.h"

namespace nkigraph::kernels {

struct TransformerParams : DecodeParams {
  int64_t num_layers = 2;  // L
  int64_t tp_degree = 2;   // ranks
  bool sbuf_residual_and_cc = false;
};

inline constexpr int64_t kTransformerMaxLayers = 256;
inline constexpr int64_t kTransformerMaxTpDegree = 128;

// The composer's HBM inputs, as the registered kernel declares them;
// stacked tensors carry a leading [L] axis.
struct TransformerInputs {
  builder::Tensor x;                   // [B, S, H]
  builder::Tensor rmsnorm_attn_gamma;  // [L, H]
  builder::Tensor rmsnorm_mlp_gamma;   // [L, H]
  builder::Tensor w_qkv;               // [L, H, (q_heads + 2·kv_heads)·d]
  builder::Tensor w_o;                 // [L, q_heads·d, H]
  builder::Tensor w_gate_up;           // [L, H, 2, I]
  builder::Tensor w_down;              // [L, I, H]
  builder::Tensor k_cache;             // [L, B, kv_heads, C, d], in place
  builder::Tensor v_cache;             // [L, B, kv_heads, C, d], in place
  builder::Tensor cos;                 // [B, S, d/2]
  builder::Tensor sin;                 // [B, S, d/2]
  builder::Tensor mask_cache;          // [B, C]
  builder::Tensor cache_position;      // [B] int32
};

// The leaf kernels' parameters for the composer's.
// Declares the composer's inputs from the kernel's I/O table.
TransformerInputs DeclareTransformerInputs(KernelIo& io);

AttentionParams AttentionParamsOf(const TransformerParams& params);
MlpParams MlpParamsOf(const TransformerParams& params);

// The composer: all layers into `out` [B, S, H] (an HBM tensor, each core
// writing its H columns), the caches updated in place. Run it inside a
// trace of TwoCoreWorld(tp_degree), wrapped in jit once.
void TransformerTkg(const TransformerInputs& inputs, const builder::Tensor& out,
                    const TransformerParams& params);

// The oracle: the composition of the leaf references, layer by layer and
// rank by rank, with the all-reduce as a sum over the ranks. Every tensor
// the contract gives a dtype (a block's output, the all-reduced sum, the
// residual) is rounded to it.
HostOutputs TransformerTkgReference(const TransformerParams& params,
                                    const HostArrays& inputs);

// Inputs with weights of variance 1/fan-in, X and the caches in [−1, 1),
// cos/sin of random angles, masks mostly 1 and cache positions in
// [0, C − S], deterministic in `seed`.
HostOutputs MakeTransformerTkgInputs(const TransformerParams& params,
                                     uint64_t seed);

const KernelSpec<TransformerParams>& TransformerTkgSpec();

}  // namespace nkigraph::kernels

#endif  // NKIGRAPH_KERNELS_TRANSFORMER_TKG_H_
