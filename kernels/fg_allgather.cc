// fg_allgather: result = AllGather(lhs), the gather pipelined as fgcc's
// ring with a transpose-and-scatter copy in place of the matmul.
//
//   buf0 = lhs^T (this core's chunks)  # fgcc's load_into_lhs_sbuf
//   for step in 0 .. tp - 1:           # collective_ring.h: RunRing
//     permute buf[step % 2] -> buf[(step + 1) % 2]   (not on the last step)
//     numerator = current_processing_rank_id(step, channel)
//     SBUF ring: for each m tile (≤ 128) and group of k tiles (≤ 512):
//       rows_psum[m_t, :] = transpose(buf[k tile, m tile])  per k tile
//       rows = rows_psum               # PSUM -> SBUF
//       result[numerator · m + rows, k cols] = rows        # scalar offset
//     HBM ring:
//       result[numerator · m + chunk rows, :] = buf chunk  # scalar offset
#include "kernels/fg_allgather.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "builder/isa.h"
#include "builder/jit.h"
#include "builder/tiling.h"
#include "builder/tracer.h"
#include "kernels/params.h"
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

constexpr int64_t kMaxCopyTiles = int64_t{1} << 19;

// One ring step's consumer: the chunk's rows written at the slot the
// resolver named. In SBUF the buffer holds lhs^T, so each [k_t, m_t] tile
// is transposed back on the tensor engine, up to 512 columns of a row
// block per PSUM tile, before the scatter DMA; in HBM the buffer holds the
// rows themselves and one DMA scatters them.
void TransposeAndScatter(const RingBuffers& buffers, const RingChunk& chunk,
                         const Tensor& chunk_data, const Tensor& slot_row,
                         const Tensor& result, const RingParams& params) {
  if (buffers.path == RingPath::kHbm) {
    isa::dma_copy(SlotRows(result, slot_row, chunk, 0, chunk.rows), chunk_data);
    return;
  }
  for (const Tile m_tile : TiledRange(chunk.rows, kPartitionTile)) {
    for (const Tile k_group : TiledRange(params.k, kPsumFreeTile)) {
      Scope scope("row_block");
      Tensor rows_psum =
          builder::ndarray({m_tile.size, k_group.size}, params.dtype,
                           Buffer::kPsum, "rows_psum");
      for (const Tile k_tile : TiledRange(k_group.size, kPartitionTile)) {
        isa::nc_transpose(
            rows_psum.Slice(1, k_tile.offset, k_tile.size),
            LhsTransposedTile(buffers, chunk_data, m_tile.offset, m_tile.size,
                              k_group.offset + k_tile.offset, k_tile.size,
                              params.dtype));
      }
      Tensor rows = builder::ndarray({m_tile.size, k_group.size}, params.dtype,
                                     Buffer::kSbuf, "rows");
      isa::tensor_copy(rows, rows_psum);
      isa::dma_copy(
          SlotRows(result, slot_row, chunk, m_tile.offset, m_tile.size)
              .Slice(1, k_group.offset, k_group.size),
          rows);
    }
  }
}

void TraceFgAllgather(builder::Tracer& tracer, const ParamValues& values) {
  absl::StatusOr<RingParams> params = FgAllgatherParamsFrom(values);
  if (!params.ok()) {
    tracer.RecordError(params.status().message(), builder::Loc::current());
    return;
  }
  const RingParams& p = *params;
  Tensor lhs = tracer.Input("lhs", {p.m, p.k}, p.dtype);
  Tensor result = builder::ndarray({p.tp_degree * p.m, p.k}, p.dtype,
                                   Buffer::kSharedHbm, "result");
  builder::jit("fg_allgather", FineGrainedAllgather)(lhs, result, p);
  tracer.Output("result", result);
}

}  // namespace

absl::Status ValidateFgAllgatherParams(const RingParams& params) {
  NKI_RETURN_IF_ERROR(ValidateRingParams(params));
  const int64_t chunks =
      params.lnc * ChannelCount(params.tp_degree, params.nc_version);
  const int64_t tiles = params.tp_degree *
                        (CeilDiv(params.m, kPartitionTile) + chunks) *
                        CeilDiv(params.k, kPartitionTile);
  if (tiles > kMaxCopyTiles) {
    return absl::InvalidArgumentError(
        absl::StrCat("parameters tp_degree=", params.tp_degree,
                     ", m=", params.m, ", k=", params.k, " need about ", tiles,
                     " transpose tiles; fg_allgather traces at most ",
                     kMaxCopyTiles, " (reduce tp_degree, m or k)"));
  }
  return absl::OkStatus();
}

absl::StatusOr<RingParams> FgAllgatherParamsFrom(const ParamValues& values) {
  NKI_ASSIGN_OR_RETURN(RingParams params, RingParamsFrom(values));
  NKI_RETURN_IF_ERROR(ValidateFgAllgatherParams(params));
  return params;
}

RingPath FgAllgatherRingPath(const RingParams& params) {
  return ChooseRingPath(params, /*resident_bytes=*/0,
                        /*resident_partition_bytes=*/0);
}

void FineGrainedAllgather(const Tensor& lhs, const Tensor& result,
                          const RingParams& params) {
  const RingBuffers buffers =
      AllocateRingBuffers(params, FgAllgatherRingPath(params));
  LoadLocalLhs(lhs, buffers);
  RunRing(params, buffers,
          [&](int64_t /*step*/, const RingChunk& chunk,
              const Tensor& chunk_data, const Tensor& slot_row) {
            TransposeAndScatter(buffers, chunk, chunk_data, slot_row, result,
                                params);
          });
}

void RegisterFgAllgather(KernelRegistry& registry) {
  KernelDef def;
  def.name = "fg_allgather";
  def.summary =
      "fine_grained_allgather: fgcc's double-buffered ring of "
      "collective_permute_implicit with a transpose-and-scatter copy into "
      "the resolver's rank slot in place of the matmul";
  def.params = RingParamSpecs("columns of lhs", {});
  def.inputs = {{"lhs", "[m, k] per rank", "dtype"}};
  def.outputs = {{"result", "[tp_degree*m, k] per rank", "dtype"}};
  def.world =
      [](const ParamValues& values) -> absl::StatusOr<builder::WorldConfig> {
    NKI_ASSIGN_OR_RETURN(RingParams params, FgAllgatherParamsFrom(values));
    return RingWorld(params);
  };
  def.body = TraceFgAllgather;
  def.reference = [](const ParamValues& values,
                     const std::vector<HostArray>& inputs)
      -> absl::StatusOr<std::vector<HostArray>> {
    NKI_ASSIGN_OR_RETURN(RingParams params, FgAllgatherParamsFrom(values));
    return FgAllgatherReference(params, inputs);
  };
  def.tolerance = [](const ParamValues& values) -> double {
    return values.Str("dtype") == "float32" ? 1e-4 : 2e-2;
  };
  registry.Register(std::move(def));
}

}  // namespace nkigraph::kernels
