#ifndef NKIGRAPH_KERNELS_DECODE_COMMON_H_
#define NKIGRAPH_KERNELS_DECODE_COMMON_H_

// What the decode-transformer family (§3: attention_block_tkg, mlp_tkg and
// their composer transformer_tkg) shares: the parameters, the I/O rows, and
// the three stages every block is built from, so attention and MLP run the
// same code for them. The family's world is TwoCoreWorld(tp_degree); its
// tolerance ScaleTolerance (outputs are sums of many products).
//
// Tokens: T = B·S rows, row b·S + s, so X [B, S, H] is viewed as [T, H].
// Two logical cores (LNC 2) split H: core c owns the hidden columns
// Hc = [c·H/2, (c+1)·H/2), tiled by 128 with a short last tile. A block is
//   1. RmsNormXT: xnT = RMSNorm(x)^T over this core's columns, as
//      partition tiles [≤128 hidden rows, HcT, T]. The sum of squares is a
//      matmul of (xT)² against an all-ones stationary operand (every PSUM
//      partition receives the column sums), this core's partial sum
//      exchanged with the other core's by one sendrecv and added; rstd by
//      one activation rsqrt(sum · 1/H + eps), eps its bias. Nothing
//      normalised leaves SBUF.
//   2. InputProjection: [T, N] = Σ over this core's H tiles xnT^T · W, the
//      two partial sums combined by one sendrecv + add, so both cores hold
//      the whole projection (float32, SBUF).
//   3. the block's own middle (attention; silu(gate) · up);
//   4. OutputProjection: out[:, Hc] = in · W[:, Hc], the contraction over
//      the full middle width both cores hold; each core its columns.
//
// Both paths of a block (BlockIo) run the same arithmetic in the same
// order — only where x comes from and where out goes differ — so a
// composer's HBM and SBUF paths agree bit for bit.

#include <cstdint>
#include <initializer_list>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "builder/tensor.h"
#include "builder/tracer.h"
#include "kernels/kernel_spec.h"
#include "kernels/moe_common.h"
#include "kernels/two_cores.h"
#include "proto/nkigraph.pb.h"

namespace nkigraph::kernels {

// --- Parameters -------------------------------------------------------------

// The family's shared parameters (KERNELS.md Family 3). Each kernel's
// struct derives from it and lists the fields it takes (DecodeFields); the
// defaults trace and run every kernel in well under a second, and cache_len
// is not a tile multiple on purpose.
struct DecodeParams {
  int64_t batch = 2;           // B
  int64_t seq_tkg = 2;         // S: active tokens per sequence
  int64_t hidden = 512;        // H, split across the two cores
  int64_t q_heads = 4;         // per TP rank
  int64_t kv_heads = 2;        // per TP rank
  int64_t head_dim = 64;       // d
  int64_t cache_len = 200;     // C: prior positions
  int64_t intermediate = 384;  // I, per rank
  double rmsnorm_eps = 1e-6;
  proto::DType dtype = proto::BFLOAT16;

  // T = B·S, the token rows.
  int64_t tokens() const { return batch * seq_tkg; }
};

// Upper limits. On-chip buffers are O(H + N) per partition for a
// projection of width N; these fit one SBUF partition with room to spare
// (the Llama-3-70B per-rank shape for tp 64 has H = 8192).
inline constexpr int64_t kDecodeMaxBatch = 128;
inline constexpr int64_t kDecodeMaxSeq = 128;
inline constexpr int64_t kDecodeMaxHidden = 16384;
inline constexpr int64_t kDecodeMaxHeads = 128;
inline constexpr int64_t kDecodeMaxHeadDim = 128;
inline constexpr int64_t kDecodeMaxCacheLen = 1 << 20;
inline constexpr int64_t kDecodeMaxIntermediate = 8192;

// The fields named in `names` (any of batch, seq_tkg, hidden, q_heads,
// kv_heads, head_dim, cache_len, intermediate, rmsnorm_eps, dtype), in that
// order, with the limits above. P derives from DecodeParams.
template <typename P>
std::vector<ParamField<P>> DecodeFields(
    std::initializer_list<absl::string_view> names);

// What the limits cannot say for the token rows and the H split: hidden
// even, B·S ≤ 128 (the token rows of one tile). Messages name the
// parameters and the limit.
absl::Status ValidateDecodeTokens(const DecodeParams& params);
// The heads: q_heads a multiple of kv_heads, head_dim even, and
// B·S·q_heads ≤ 128 (every query row of every token on one tile's
// partitions, as the original asserts).
absl::Status ValidateDecodeHeads(const DecodeParams& params);
// What a kernel running the attention block checks beyond its fields'
// limits: the tokens and heads above, and cache_len ≥ seq_tkg.
absl::Status ValidateDecodeAttention(const DecodeParams& params);

// A float8_e4m3 cache against its reference: one e4m3 step of the
// output's scale (a step is at most 2^-3 of the largest magnitude). The
// kernel quantises its float32 projection, the reference its double one:
// a value within a float32 rounding of a step's midpoint lands on either
// side (seen: 1 element of 64,386 in a sweep).
double Fp8CacheTolerance();

// --- The I/O rows -----------------------------------------------------------

// `X` [B, S, H].
template <typename P>
IoEntry<P> DecodeXRow() {
  return InputRow<P>("X", "[B, S, H]", [](const P& p) {
    return Shape{p.batch, p.seq_tkg, p.hidden};
  });
}
// A norm's gamma [H] (`rmsnorm_gamma`), or [L, H] stacked by a composer.
template <typename P>
IoEntry<P> DecodeGammaRow(std::string name) {
  return InputRow<P>(std::move(name), "[H]",
                     [](const P& p) { return Shape{p.hidden}; });
}
// `out` [B, S, H].
template <typename P>
IoEntry<P> DecodeOutRow() {
  return OutputRow<P>("out", "[B, S, H]", [](const P& p) {
    return Shape{p.batch, p.seq_tkg, p.hidden};
  });
}

// --- Device side
// --------------------------------------------------------------

// The two ends of a block.
//  HBM path:  x is a [T, H] HBM tensor both cores read; out a [T, H] HBM
//             tensor, each core writing its columns Hc.
//  SBUF path: x is an SBUF [T, H] tensor holding the full residual on each
//             core; out an SBUF [T, H/2] tensor, this core's shard of the
//             block's output, left in SBUF.
struct BlockIo {
  builder::Tensor x;
  builder::Tensor out;
};
bool XInSbuf(const BlockIo& io);
bool OutInSbuf(const BlockIo& io);

// This core's hidden columns Hc.
CoreShard HiddenShard(const DecodeParams& params);

// Stage 1: xnT = (x · rstd · gamma)^T on this core's columns, a new SBUF
// tensor of params.dtype [min(H/2, 128), HcT, T] (PartitionTiledShape;
// tile k holds the columns of ShardTiles(HiddenShard, 128)[k]). `gamma` is
// an HBM [H] view. Temporaries are freed on return; the result lives in
// the caller's scope.
builder::Tensor RmsNormXT(const BlockIo& io, const builder::Tensor& gamma,
                          const DecodeParams& params,
                          builder::Loc loc = builder::Loc::current());

// Stage 2: x · W with W an HBM [H, N] view: a new float32 SBUF tensor
// [T, N] holding the whole projection on both cores (this core's partial
// sum over its H tiles plus the other core's, by one sendrecv and an add).
// N tiles of at most 512 columns.
builder::Tensor InputProjection(const builder::Tensor& xnT,
                                const builder::Tensor& w,
                                const DecodeParams& params,
                                absl::string_view name,
                                builder::Loc loc = builder::Loc::current());

// rows^T as partition tiles: for an SBUF [T, K] tensor, a new SBUF tensor
// of its dtype [min(K, 128), KT, T], by tensor-engine transposes. What
// stage 4 takes.
builder::Tensor TransposeRows(const builder::Tensor& rows,
                              absl::string_view name,
                              builder::Loc loc = builder::Loc::current());

// Stage 4: io.out's columns of this core = in · W[:, Hc], W an HBM [K, H]
// view and `in_T` the partition tiles of in [T, K] (TransposeRows). Output
// tiles of at most 512 columns, written in params.dtype (to HBM, or left in
// the SBUF shard).
void OutputProjection(const builder::Tensor& in_T, const builder::Tensor& w,
                      const BlockIo& io, const DecodeParams& params,
                      builder::Loc loc = builder::Loc::current());

// --- Host side (references)
// ---------------------------------------------------

// RMSNorm(x) = x / sqrt(mean(x²) + eps) · gamma of each of the T rows of
// x [T, H], in double.
std::vector<double> ReferenceRmsNorm(absl::Span<const float> x,
                                     absl::Span<const float> gamma, int64_t t,
                                     int64_t h, double eps);

// --- Template definitions
// -----------------------------------------------------

template <typename P>
std::vector<ParamField<P>> DecodeFields(
    std::initializer_list<absl::string_view> names) {
  static_assert(std::is_base_of_v<DecodeParams, P>);
  std::vector<ParamField<P>> all = {
      IntField<P>("batch", &P::batch, {1, kDecodeMaxBatch}, "B: sequences")
          // B·S token rows on ≤ 128 partitions.
          .Edges({2, 127, 128}),
      IntField<P>("seq_tkg", &P::seq_tkg, {1, kDecodeMaxSeq},
                  "S: active tokens per sequence")
          .Edges({2, 127, 128}),
      IntField<P>("hidden", &P::hidden, {2, kDecodeMaxHidden},
                  "H: hidden size (even), split across the two cores")
          // Each core's half in tiles of 128, output tiles of 512.
          .Edges({254, 256, 258, 1022, 1024, 1026}),
      IntField<P>("q_heads", &P::q_heads, {1, kDecodeMaxHeads},
                  "query heads per TP rank (a multiple of kv_heads)")
          .Edges({2, 8}),
      IntField<P>("kv_heads", &P::kv_heads, {1, kDecodeMaxHeads},
                  "key/value heads per TP rank")
          .Edges({2}),
      IntField<P>("head_dim", &P::head_dim, {2, kDecodeMaxHeadDim},
                  "d: head size (even)")
          .Edges({64, 126, 128}),
      IntField<P>("cache_len", &P::cache_len, {1, kDecodeMaxCacheLen},
                  "C: prior positions in the KV cache")
          .Edges(AroundTiles({128, 512})),
      IntField<P>("intermediate", &P::intermediate, {1, kDecodeMaxIntermediate},
                  "I: MLP intermediate size per TP rank")
          .Edges(AroundTiles({128, 512})),
      FloatField<P>("rmsnorm_eps", &P::rmsnorm_eps, {1e-12, 1.0},
                    "eps of every RMSNorm"),
      DTypeField<P>(),
  };
  std::vector<ParamField<P>> fields;
  for (ParamField<P>& field : all) {
    for (absl::string_view name : names) {
      if (field.spec.name == name) fields.push_back(std::move(field));
    }
  }
  return fields;
}

}  // namespace nkigraph::kernels

#endif  // NKIGRAPH_KERNELS_DECODE_COMMON_H_
