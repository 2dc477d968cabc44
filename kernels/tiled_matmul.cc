// tiled_matmul: out = act(lhs @ rhs + bias), tiled for the tensor engine.
//
//   for each m tile (<= 512, the moving free size):
//     lhs_T = lhs[m tile, :]^T, all k tiles, loaded once
//     for each n tile (<= 128, the PSUM partitions):
//       bias_col = bias[n tile] as a [n_t, 1] column
//       for each k tile (<= 128, the contraction partitions):
//         psum[n_t, m_t] += rhs[k tile, n tile]^T @ lhs_T[k tile]
//       out_T = act(psum + bias_col)          # one PSUM -> SBUF evacuation
//       out[m tile, n tile] = out_T^T         # DMA through a transposed view
#include "kernels/tiled_matmul.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "kernels/device.h"
#include "kernels/dsl.h"
#include "util/dtype.h"

namespace nkigraph::kernels {
namespace {

constexpr int64_t kMaxDim = 65536;
// A trace holds about 3 instructions and 2 tensors per matmul tile; 2^19
// tiles (m = k = n = 16384) trace in about 1.6 GB and serialize to about
// 150 MB. Larger problems are refused rather than exhausting memory.
constexpr int64_t kMaxMatmulTiles = int64_t{1} << 19;

// Tile sizes (kernels/device.h). The kernel computes out^T: n on the PSUM
// partitions (the stationary free size), m on the moving free axis (one
// fp32 PSUM bank), k on the SBUF partitions it contracts over.
// SBUF bytes per partition given to the transposed lhs tiles of one m tile;
// the rest is left for the rhs, bias and output tiles.
constexpr int64_t kLhsTBudgetBytes = 128 * 1024;

// The m tile: a full 512-wide moving tile unless k is so large that all its
// k tiles of lhs^T would not fit the budget.
int64_t MTileSize(const TiledMatmulParams& params) {
  const int64_t bytes_per_column =
      CeilDiv(params.k, Partitions()) * DTypeSize(params.dtype);
  return std::max<int64_t>(
      1, std::min(MovingFree(), kLhsTBudgetBytes / bytes_per_column));
}

// bias[n tile] as an SBUF [n_t, 1] float32 column: one bias per output
// partition of out^T.
Tensor LoadBiasColumn(const Tensor& bias, const Tile& n_tile) {
  Tensor bias_col = builder::ndarray({n_tile.size, 1}, proto::FLOAT32,
                                     Buffer::kSbuf, "bias_col");
  isa::dma_copy(
      bias_col,
      bias.Slice(0, n_tile.offset, n_tile.size).Reshape({n_tile.size, 1}));
  return bias_col;
}

// lhs[m tile, :]^T as k tiles side by side: lhs_t[k, kt, m_t] holds
// lhs[m tile, kt * 128 + k]. Loaded once per m tile and reused by every n
// tile, so the transposing DMA reads each lhs element once per kernel.
Tensor LoadLhsTransposed(const Tensor& lhs, const Tile& m_tile,
                         const TiledMatmulParams& params) {
  Tensor lhs_t = builder::ndarray(
      PartitionTiledShape(params.k, Partitions(), {m_tile.size}), params.dtype,
      Buffer::kSbuf, "lhs_T_tiles");
  for (const Tile k_tile : TiledRange(params.k, Partitions())) {
    isa::dma_copy(PartitionTile(lhs_t, k_tile),
                  lhs.Slice(0, m_tile.offset, m_tile.size)
                      .Slice(1, k_tile.offset, k_tile.size)
                      .Permute({1, 0}));
  }
  return lhs_t;
}

// psum[n_t, m_t] = (lhs[m tile, :] @ rhs[:, n tile])^T, accumulated over the
// k tiles: stationary = rhs tile [k_t, n_t], moving = lhs^T tile [k_t, m_t].
void AccumulateOutTransposed(const Tensor& psum, const Tensor& lhs_t,
                             const Tensor& rhs, const Tile& n_tile) {
  for (const Tile k_tile : TiledRange(rhs.dim(0), Partitions())) {
    Scope scope("k_tile");
    Tensor stationary = builder::ndarray(
        {k_tile.size, n_tile.size}, rhs.dtype(), Buffer::kSbuf, "rhs_tile");
    isa::dma_copy(stationary, rhs.Slice(0, k_tile.offset, k_tile.size)
                                  .Slice(1, n_tile.offset, n_tile.size));
    isa::nc_matmul(psum, stationary, PartitionTile(lhs_t, k_tile),
                   /*accumulate=*/k_tile.index > 0);
  }
}

// out[m tile, n tile] = out_t^T, written through the transposed HBM view.
void StoreOutTransposed(const Tensor& out, const Tensor& out_t,
                        const Tile& n_tile, const Tile& m_tile) {
  isa::dma_copy(out.Slice(0, m_tile.offset, m_tile.size)
                    .Slice(1, n_tile.offset, n_tile.size)
                    .Permute({1, 0}),
                out_t);
}

// A trace too big to hold is refused (the sizes have their own limits).
absl::Status CheckTileCount(const TiledMatmulParams& params) {
  const int64_t tiles = CeilDiv(params.n, StationaryFree()) *
                        CeilDiv(params.m, MTileSize(params)) *
                        CeilDiv(params.k, Partitions());
  return CheckTraceSize({{"m", params.m}, {"k", params.k}, {"n", params.n}},
                        tiles, "matmul tiles", "tiled_matmul", kMaxMatmulTiles,
                        "reduce m, k or n");
}

void TraceTiledMatmul(KernelIo& io, const TiledMatmulParams& p) {
  const Tensor lhs = io.Input("lhs");
  const Tensor rhs = io.Input("rhs");
  const Tensor bias = io.Input("bias");  // invalid when bias=0
  const Tensor out = io.Output("out");
  builder::jit("tiled_matmul", TiledMatmul)(lhs, rhs, bias, out, p);
}

}  // namespace

void TiledMatmul(const Tensor& lhs, const Tensor& rhs, const Tensor& bias,
                 const Tensor& out, const TiledMatmulParams& params) {
  for (const Tile m_tile : TiledRange(params.m, MTileSize(params))) {
    Scope m_scope("m_tile");
    Tensor lhs_t = LoadLhsTransposed(lhs, m_tile, params);
    for (const Tile n_tile : TiledRange(params.n, StationaryFree())) {
      Scope n_scope("n_tile");
      Tensor bias_col;
      if (params.bias) bias_col = LoadBiasColumn(bias, n_tile);
      Tensor psum = builder::ndarray({n_tile.size, m_tile.size}, proto::FLOAT32,
                                     Buffer::kPsum, "out_T_psum");
      AccumulateOutTransposed(psum, lhs_t, rhs, n_tile);
      Tensor out_t = builder::ndarray({n_tile.size, m_tile.size}, params.dtype,
                                      Buffer::kSbuf, "out_T_tile");
      EvacuatePsum(out_t, psum, params.activation, bias_col);
      StoreOutTransposed(out, out_t, n_tile, m_tile);
    }
  }
}

const KernelSpec<TiledMatmulParams>& TiledMatmulSpec() {
  using P = TiledMatmulParams;
  static const auto* const spec = new KernelSpec<P>{
      .name = "tiled_matmul",
      .summary =
          "out = act(lhs @ rhs + bias), tiled 128 (n) x 512 (m) x 128 "
          "(k), bias and activation fused into the PSUM evacuation",
      .params =
          {
              IntField<P>("m", &P::m, {1, kMaxDim}, "rows of lhs and out")
                  .Edges(AroundTiles({128, 512})),
              IntField<P>("k", &P::k, {1, kMaxDim},
                          "contraction size: columns of lhs, rows of rhs")
                  .Edges(AroundTiles({128, 512})),
              IntField<P>("n", &P::n, {1, kMaxDim}, "columns of rhs and out")
                  .Edges(AroundTiles({128, 512})),
              FlagField<P>("bias", &P::bias,
                           "1: add the float32 bias [n]; 0: no bias"),
              ActivationField<P>(),
              DTypeField<P>(),
          },
      .validate = CheckTileCount,
      .io =
          {
              InputRow<P>("lhs", "[m, k]",
                          [](const P& p) {
                            return Shape{p.m, p.k};
                          }),
              InputRow<P>("rhs", "[k, n]",
                          [](const P& p) {
                            return Shape{p.k, p.n};
                          }),
              InputRow<P>("bias", "[n]", [](const P& p) { return Shape{p.n}; })
                  .Float32()
                  .When("bias=1", &P::bias),
              OutputRow<P>("out", "[m, n]",
                           [](const P& p) {
                             return Shape{p.m, p.n};
                           }),
          },
      .body = TraceTiledMatmul,
      .reference = TiledMatmulReference,
      .tolerance = ToleranceByDType(1e-4, 2e-2),
  };
  return *spec;
}

}  // namespace nkigraph::kernels
