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
#include <utility>

#include "absl/strings/str_cat.h"
#include "builder/isa.h"
#include "builder/jit.h"
#include "builder/tiling.h"
#include "builder/tracer.h"
#include "kernels/collective_ring.h"
#include "kernels/params.h"
#include "util/dtype.h"
#include "util/status_macros.h"

namespace nkigraph::kernels {
namespace {

namespace isa = builder::isa;
using builder::Buffer;
using builder::CeilDiv;
using builder::Scope;
using builder::Tensor;
using builder::Tile;
using builder::TiledRange;

constexpr int64_t kMaxRanks = 4096;
constexpr int64_t kMaxRows = 65536;
constexpr int64_t kMaxWidth = 65536;
// The input and gathered tiles share one SBUF partition; give them the
// 24 MiB budget's share of it, as the ring kernels do.
constexpr int64_t kPartitionBudgetBytes =
    kRingSbufBudgetBytes / kSbufBudgetPartitions;

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
  builder::WorldConfig world;
  world.num_ranks = static_cast<int>(params.tp_degree * params.num_groups);
  world.num_cores = static_cast<int>(params.lnc);
  world.replica_groups =
      GenerateReplicaGroups(params.tp_degree, params.num_groups);
  return world;
}

void TraceSb2sb(builder::Tracer& tracer, const ParamValues& values,
                bool tiled) {
  absl::StatusOr<Sb2sbAllgatherParams> params =
      Sb2sbAllgatherParamsFrom(values, tiled);
  if (!params.ok()) {
    tracer.RecordError(params.status().message(), builder::Loc::current());
    return;
  }
  const Sb2sbAllgatherParams& p = *params;
  Tensor inp = tracer.Input("inp", {p.rows, p.width}, p.dtype);
  Tensor out = builder::ndarray({p.rows, p.width * p.tp_degree}, p.dtype,
                                Buffer::kSharedHbm, "out");
  if (tiled) {
    builder::jit("sb2sb_allgather_tiled", AllgatherSb2sbTiled)(inp, out, p);
  } else {
    builder::jit("sb2sb_allgather", AllgatherSb2sb)(inp, out, p);
  }
  tracer.Output("out", out);
}

KernelDef Sb2sbKernelDef(bool tiled) {
  std::vector<ParamSpec> params = {
      IntParam("tp_degree", 4, "ranks per replica group"),
      IntParam("num_groups", 1,
               "replica groups; num_ranks = tp_degree x num_groups"),
      IntParam("rows", tiled ? 256 : 128,
               tiled ? "rows M of inp, tiled by min(M, 128)"
                     : "rows M of inp: the SBUF partitions (at most 128)"),
      IntParam("width", 256, "columns W of inp"),
  };
  if (tiled) {
    params.push_back(IntParam(
        "lnc", 2, "logical cores per rank (1 or 2); they split the tiles"));
  }
  params.push_back(DTypeParam());
  KernelDef def;
  def.name = tiled ? "sb2sb_allgather_tiled" : "sb2sb_allgather";
  def.summary = tiled ? "allgather_sb2sb_tiled: per row tile of min(M, 128), "
                        "one SBUF -> SBUF all_gather along dim 1; the tiles "
                        "split across the cores"
                      : "allgather_sb2sb: one SBUF -> SBUF all_gather along "
                        "dim 1 (M <= 128)";
  def.params = std::move(params);
  def.inputs = {{"inp", "[rows, width] per rank", "dtype"}};
  def.outputs = {{"out", "[rows, width*tp_degree] per rank", "dtype"}};
  def.world =
      [tiled](
          const ParamValues& values) -> absl::StatusOr<builder::WorldConfig> {
    NKI_ASSIGN_OR_RETURN(Sb2sbAllgatherParams p,
                         Sb2sbAllgatherParamsFrom(values, tiled));
    return Sb2sbWorld(p);
  };
  def.body = [tiled](builder::Tracer& tracer, const ParamValues& values) {
    TraceSb2sb(tracer, values, tiled);
  };
  def.reference = [tiled](const ParamValues& values,
                          const std::vector<HostArray>& inputs)
      -> absl::StatusOr<std::vector<HostArray>> {
    NKI_ASSIGN_OR_RETURN(Sb2sbAllgatherParams p,
                         Sb2sbAllgatherParamsFrom(values, tiled));
    return Sb2sbAllgatherReference(p, inputs);
  };
  def.tolerance = [](const ParamValues& values) -> double {
    return values.Str("dtype") == "float32" ? 1e-4 : 2e-2;
  };
  return def;
}

}  // namespace

absl::Status ValidateSb2sbAllgatherParams(const Sb2sbAllgatherParams& params) {
  if (params.tp_degree < 1 || params.tp_degree > kMaxRanks) {
    return absl::InvalidArgumentError(
        absl::StrCat("parameter 'tp_degree' is ", params.tp_degree,
                     "; it must be between 1 and ", kMaxRanks));
  }
  if (params.num_groups < 1 ||
      params.num_groups > kMaxRanks / params.tp_degree) {
    return absl::InvalidArgumentError(absl::StrCat(
        "parameter 'num_groups' is ", params.num_groups,
        "; it must be between 1 and ", kMaxRanks / params.tp_degree,
        " (tp_degree × num_groups ranks, at most ", kMaxRanks, ")"));
  }
  const int64_t max_rows = params.tiled ? kMaxRows : kPartitionTile;
  if (params.rows < 1 || params.rows > max_rows) {
    return absl::InvalidArgumentError(absl::StrCat(
        "parameter 'rows' is ", params.rows, "; it must be between 1 and ",
        max_rows,
        params.tiled ? ""
                     : " (the rows are the SBUF partition dim; "
                       "sb2sb_allgather_tiled tiles larger inputs)"));
  }
  if (params.width < 1 || params.width > kMaxWidth) {
    return absl::InvalidArgumentError(
        absl::StrCat("parameter 'width' is ", params.width,
                     "; it must be between 1 and ", kMaxWidth));
  }
  if (params.lnc < 1 || params.lnc > (params.tiled ? 2 : 1)) {
    return absl::InvalidArgumentError(
        absl::StrCat("parameter 'lnc' is ", params.lnc,
                     "; it must be between 1 and ", params.tiled ? 2 : 1));
  }
  if (params.dtype != proto::FLOAT32 && params.dtype != proto::BFLOAT16) {
    return absl::InvalidArgumentError(
        "parameter 'dtype' must be float32 or bfloat16");
  }
  const int64_t partition_bytes =
      params.width * (1 + params.tp_degree) * DTypeSize(params.dtype);
  if (partition_bytes > kPartitionBudgetBytes) {
    return absl::InvalidArgumentError(absl::StrCat(
        "parameters width=", params.width, " and tp_degree=", params.tp_degree,
        " need ", partition_bytes,
        " bytes per SBUF partition for the input and gathered tiles; at most ",
        kPartitionBudgetBytes, " (the 24 MiB budget's share; reduce 'width')"));
  }
  return absl::OkStatus();
}

absl::StatusOr<Sb2sbAllgatherParams> Sb2sbAllgatherParamsFrom(
    const ParamValues& values, bool tiled) {
  Sb2sbAllgatherParams params;
  params.tp_degree = values.Int("tp_degree");
  params.num_groups = values.Int("num_groups");
  params.rows = values.Int("rows");
  params.width = values.Int("width");
  params.tiled = tiled;
  params.lnc = tiled ? values.Int("lnc") : 1;
  NKI_ASSIGN_OR_RETURN(params.dtype, DTypeParamValue(values));
  NKI_RETURN_IF_ERROR(ValidateSb2sbAllgatherParams(params));
  return params;
}

void AllgatherSb2sb(const Tensor& inp, const Tensor& out,
                    const Sb2sbAllgatherParams& params) {
  GatherRowTile(inp, out, Tile{0, 0, params.rows}, params);
}

void AllgatherSb2sbTiled(const Tensor& inp, const Tensor& out,
                         const Sb2sbAllgatherParams& params) {
  const TiledRange tiles(params.rows, std::min(params.rows, kPartitionTile));
  const int64_t tiles_per_core = CeilDiv(tiles.size(), params.lnc);
  const int64_t first = builder::program_id() * tiles_per_core;
  for (const Tile tile : tiles) {
    if (tile.index < first || tile.index >= first + tiles_per_core) continue;
    GatherRowTile(inp, out, tile, params);
  }
}

void RegisterSb2sbAllgather(KernelRegistry& registry) {
  registry.Register(Sb2sbKernelDef(/*tiled=*/false));
}

void RegisterSb2sbAllgatherTiled(KernelRegistry& registry) {
  registry.Register(Sb2sbKernelDef(/*tiled=*/true));
}

}  // namespace nkigraph::kernels
