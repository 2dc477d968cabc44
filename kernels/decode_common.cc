// The decode family's shared stages (kernels/decode_common.h).
//
//   RmsNormXT (this core's columns Hc, T tokens):
//     xT[h, t]    = x[t, h]^T                 # DMA transposed read, or PE
//                                             # transposes from SBUF
//     sq          = xT²                       # float32
//     ss[p, t]    = Σ_h ones[h, p] · sq[h, t] # every partition: Σ over Hc
//     ss         += sendrecv(ss)              # + the other core's Σ
//     rstd        = rsqrt(ss · 1/H + eps)     # one activation, eps its bias
//     xnT         = xT · gamma[h] · rstd
//   InputProjection:  [T, N] = Σ_{h tiles of Hc} xnT^T · W  (+ sendrecv)
//   OutputProjection: out[:, Hc] = Σ_{k tiles} in_T^T · W[:, Hc]
#include "kernels/decode_common.h"

#include <algorithm>
#include <cmath>

#include "absl/strings/str_cat.h"
#include "kernels/device.h"
#include "kernels/dsl.h"
#include "kernels/epilogue.h"

namespace nkigraph::kernels {
namespace {

// The cross-core exchanges of partial sums, on pipe 0; both cores issue
// them in the same order, so one pipe pairs them.
constexpr CoreExchange kPartialExchange{.pipe = 0,
                                        .received_name = "received_partial"};

// The tiles of a shard of `size` rows as at most two uniform runs, so that
// DMAs and elementwise passes take all full 128-row tiles at once: the
// full tiles side by side, then the short last tile.
struct TileRun {
  int64_t first_tile;
  int64_t tiles;
  int64_t rows;
};
std::vector<TileRun> TileRuns(int64_t size) {
  const int64_t p = Partitions();
  std::vector<TileRun> runs;
  if (size / p > 0) runs.push_back(TileRun{0, size / p, p});
  if (size % p > 0) runs.push_back(TileRun{size / p, 1, size % p});
  return runs;
}

// The run's tiles of a partition-tiled tensor [P, KT, F...].
Tensor RunOf(const Tensor& tiled, const TileRun& run) {
  return tiled.Slice(0, 0, run.rows).Slice(1, run.first_tile, run.tiles);
}

// xT = x[:, Hc]^T into the partition tiles of `x_T`.
void LoadXTransposed(const BlockIo& io, const CoreShard& h, int64_t t,
                     const Tensor& x_T) {
  if (XInSbuf(io)) {
    // The re-layout of the residual: tensor-engine transposes.
    TransposeToPartitionTiles(x_T, io.x.Slice(1, h.offset, h.size), "x_T_psum");
    return;
  }
  // The DMA reads x transposed straight from HBM, all full tiles at once.
  for (const TileRun& run : TileRuns(h.size)) {
    const int64_t first = h.offset + run.first_tile * Partitions();
    isa::dma_copy(RunOf(x_T, run), io.x.Slice(1, first, run.tiles * run.rows)
                                       .Reshape({t, run.tiles, run.rows})
                                       .Permute({2, 1, 0}));
  }
}

// psum[T, n_tile] = Σ over `k_tiles` of lhs_T[k tile]ᵀ · w[k tile, n_tile]:
// each weight tile DMAed from HBM into SBUF, then one matmul accumulating
// into psum; each k tile in its own scope `k_scope`.
template <typename Tiles>
void AccumulateWeightTiles(const Tensor& psum, const Tensor& lhs_T,
                           const Tensor& w, const Tiles& k_tiles,
                           const Tile& n_tile, proto::DType dtype,
                           absl::string_view k_scope) {
  for (const Tile k : k_tiles) {
    Scope scope(k_scope);
    Tensor w_tile =
        builder::ndarray({k.size, n_tile.size}, dtype, Buffer::kSbuf, "w_tile");
    isa::dma_copy(
        w_tile,
        w.Slice(0, k.offset, k.size).Slice(1, n_tile.offset, n_tile.size));
    isa::nc_matmul(psum, PartitionTile(lhs_T, k), w_tile,
                   /*accumulate=*/k.index > 0);
  }
}

}  // namespace

bool XInSbuf(const BlockIo& io) { return io.x.space() == proto::SBUF; }
bool OutInSbuf(const BlockIo& io) { return io.out.space() == proto::SBUF; }

CoreShard HiddenShard(const DecodeParams& p) {
  return ShardOf(p.hidden, builder::program_id());
}

absl::Status ValidateDecodeTokens(const DecodeParams& p) {
  if (p.hidden % 2 != 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("parameter 'hidden' is ", p.hidden,
                     "; it must be even (H is split across the two cores)"));
  }
  if (p.tokens() > Partitions()) {
    return absl::InvalidArgumentError(
        absl::StrCat("B·S = batch·seq_tkg = ", p.batch, "·", p.seq_tkg, " = ",
                     p.tokens(), " exceeds the limit of ", Partitions(),
                     " (the token rows of one tile)"));
  }
  return absl::OkStatus();
}

absl::Status ValidateDecodeHeads(const DecodeParams& p) {
  if (p.q_heads % p.kv_heads != 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("parameter 'q_heads' is ", p.q_heads,
                     "; it must be a multiple of kv_heads = ", p.kv_heads));
  }
  if (p.head_dim % 2 != 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("parameter 'head_dim' is ", p.head_dim,
                     "; it must be even (RoPE rotates halves)"));
  }
  const int64_t rows = p.tokens() * p.q_heads;
  if (rows > Partitions()) {
    return absl::InvalidArgumentError(
        absl::StrCat("B·S·q_heads = ", p.batch, "·", p.seq_tkg, "·", p.q_heads,
                     " = ", rows, " exceeds the limit of ", Partitions(),
                     " (every query row on one tile's partitions)"));
  }
  return absl::OkStatus();
}

double Fp8CacheTolerance() { return 0.125; }

Tensor RmsNormXT(const BlockIo& io, const Tensor& gamma, const DecodeParams& p,
                 builder::Loc loc) {
  const CoreShard h = HiddenShard(p);
  const int64_t t = p.tokens();
  const Shape tiled = PartitionTiledShape(h.size, Partitions(), {t});
  const int64_t rows = tiled[0];
  Tensor xn_T = builder::ndarray(tiled, p.dtype, Buffer::kSbuf, "xn_T", loc);
  Scope scope("rmsnorm_x");
  Tensor x_T = builder::ndarray(tiled, p.dtype, Buffer::kSbuf, "x_T");
  LoadXTransposed(io, h, t, x_T);
  // gamma as one column per tile: gamma_T[r, k] = gamma[Hc tile k, row r].
  Tensor gamma_T =
      builder::ndarray({rows, tiled[1]}, p.dtype, Buffer::kSbuf, "gamma_T");
  for (const TileRun& run : TileRuns(h.size)) {
    const int64_t first = h.offset + run.first_tile * Partitions();
    isa::dma_copy(RunOf(gamma_T, run),
                  gamma.Slice(0, first, run.tiles * run.rows)
                      .Reshape({run.tiles, run.rows})
                      .Permute({1, 0}));
  }
  Tensor squares =
      builder::ndarray(tiled, proto::FLOAT32, Buffer::kSbuf, "x_T_squared");
  for (const TileRun& run : TileRuns(h.size)) {
    isa::activation(RunOf(squares, run), isa::ActFunc::kSquare,
                    RunOf(x_T, run));
  }
  // The sum of squares over the shard as a matmul against all-ones: every
  // one of the `rows` output partitions receives Σ_h sq[h, t].
  Tensor ones =
      builder::ndarray({rows, rows}, proto::FLOAT32, Buffer::kSbuf, "ones");
  isa::memset(ones, 1.0f);
  Tensor sum_psum = builder::ndarray({rows, t}, proto::FLOAT32, Buffer::kPsum,
                                     "sum_squares_psum");
  for (const Tile k : TiledRange(h.size, Partitions())) {
    isa::nc_matmul(sum_psum, ones.Slice(0, 0, k.size),
                   PartitionTile(squares, k), /*accumulate=*/k.index > 0);
  }
  const Tensor partial =
      EvacuatePsum(sum_psum, proto::FLOAT32, "sum_squares_partial");
  Tensor sum =
      builder::ndarray({rows, t}, proto::FLOAT32, Buffer::kSbuf, "sum_squares");
  AddOtherCoresPartial(sum, partial, kPartialExchange);
  // rstd = 1 / sqrt(Σ/H + eps): eps is the activation's bias.
  Tensor rstd =
      builder::ndarray({rows, t}, proto::FLOAT32, Buffer::kSbuf, "rstd");
  const isa::ActivationArgs args{.bias = p.rmsnorm_eps,
                                 .scale = 1.0 / static_cast<double>(p.hidden)};
  isa::activation(rstd, isa::ActFunc::kRsqrt, sum, args);
  for (const Tile k : TiledRange(h.size, Partitions())) {
    isa::scalar_tensor_tensor(PartitionTile(xn_T, k), PartitionTile(x_T, k),
                              isa::Alu::kMultiply,
                              gamma_T.Slice(0, 0, k.size).Slice(1, k.index, 1),
                              isa::Alu::kMultiply, rstd.Slice(0, 0, k.size));
  }
  return xn_T;
}

Tensor InputProjection(const Tensor& xn_T, const Tensor& w,
                       const DecodeParams& p, absl::string_view name,
                       builder::Loc loc) {
  const CoreShard h = HiddenShard(p);
  const int64_t t = p.tokens();
  const int64_t n = w.dim(1);
  // Allocated before the scope so it outlives it: the caller's result.
  Tensor full =
      builder::ndarray({t, n}, proto::FLOAT32, Buffer::kSbuf, name, loc);
  Scope scope("input_projection");
  Tensor partial = builder::ndarray({t, n}, proto::FLOAT32, Buffer::kSbuf,
                                    "projection_partial");
  for (const Tile n_tile : TiledRange(n, MovingFree())) {
    Scope n_scope("n_tile");
    Tensor psum = builder::ndarray({t, n_tile.size}, proto::FLOAT32,
                                   Buffer::kPsum, "projection_psum");
    AccumulateWeightTiles(psum, xn_T, w, ShardTiles(h, Partitions()), n_tile,
                          p.dtype, "h_tile");
    EvacuatePsum(partial.Slice(1, n_tile.offset, n_tile.size), psum);
  }
  AddOtherCoresPartial(full, partial, kPartialExchange);
  return full;
}

Tensor TransposeRows(const Tensor& rows, absl::string_view name,
                     builder::Loc loc) {
  Tensor rows_T = builder::ndarray(
      PartitionTiledShape(rows.dim(1), Partitions(), {rows.dim(0)}),
      rows.dtype(), Buffer::kSbuf, name, loc);
  Scope scope("transpose_rows");
  TransposeToPartitionTiles(rows_T, rows, "rows_T_psum");
  return rows_T;
}

void OutputProjection(const Tensor& in_T, const Tensor& w, const BlockIo& io,
                      const DecodeParams& p, builder::Loc) {
  Scope scope("output_projection");
  const CoreShard h = HiddenShard(p);
  const int64_t t = p.tokens();
  const bool sbuf = OutInSbuf(io);
  for (const Tile n_tile : ShardTiles(h, MovingFree())) {
    Scope n_scope("h_tile");
    Tensor psum = builder::ndarray({t, n_tile.size}, proto::FLOAT32,
                                   Buffer::kPsum, "out_psum");
    AccumulateWeightTiles(psum, in_T, w, TiledRange(w.dim(0), Partitions()),
                          n_tile, p.dtype, "k_tile");
    if (sbuf) {
      EvacuatePsum(io.out.Slice(1, n_tile.offset - h.offset, n_tile.size),
                   psum);
    } else {
      const Tensor out_tile = EvacuatePsum(psum, p.dtype, "out_tile");
      isa::dma_copy(io.out.Slice(1, n_tile.offset, n_tile.size), out_tile);
    }
  }
}

std::vector<double> ReferenceRmsNorm(absl::Span<const float> x,
                                     absl::Span<const float> gamma, int64_t t,
                                     int64_t h, double eps) {
  std::vector<double> xn(t * h);
  for (int64_t r = 0; r < t; ++r) {
    double sum = 0;
    for (int64_t c = 0; c < h; ++c) sum += double{x[r * h + c]} * x[r * h + c];
    const double rstd = 1.0 / std::sqrt(sum / static_cast<double>(h) + eps);
    for (int64_t c = 0; c < h; ++c) {
      xn[r * h + c] = x[r * h + c] * rstd * gamma[c];
    }
  }
  return xn;
}

absl::Status ValidateDecodeAttention(const DecodeParams& p) {
  NKI_RETURN_IF_ERROR(ValidateDecodeTokens(p));
  NKI_RETURN_IF_ERROR(ValidateDecodeHeads(p));
  if (p.cache_len < p.seq_tkg) {
    return absl::InvalidArgumentError(
        absl::StrCat("parameter 'cache_len' is ", p.cache_len,
                     "; it must be at least seq_tkg = ", p.seq_tkg,
                     " (the active tokens are written at cache_position … "
                     "cache_position + S − 1 < C)"));
  }
  return absl::OkStatus();
}

}  // namespace nkigraph::kernels
