// sb2sb_allgather: one SBUF -> SBUF all_gather along dim 1.
//
//   in_buf = sbuf(M, W);  dma_copy(in_buf <- inp)
//   out_buf = sbuf(M, W * tp)
//   all_gather(out_buf <- in_buf, replica_group, collective_dim=1)
//   dma_copy(out <- out_buf)
//
// sb2sb_allgather_tiled runs the same gather per row tile of
// TILE_M = min(M, 128), the tiles split across the cores.
#include "kernels/sb2sb_allgather.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "kernels/collective_ring.h"
#include "kernels/dsl.h"
#include "util/dtype.h"
#include "util/status_macros.h"

namespace nkigraph::kernels {
namespace {

constexpr int64_t kMaxRows = 65536;
constexpr int64_t kMaxWidth = 65536;

// Rows `rows` of inp gathered from every rank of the group into the same
// rows of out.
void GatherRowTile(const Tensor& inp, const Tensor& out, const Tile& rows,
                   const Sb2sbAllgatherParams& params) {
  Scope scope("row_tile");
  Tensor in_buf = builder::ndarray({rows.size, params.width}, params.dtype,
                                   Buffer::kSbuf, "in_buf");
  isa::dma_copy(in_buf, inp.Slice(0, rows.offset, rows.size));
  Tensor out_buf =
      builder::ndarray({rows.size, params.width * params.tp_degree},
                       params.dtype, Buffer::kSbuf, "out_buf");
  isa::all_gather(out_buf, in_buf, /*collective_dim=*/1);
  isa::dma_copy(out.Slice(0, rows.offset, rows.size), out_buf);
}

builder::WorldConfig Sb2sbWorld(const Sb2sbAllgatherParams& params) {
  return GroupedWorld(params.tp_degree, params.num_groups, params.lnc);
}

// What the fields' limits cannot say: at most 4096 ranks in all, and the
// input and gathered tiles within a partition's share of the budget.
absl::Status ValidateSb2sbAllgatherParams(const Sb2sbAllgatherParams& params) {
  NKI_RETURN_IF_ERROR(CheckRankCount(params.tp_degree, params.num_groups));
  const int64_t partition_bytes =
      params.width * (1 + params.tp_degree) * DTypeSize(params.dtype);
  // The input and gathered tiles share one SBUF partition; give them the
  // 24 MiB budget's share of it, as the ring kernels do.
  const int64_t budget = kRingSbufBudgetBytes / Partitions();
  if (partition_bytes > budget) {
    return absl::InvalidArgumentError(absl::StrCat(
        "parameters width=", params.width, " and tp_degree=", params.tp_degree,
        " need ", partition_bytes,
        " bytes per SBUF partition for the input and gathered tiles; at most ",
        budget, " (the 24 MiB budget's share; reduce 'width')"));
  }
  return absl::OkStatus();
}

// The table of either kernel; the tiled one tiles rows and adds lnc.
template <typename P>
KernelSpec<P> Sb2sbSpec(bool tiled) {
  std::vector<ParamField<P>> fields = {
      IntField<P>("tp_degree", &P::tp_degree, {1, kRingMaxRanks},
                  "ranks per replica group")
          .Edges({2, 4}),
      NumGroupsField<P>(),
      tiled ? IntField<P>("rows", &P::rows, {1, kMaxRows},
                          "rows M of inp, tiled by min(M, 128)")
                  .Edges(AroundTiles({128}))
            : IntField<P>("rows", &P::rows,
                          {1, Partitions(),
                           "the rows are the SBUF partition dim; "
                           "sb2sb_allgather_tiled tiles larger inputs"},
                          "rows M of inp: the SBUF partitions (at most 128)")
                  .Edges(AroundTiles({128})),
      IntField<P>("width", &P::width, {1, kMaxWidth}, "columns W of inp")
          .Edges(AroundTiles({512})),
  };
  if (tiled) {
    fields.push_back(
        IntField<P>("lnc", &P::lnc, {1, 2},
                    "logical cores per rank (1 or 2); they split the tiles"));
  }
  fields.push_back(DTypeField<P>());
  return KernelSpec<P>{
      .name = tiled ? "sb2sb_allgather_tiled" : "sb2sb_allgather",
      .summary = tiled ? "allgather_sb2sb_tiled: per row tile of min(M, 128), "
                         "one SBUF -> SBUF all_gather along dim 1; the tiles "
                         "split across the cores"
                       : "allgather_sb2sb: one SBUF -> SBUF all_gather along "
                         "dim 1 (M <= 128)",
      .params = std::move(fields),
      .validate = ValidateSb2sbAllgatherParams,
      .io =
          {
              InputRow<P>("inp", "[rows, width]",
                          [](const P& p) {
                            return Shape{p.rows, p.width};
                          })
                  .PerRank(),
              OutputRow<P>("out", "[rows, width*tp_degree]",
                           [](const P& p) {
                             return Shape{p.rows, p.width * p.tp_degree};
                           })
                  .PerRank(),
          },
      .world = Sb2sbWorld,
      .body =
          [tiled](KernelIo& io, const P& p) {
            const Tensor inp = io.Input("inp");
            const Tensor out = io.Output("out");
            if (tiled) {
              builder::jit("sb2sb_allgather_tiled", AllgatherSb2sbTiled)(
                  inp, out, p);
            } else {
              builder::jit("sb2sb_allgather", AllgatherSb2sb)(inp, out, p);
            }
          },
      .reference = Sb2sbAllgatherReference,
      .tolerance = ToleranceByDType(1e-4, 2e-2),
  };
}

}  // namespace

void AllgatherSb2sb(const Tensor& inp, const Tensor& out,
                    const Sb2sbAllgatherParams& params) {
  GatherRowTile(inp, out, Tile{0, 0, params.rows}, params);
}

void AllgatherSb2sbTiled(const Tensor& inp, const Tensor& out,
                         const Sb2sbAllgatherParams& params) {
  const TiledRange tiles(params.rows, std::min(params.rows, Partitions()));
  const int64_t tiles_per_core = CeilDiv(tiles.size(), params.lnc);
  const int64_t first = builder::program_id() * tiles_per_core;
  for (const Tile tile : tiles) {
    if (tile.index < first || tile.index >= first + tiles_per_core) continue;
    GatherRowTile(inp, out, tile, params);
  }
}

const KernelSpec<Sb2sbAllgatherParams>& Sb2sbAllgatherSpec() {
  static const auto* const spec = new KernelSpec<Sb2sbAllgatherParams>(
      Sb2sbSpec<Sb2sbAllgatherParams>(/*tiled=*/false));
  return *spec;
}

const KernelSpec<Sb2sbAllgatherTiledParams>& Sb2sbAllgatherTiledSpec() {
  static const auto* const spec = new KernelSpec<Sb2sbAllgatherTiledParams>(
      Sb2sbSpec<Sb2sbAllgatherTiledParams>(/*tiled=*/true));
  return *spec;
}

absl::StatusOr<HostIo> Sb2sbHostIo(const Sb2sbAllgatherParams& params,
                                   const HostArrays& inputs) {
  if (!params.tiled) return Sb2sbAllgatherSpec().Host(params, inputs);
  Sb2sbAllgatherTiledParams tiled;
  static_cast<Sb2sbAllgatherParams&>(tiled) = params;
  return Sb2sbAllgatherTiledSpec().Host(tiled, inputs);
}

}  // namespace nkigraph::kernels
