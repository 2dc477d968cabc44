#ifndef NKIGRAPH_KERNELS_ATTENTION_TKG_H_
#define NKIGRAPH_KERNELS_ATTENTION_TKG_H_

// The middle of attention_block_tkg, between the QKV projection and o_proj
// (kernels/attention_block_tkg.h): head views of the projection, the
// per-head RMSNorm, RoPE, the fp8 quantisation of K and V, the per-head
// transposes, the flash decode attention of one (sequence, kv head) pair
// and its KV-cache update. Everything stays in SBUF.
//
// Layouts (T = B·S token rows, R = q_heads / kv_heads):
//   token rows   [T, heads, d]  float32: the projection's columns per head
//   transposed   [d, heads, T]  dtype: the matmul operands
//   query rows of pair (b, g): i = s·R + r for query head g·R + r of token
//                b·S + s, S·R ≤ 128 of them on the partitions.
// Given an invalid tensor (a trace that has already failed), the stages
// record nothing and return an invalid tensor.

#include "builder/tensor.h"
#include "kernels/attention_block_tkg.h"

namespace nkigraph::kernels {

// Q, K and V of the float32 projection [T, QkvWidth], as head views
// [T, heads, d] (no copy).
struct QkvHeads {
  builder::Tensor q;  // [T, q_heads, d]
  builder::Tensor k;  // [T, kv_heads, d]
  builder::Tensor v;  // [T, kv_heads, d]
};
QkvHeads SplitHeads(const builder::Tensor& qkv, const AttentionParams& p);

// x = RMSNorm(x) · gamma over d, in place, for every token and head of the
// float32 head view x [T, heads, d]; `gamma` an HBM [d] tensor.
void HeadRmsNorm(const builder::Tensor& x, const builder::Tensor& gamma,
                 const AttentionParams& p);

// cos or sin [B, S, d/2] as float32 token rows [T, d/2], a new SBUF tensor.
builder::Tensor LoadRopeRows(const builder::Tensor& table,
                             const AttentionParams& p, const char* name);

// Rotate-half RoPE of x [T, heads, d] into a new float32 tensor:
// [x1·cos − x2·sin, x2·cos + x1·sin], cos and sin [T, d/2] per token.
builder::Tensor ApplyRope(const builder::Tensor& x, const builder::Tensor& cos,
                          const builder::Tensor& sin, const char* name);

// x clipped to ±the target's e4m3 maximum (240 on trn2) and rounded to
// float8_e4m3: a new SBUF tensor.
builder::Tensor QuantizeFp8(const builder::Tensor& x, const char* name);

// x converted to `dtype` (a new SBUF tensor of x's shape).
builder::Tensor ConvertTo(const builder::Tensor& x, proto::DType dtype,
                          const char* name);

// The per-head transposes: x [T, heads, d] to a new [d, heads, T] tensor
// of x's dtype, one tensor-engine transpose per head.
builder::Tensor TransposeHeads(const builder::Tensor& x, const char* name);

// The cache row each token row writes: row_index[t] = cache_position[b] + s
// for t = b·S + s, a new int32 SBUF tensor [T, 1].
builder::Tensor CacheRowIndex(const builder::Tensor& cache_position,
                              const AttentionParams& p);

// What the flash attention of pair (b, g) reads.
struct PairInputs {
  int64_t b;
  int64_t g;
  builder::Tensor q_T;         // [d, q_heads, T] dtype
  builder::Tensor k_T;         // [d, kv_heads, T] dtype: the active keys
  builder::Tensor v_rows;      // [T, kv_heads, d] dtype: the active values
  builder::Tensor k_cache;     // HBM [B, kv_heads, C, d]
  builder::Tensor v_cache;     // HBM [B, kv_heads, C, d]
  builder::Tensor mask_cache;  // HBM [B, C]
};

// o [S·R, d] (dtype, query rows i = s·R + r) = softmax(q·Kᵀ/√d)·V over the
// prior cache positions j with mask_cache[b, j] = 1, in tiles of 128
// positions, and the active tokens s' ≤ s; a running max and denominator,
// the scores never leaving SBUF.
void FlashDecodePair(const builder::Tensor& o, const PairInputs& in,
                     const AttentionParams& p);

// cache[b, g, row_index[b·S + s], :] = rows[b·S + s, g, :] for s < S: one
// DMA whose destination rows come from a vector dynamic offset along C, so
// a cache_position outside [0, C − S] is a device error naming it.
void WriteCacheRows(const builder::Tensor& cache, const builder::Tensor& rows,
                    const builder::Tensor& row_index, int64_t b, int64_t g,
                    const AttentionParams& p);

}  // namespace nkigraph::kernels

#endif  // NKIGRAPH_KERNELS_ATTENTION_TKG_H_
