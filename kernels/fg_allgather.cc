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

#include "absl/strings/str_cat.h"
#include "kernels/dsl.h"
#include "util/status_macros.h"

namespace nkigraph::kernels {
namespace {

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
  for (const Tile m_tile : TiledRange(chunk.rows, Partitions())) {
    for (const Tile k_group : TiledRange(params.k, MovingFree())) {
      Scope scope("row_block");
      Tensor rows_psum =
          builder::ndarray({m_tile.size, k_group.size}, params.dtype,
                           Buffer::kPsum, "rows_psum");
      for (const Tile k_tile : TiledRange(k_group.size, Partitions())) {
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

// The ring's checks and a bounded trace.
absl::Status ValidateFgAllgatherParams(const RingParams& params) {
  NKI_RETURN_IF_ERROR(ValidateRingParams(params));
  const int64_t chunks =
      params.lnc * ChannelCount(params.tp_degree, params.nc_version);
  const int64_t tiles = params.tp_degree *
                        (CeilDiv(params.m, Partitions()) + chunks) *
                        CeilDiv(params.k, Partitions());
  return CheckTraceSize(
      {{"tp_degree", params.tp_degree}, {"m", params.m}, {"k", params.k}},
      tiles, "transpose tiles (estimated)", "fg_allgather", kMaxCopyTiles,
      "reduce tp_degree, m or k");
}

void TraceFgAllgather(KernelIo& io, const RingParams& p) {
  const Tensor lhs = io.Input("lhs");
  const Tensor result = io.Output("result");
  builder::jit("fg_allgather", FineGrainedAllgather)(lhs, result, p);
}

}  // namespace

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

const KernelSpec<RingParams>& FgAllgatherSpec() {
  using P = RingParams;
  static const auto* const spec = new KernelSpec<P>{
      .name = "fg_allgather",
      .summary =
          "fine_grained_allgather: fgcc's double-buffered ring of "
          "collective_permute_implicit with a transpose-and-scatter copy into "
          "the resolver's rank slot in place of the matmul",
      .params = RingFields<P>("columns of lhs", {}),
      .validate = ValidateFgAllgatherParams,
      .io =
          {
              RingLhsRow<P>(),
              OutputRow<P>("result", "[tp_degree*m, k]",
                           [](const P& p) {
                             return Shape{p.tp_degree * p.m, p.k};
                           })
                  .PerRank(),
          },
      .world = RingWorld,
      .body = TraceFgAllgather,
      .reference = FgAllgatherReference,
      .tolerance = ToleranceByDType(1e-4, 2e-2),
  };
  return *spec;
}

}  // namespace nkigraph::kernels
