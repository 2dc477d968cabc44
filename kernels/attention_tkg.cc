// The middle of attention_block_tkg (kernels/attention_tkg.h).
//
//   q, k, v   = head views of qkv [T, (Hq + 2·Hkv)·d]        # float32
//   [pre]     q, k = RMSNorm_d(q) · γq, RMSNorm_d(k) · γk
//   q, k      = rope(q), rope(k)                            # rotate half
//   [post]    q, k = RMSNorm_d(q) · γq, RMSNorm_d(k) · γk
//   [fp8]     k, v = e4m3(clip(k, ±240)), e4m3(clip(v, ±240))
//   q_T, k_T  = per-head PE transposes                     # [d, heads, T]
//   per pair (b, g), query rows i = s·R + r:
//     m = −1e30, l = 0, acc = 0
//     for each block of keys: the active tokens (causal), then the prior
//     cache in tiles of 128 positions (masked by mask_cache[b]):
//       s    = q·kᵀ / √d (+ the mask: −1e30 where masked)
//       m'   = max(m, rowmax(s));   c = exp(m − m')
//       p    = exp(s − m');         l = l·c + rowsum(p)
//       acc  = acc·c + p·v;         m = m'
//     o = acc / l
//   cache[b, g, cache_position[b] + s] = k, v of token b·S + s
#include "kernels/attention_tkg.h"

#include <cmath>
#include <cstdint>

#include "kernels/device.h"
#include "kernels/dsl.h"
#include "kernels/epilogue.h"

namespace nkigraph::kernels {
namespace {

// The score of a masked position: finite, so exp(masked − m) is exactly 0
// for any real running max m and no inf − inf can arise.
constexpr float kMaskedScore = -1e30f;

int64_t GroupSize(const AttentionParams& p) { return p.q_heads / p.kv_heads; }

// The running state of one pair's softmax, one query row per partition.
struct FlashState {
  Tensor max;  // [rows, 1] float32
  Tensor sum;  // [rows, 1] float32: the denominator
  Tensor acc;  // [rows, d] float32: the unnormalised output
};

FlashState StartFlash(int64_t rows, int64_t d) {
  FlashState st{
      builder::ndarray({rows, 1}, proto::FLOAT32, Buffer::kSbuf, "flash_max"),
      builder::ndarray({rows, 1}, proto::FLOAT32, Buffer::kSbuf, "flash_sum"),
      builder::ndarray({rows, d}, proto::FLOAT32, Buffer::kSbuf, "flash_acc")};
  isa::memset(st.max, kMaskedScore);
  isa::memset(st.sum, 0.0f);
  isa::memset(st.acc, 0.0f);
  return st;
}

// One block of keys: `scores` [rows, n] float32 (scaled and masked) and
// their values `v` [n, d] (dtype, n ≤ 128 on the partitions).
void UpdateFlash(const FlashState& st, const Tensor& scores, const Tensor& v,
                 proto::DType dtype) {
  if (!scores.valid() || !v.valid()) return;
  Scope scope("flash_update");
  const int64_t rows = scores.dim(0), n = scores.dim(1), d = v.dim(1);
  Tensor block_max =
      builder::ndarray({rows, 1}, proto::FLOAT32, Buffer::kSbuf, "block_max");
  isa::tensor_reduce(block_max, isa::Alu::kMaximum, scores);
  Tensor new_max =
      builder::ndarray({rows, 1}, proto::FLOAT32, Buffer::kSbuf, "new_max");
  isa::tensor_tensor(new_max, st.max, block_max, isa::Alu::kMaximum);
  Tensor neg_max =
      builder::ndarray({rows, 1}, proto::FLOAT32, Buffer::kSbuf, "neg_max");
  isa::tensor_scalar(neg_max, new_max, isa::Alu::kMultiply, -1.0f);
  // correction = exp(m − m'): rescales what was summed under the old max.
  Tensor correction =
      builder::ndarray({rows, 1}, proto::FLOAT32, Buffer::kSbuf, "correction");
  isa::activation(correction, isa::ActFunc::kExp, st.max, {.bias = neg_max});
  // p = exp(s − m'), its row sums in the scalar engine's registers.
  Tensor probs = builder::ndarray({rows, n}, dtype, Buffer::kSbuf, "probs");
  Tensor row_sum =
      builder::ndarray({rows, 1}, proto::FLOAT32, Buffer::kSbuf, "row_sum");
  isa::activation(probs, isa::ActFunc::kExp, scores,
                  {.bias = neg_max,
                   .reduce_cmd = isa::ReduceCmd::kResetReduce,
                   .reduce_res = row_sum});
  isa::scalar_tensor_tensor(st.sum, st.sum, isa::Alu::kMultiply, correction,
                            isa::Alu::kAdd, row_sum);
  // acc = acc · correction + p · v: p transposed so the keys contract.
  Tensor probs_T_psum =
      builder::ndarray({n, rows}, dtype, Buffer::kPsum, "probs_T_psum");
  isa::nc_transpose(probs_T_psum, probs);
  const Tensor probs_T = EvacuatePsum(probs_T_psum, dtype, "probs_T");
  Tensor pv_psum =
      builder::ndarray({rows, d}, proto::FLOAT32, Buffer::kPsum, "pv_psum");
  isa::nc_matmul(pv_psum, probs_T, v);
  isa::scalar_tensor_tensor(st.acc, st.acc, isa::Alu::kMultiply, correction,
                            isa::Alu::kAdd, pv_psum);
  isa::tensor_copy(st.max, new_max);
}

// The active tokens of pair (b, g): scores against the S keys just
// computed, query row i = s·R + r keeping key s' only when s' ≤ s, i.e.
// i − R·s' ≥ 0.
void AttendActive(const FlashState& st, const Tensor& q_pair,
                  const PairInputs& in, const AttentionParams& p) {
  Scope scope("active_tokens");
  const int64_t s = p.seq_tkg, r = GroupSize(p), d = p.head_dim;
  const int64_t rows = s * r;
  Tensor psum =
      builder::ndarray({rows, s}, proto::FLOAT32, Buffer::kPsum, "scores_psum");
  isa::nc_matmul(psum, q_pair, in.k_T.Select(1, in.g).Slice(1, in.b * s, s));
  Tensor scaled =
      builder::ndarray({rows, s}, proto::FLOAT32, Buffer::kSbuf, "scaled");
  isa::tensor_scalar(scaled, psum, isa::Alu::kMultiply,
                     1.0 / std::sqrt(static_cast<double>(d)));
  Tensor scores =
      builder::ndarray({rows, s}, proto::FLOAT32, Buffer::kSbuf, "scores");
  isa::affine_select(scores, {{-r, s}}, /*channel_multiplier=*/1, scaled,
                     kMaskedScore, isa::Alu::kGreaterEqual);
  // The values on partitions 0 … S − 1 (an SBUF-to-SBUF DMA): a matmul
  // operand of S ≤ 32 rows must start on a quadrant.
  Tensor v = builder::ndarray({s, d}, p.dtype, Buffer::kSbuf, "v_active");
  isa::dma_copy(v, in.v_rows.Slice(0, in.b * s, s).Select(1, in.g));
  UpdateFlash(st, scores, v, p.dtype);
}

// The prior cache of pair (b, g), 128 positions at a time.
void AttendCache(const FlashState& st, const Tensor& q_pair,
                 const PairInputs& in, const AttentionParams& p) {
  const int64_t rows = p.seq_tkg * GroupSize(p), d = p.head_dim;
  const Tensor k_cache = in.k_cache.Select(0, in.b).Select(0, in.g);  // [C, d]
  const Tensor v_cache = in.v_cache.Select(0, in.b).Select(0, in.g);
  const Tensor mask = in.mask_cache.Select(0, in.b);  // [C]
  for (const Tile c : TiledRange(p.cache_len, Partitions())) {
    Scope scope("cache_tile");
    // kᵀ read transposed straight from HBM (the cache's dtype cast to the
    // matmul's on the way).
    Tensor k_T = builder::ndarray({d, c.size}, p.dtype, Buffer::kSbuf, "k_T");
    isa::dma_copy(k_T, k_cache.Slice(0, c.offset, c.size).Permute({1, 0}));
    Tensor v = builder::ndarray({c.size, d}, p.dtype, Buffer::kSbuf, "v");
    isa::dma_copy(v, v_cache.Slice(0, c.offset, c.size));
    // The mask as an additive bias, one row per query: (mask − 1) · 1e30.
    Tensor mask_rows = builder::ndarray({rows, c.size}, proto::FLOAT32,
                                        Buffer::kSbuf, "mask_rows");
    isa::dma_copy(mask_rows,
                  mask.Slice(0, c.offset, c.size).Broadcast(0, rows));
    Tensor bias =
        builder::ndarray({rows, c.size}, proto::FLOAT32, Buffer::kSbuf, "bias");
    isa::tensor_scalar(bias, mask_rows, isa::Alu::kSubtract, 1.0f,
                       {.op1 = isa::Alu::kMultiply, .operand1 = -kMaskedScore});
    Tensor psum = builder::ndarray({rows, c.size}, proto::FLOAT32,
                                   Buffer::kPsum, "scores_psum");
    isa::nc_matmul(psum, q_pair, k_T);
    Tensor scores = builder::ndarray({rows, c.size}, proto::FLOAT32,
                                     Buffer::kSbuf, "scores");
    isa::scalar_tensor_tensor(scores, psum, isa::Alu::kMultiply,
                              1.0 / std::sqrt(static_cast<double>(d)),
                              isa::Alu::kAdd, bias);
    UpdateFlash(st, scores, v, p.dtype);
  }
}

}  // namespace

QkvHeads SplitHeads(const Tensor& qkv, const AttentionParams& p) {
  const Tensor heads =
      qkv.Reshape({p.tokens(), p.q_heads + 2 * p.kv_heads, p.head_dim});
  return QkvHeads{heads.Slice(1, 0, p.q_heads),
                  heads.Slice(1, p.q_heads, p.kv_heads),
                  heads.Slice(1, p.q_heads + p.kv_heads, p.kv_heads)};
}

void HeadRmsNorm(const Tensor& x, const Tensor& gamma,
                 const AttentionParams& p) {
  if (!x.valid()) return;
  Scope scope("head_rmsnorm");
  const int64_t t = x.dim(0), heads = x.dim(1), d = x.dim(2);
  Tensor squares = builder::ndarray({t, heads, d}, proto::FLOAT32,
                                    Buffer::kSbuf, "head_squares");
  isa::activation(squares, isa::ActFunc::kSquare, x);
  Tensor sums =
      builder::ndarray({t, heads}, proto::FLOAT32, Buffer::kSbuf, "head_sums");
  isa::tensor_reduce(sums, isa::Alu::kAdd, squares);
  // rstd = rsqrt(Σ/d + eps), eps the activation's bias.
  Tensor rstd =
      builder::ndarray({t, heads}, proto::FLOAT32, Buffer::kSbuf, "head_rstd");
  isa::activation(
      rstd, isa::ActFunc::kRsqrt, sums,
      {.bias = p.rmsnorm_eps, .scale = 1.0 / static_cast<double>(d)});
  Tensor gamma_rows =
      builder::ndarray({t, d}, proto::FLOAT32, Buffer::kSbuf, "head_gamma");
  isa::dma_copy(gamma_rows, gamma.Broadcast(0, t));
  isa::tensor_tensor(x, x, rstd.Broadcast(2, d), isa::Alu::kMultiply);
  isa::tensor_tensor(x, x, gamma_rows.Broadcast(1, heads), isa::Alu::kMultiply);
}

Tensor LoadRopeRows(const Tensor& table, const AttentionParams& p,
                    const char* name) {
  const int64_t half = p.head_dim / 2;
  Tensor rows =
      builder::ndarray({p.tokens(), half}, proto::FLOAT32, Buffer::kSbuf, name);
  isa::dma_copy(rows, table.Reshape({p.tokens(), half}));
  return rows;
}

Tensor ApplyRope(const Tensor& x, const Tensor& cos, const Tensor& sin,
                 const char* name) {
  if (!x.valid()) return Tensor();
  const int64_t t = x.dim(0), heads = x.dim(1), d = x.dim(2), half = d / 2;
  Tensor out =
      builder::ndarray({t, heads, d}, proto::FLOAT32, Buffer::kSbuf, name);
  Scope scope("rope");
  const Tensor x1 = x.Slice(2, 0, half), x2 = x.Slice(2, half, half);
  const Tensor c = cos.Broadcast(1, heads), s = sin.Broadcast(1, heads);
  Tensor a = builder::ndarray({t, heads, half}, proto::FLOAT32, Buffer::kSbuf,
                              "rope_a");
  Tensor b = builder::ndarray({t, heads, half}, proto::FLOAT32, Buffer::kSbuf,
                              "rope_b");
  // out1 = x1·cos − x2·sin
  isa::tensor_tensor(a, x1, c, isa::Alu::kMultiply);
  isa::tensor_tensor(b, x2, s, isa::Alu::kMultiply);
  isa::tensor_tensor(out.Slice(2, 0, half), a, b, isa::Alu::kSubtract);
  // out2 = x2·cos + x1·sin
  isa::tensor_tensor(a, x2, c, isa::Alu::kMultiply);
  isa::tensor_tensor(b, x1, s, isa::Alu::kMultiply);
  isa::tensor_tensor(out.Slice(2, half, half), a, b, isa::Alu::kAdd);
  return out;
}

Tensor QuantizeFp8(const Tensor& x, const char* name) {
  if (!x.valid()) return Tensor();
  Tensor out =
      builder::ndarray(x.shape(), proto::FLOAT8_E4M3, Buffer::kSbuf, name);
  Scope scope("quantize_fp8");
  const float max = KernelDevice().fp8_e4m3_max;
  Tensor clipped =
      builder::ndarray(x.shape(), proto::FLOAT32, Buffer::kSbuf, "clipped");
  isa::tensor_scalar(clipped, x, isa::Alu::kMinimum, max,
                     {.op1 = isa::Alu::kMaximum, .operand1 = -max});
  isa::tensor_copy(out, clipped);
  return out;
}

Tensor ConvertTo(const Tensor& x, proto::DType dtype, const char* name) {
  if (!x.valid()) return Tensor();
  Tensor out = builder::ndarray(x.shape(), dtype, Buffer::kSbuf, name);
  isa::tensor_copy(out, x);
  return out;
}

Tensor TransposeHeads(const Tensor& x, const char* name) {
  if (!x.valid()) return Tensor();
  const int64_t t = x.dim(0), heads = x.dim(1), d = x.dim(2);
  Tensor x_T = builder::ndarray({d, heads, t}, x.dtype(), Buffer::kSbuf, name);
  Scope scope("transpose_heads");
  for (int64_t h = 0; h < heads; ++h) {
    Scope head("head");
    Tensor psum =
        builder::ndarray({d, t}, x.dtype(), Buffer::kPsum, "head_T_psum");
    isa::nc_transpose(psum, x.Select(1, h));
    EvacuatePsum(x_T.Select(1, h), psum);
  }
  return x_T;
}

Tensor CacheRowIndex(const Tensor& cache_position, const AttentionParams& p) {
  const int64_t t = p.tokens(), s = p.seq_tkg;
  Tensor index =
      builder::ndarray({t, 1}, proto::INT32, Buffer::kSbuf, "cache_row");
  Scope scope("cache_row_index");
  // cache_position[b] on each of its sequence's S rows.
  Tensor position =
      builder::ndarray({t, 1}, proto::INT32, Buffer::kSbuf, "position_rows");
  isa::dma_copy(position, cache_position.Reshape({p.batch, 1}).Broadcast(1, s));
  // s = t mod S.
  Tensor row = builder::ndarray({t, 1}, proto::INT32, Buffer::kSbuf, "row");
  isa::iota(row, {{0, 1}}, /*offset=*/0, /*channel_multiplier=*/1);
  Tensor step = builder::ndarray({t, 1}, proto::INT32, Buffer::kSbuf, "step");
  isa::tensor_scalar(step, row, isa::Alu::kMod, static_cast<float>(s));
  isa::tensor_tensor(index, position, step, isa::Alu::kAdd);
  return index;
}

void FlashDecodePair(const Tensor& o, const PairInputs& in,
                     const AttentionParams& p) {
  Scope scope("flash_decode");
  const int64_t s = p.seq_tkg, r = GroupSize(p), d = p.head_dim;
  const int64_t rows = s * r;
  // The pair's queries as one stationary operand, column i = s·R + r.
  Tensor q_pair = builder::ndarray({d, s, r}, p.dtype, Buffer::kSbuf, "q_pair");
  isa::tensor_copy(
      q_pair,
      in.q_T.Slice(1, in.g * r, r).Slice(2, in.b * s, s).Permute({0, 2, 1}));
  const Tensor q = q_pair.Reshape({d, rows});
  const FlashState st = StartFlash(rows, d);
  AttendActive(st, q, in, p);
  AttendCache(st, q, in, p);
  isa::tensor_scalar(o, st.acc, isa::Alu::kDivide, st.sum);
}

void WriteCacheRows(const Tensor& cache, const Tensor& rows,
                    const Tensor& row_index, int64_t b, int64_t g,
                    const AttentionParams& p) {
  if (!cache.valid()) return;
  const int64_t s = p.seq_tkg;
  // Row s of the view lands on cache row row_index[b·S + s] along C. The
  // offset's dim counts the declared tensor's dims, and C is its
  // second-to-last whether `cache` is the whole [B, kv_heads, C, d] tensor
  // or one layer's slice of a stacked [L, B, kv_heads, C, d] one.
  const int c_dim = cache.decl().shape_size() - 2;
  const Tensor dst = cache.Select(0, b)
                         .Select(0, g)
                         .Select(0, 0)
                         .Broadcast(0, s)
                         .WithVectorOffset(row_index.Slice(0, b * s, s), c_dim);
  isa::dma_copy(dst, rows.Slice(0, b * s, s).Select(1, g));
}

}  // namespace nkigraph::kernels
