#ifndef NKIGRAPH_KERNELS_ATTENTION_BLOCK_TKG_H_
#define NKIGRAPH_KERNELS_ATTENTION_BLOCK_TKG_H_

// attention_block_tkg — the fused decode attention block (§3,
// KERNELS.md "Family 3"): RMSNorm of X → QKV projection → split and
// transpose Q, K → (per-head RMSNorm) → RoPE → (per-head RMSNorm) →
// (fp8 K/V) → flash decode attention over the prior cache and the active
// tokens → KV-cache update at cache_position → (o_proj), one SBUF-resident
// chain on the two logical cores with H split between them.
//
// Tokens: T = B·S rows, row b·S + s. Inputs: X [B, S, H]; rmsnorm_gamma
// [H]; W_qkv [H, (q_heads + 2·kv_heads)·d]; cos, sin [B, S, d/2]; K_cache,
// V_cache [B, kv_heads, C, d] (updated in place; float8_e4m3 with fp8_kv);
// mask_cache [B, C] in {0, 1}; cache_position [B] int32 in [0, C − S];
// qk_norm_gamma_q, qk_norm_gamma_k [d] (qk_norm only); W_o [q_heads·d, H]
// (o_proj only). Output: out [B, S, H] (this rank's o_proj partial sum) or
// [B, S, q_heads·d] with o_proj=0.

#include <cstdint>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "builder/tensor.h"
#include "kernels/decode_common.h"
#include "kernels/kernel_spec.h"
#include "proto/nkigraph.pb.h"
#include "util/host_array.h"

namespace nkigraph::kernels {

// Where the per-head RMSNorm of Q and K sits, if anywhere.
enum class QkNorm { kNone, kPreRope, kPostRope };

struct AttentionParams : DecodeParams {
  QkNorm qk_norm = QkNorm::kNone;
  bool fp8_kv = false;
  bool o_proj = true;

  // (q_heads + 2·kv_heads)·d: the QKV projection's width.
  int64_t QkvWidth() const { return (q_heads + 2 * kv_heads) * head_dim; }
  // q_heads·d with o_proj=0, else H: the width of one output row.
  int64_t OutWidth() const { return o_proj ? hidden : q_heads * head_dim; }
  // The dtype of K_cache and V_cache.
  proto::DType CacheDType() const {
    return fp8_kv ? proto::FLOAT8_E4M3 : dtype;
  }
};

// The HBM tensors of one attention layer (the composer passes layer l's
// slices of its stacked inputs). qk_norm_gamma_* only with qk_norm, w_o
// only with o_proj; K and V caches are written in place.
struct AttentionWeights {
  builder::Tensor rmsnorm_gamma;    // [H]
  builder::Tensor w_qkv;            // [H, (q_heads + 2·kv_heads)·d]
  builder::Tensor cos;              // [B, S, d/2]
  builder::Tensor sin;              // [B, S, d/2]
  builder::Tensor k_cache;          // [B, kv_heads, C, d]
  builder::Tensor v_cache;          // [B, kv_heads, C, d]
  builder::Tensor mask_cache;       // [B, C]
  builder::Tensor cache_position;   // [B] int32
  builder::Tensor qk_norm_gamma_q;  // [d]
  builder::Tensor qk_norm_gamma_k;  // [d]
  builder::Tensor w_o;              // [q_heads·d, H]
};

// Declares every input of the registered kernel's I/O table but X (those
// present for `p`): the weights of a body that calls AttentionBlockTkg.
AttentionWeights DeclareAttentionWeights(KernelIo& io,
                                         const AttentionParams& p);

// The device kernel, once per core of a two-core world. io.x and io.out
// are HBM [T, H] (and [T, OutWidth] out) or, for the composer's SBUF path,
// SBUF tensors (kernels/decode_common.h BlockIo).
void AttentionBlockTkg(const BlockIo& io, const AttentionWeights& w,
                       const AttentionParams& p);

// One layer's host-side inputs for the reference, float32 values as the
// device holds them; the caches are updated in place.
struct AttentionHostLayer {
  absl::Span<const float> x;                 // [T, H]
  absl::Span<const float> rmsnorm_gamma;     // [H]
  absl::Span<const float> w_qkv;             // [H, QkvWidth]
  absl::Span<const float> cos;               // [T, d/2]
  absl::Span<const float> sin;               // [T, d/2]
  absl::Span<const float> mask_cache;        // [B, C]
  absl::Span<const int32_t> cache_position;  // [B]
  absl::Span<const float> qk_norm_gamma_q;   // [d], qk_norm only
  absl::Span<const float> qk_norm_gamma_k;   // [d], qk_norm only
  absl::Span<const float> w_o;               // [q_heads·d, H], o_proj only
  absl::Span<float> k_cache;                 // [B, kv_heads, C, d]
  absl::Span<float> v_cache;                 // [B, kv_heads, C, d]
};

// The plain reference of one layer: returns out [T, OutWidth] and writes
// the active tokens' K and V into the caches. Softmax the ordinary way,
// in double. It rounds where the contract fixes values: the normalised X
// to dtype (the projection's operand) and, with fp8_kv, K and V clipped
// to ±the e4m3 maximum and rounded to e4m3. An error when a
// cache_position is outside [0, C − S].
absl::StatusOr<std::vector<float>> AttentionLayerReference(
    const AttentionParams& p, const AttentionHostLayer& layer);

// The registered kernel's reference: the contract's arrays in and out.
HostOutputs AttentionBlockTkgReference(const AttentionParams& p,
                                       const HostArrays& inputs);

// Inputs for the registered kernel, deterministic in `seed`: weights of
// variance 1/fan-in (scores of order 1), cache_position uniform in
// [0, C − S], mask_cache 1 on about nine in ten of the positions before it
// and 0 from it on, cos and sin of real RoPE angles; values rounded as the
// device holds them.
HostOutputs MakeAttentionBlockTkgInputs(const AttentionParams& p,
                                        uint64_t seed);

const KernelSpec<AttentionParams>& AttentionBlockTkgSpec();

}  // namespace nkigraph::kernels

#endif  // NKIGRAPH_KERNELS_ATTENTION_BLOCK_TKG_H_
