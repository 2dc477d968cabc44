// fgcc: out = AllGather(lhs) @ rhs, the gather pipelined as a ring.
//
//   rhs_sb = rhs                       # when 2 · rhs bytes ≤ 16 MiB
//   buf0 = lhs^T (this core's chunks)  # load_into_lhs_sbuf
//   for step in 0 .. tp - 1:           # collective_ring.h: RunRing
//     permute buf[step % 2] -> buf[(step + 1) % 2]   (not on the last step)
//     numerator = current_processing_rank_id(step, channel)
//     for each m tile (≤ 128) and n tile (≤ 512) of the chunk:
//       psum[m_t, n_t] = Σ_k buf[k tile, m tile]^T-stationary · rhs[k, n]
//       out_tile = psum                # PSUM -> SBUF evacuation
//       out[numerator · m + rows, n tile] = out_tile   # scalar offset
#include "kernels/fgcc.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "kernels/dsl.h"
#include "kernels/epilogue.h"
#include "util/dtype.h"
#include "util/status_macros.h"

namespace nkigraph::kernels {
namespace {

// The trace holds a handful of instructions per matmul; larger problems
// are refused rather than exhausting memory (as tiled_matmul does).
constexpr int64_t kMaxMatmulTiles = int64_t{1} << 19;

int64_t RhsBytes(const FgccParams& params) {
  return params.k * params.n * DTypeSize(params.dtype);
}

// Bytes per partition of rhs in its SBUF layout [128, KT, n].
int64_t RhsPartitionBytes(const FgccParams& params) {
  return CeilDiv(params.k, Partitions()) * params.n * DTypeSize(params.dtype);
}

// rhs [k, n] into SBUF as k tiles side by side: rhs_sb[p, kt, :] holds
// rhs row kt · 128 + p.
Tensor LoadRhsIntoSbuf(const Tensor& rhs, const FgccParams& params) {
  const int64_t k = params.k;
  Tensor rhs_sb =
      builder::ndarray(PartitionTiledShape(k, Partitions(), {params.n}),
                       params.dtype, Buffer::kSbuf, "rhs_sb");
  for (const Tile k_tile : TiledRange(k, Partitions())) {
    isa::dma_copy(PartitionTile(rhs_sb, k_tile),
                  rhs.Slice(0, k_tile.offset, k_tile.size));
  }
  return rhs_sb;
}

// The moving operand rhs[k tile, n tile]: a view of rhs_sb, or streamed
// from HBM into a new SBUF tile when rhs is not held in SBUF.
Tensor RhsTile(const Tensor& rhs, const Tensor& rhs_sb, const Tile& k_tile,
               const Tile& n_tile, proto::DType dtype) {
  if (rhs_sb.valid()) {
    return PartitionTile(rhs_sb, k_tile).Slice(1, n_tile.offset, n_tile.size);
  }
  Tensor tile = builder::ndarray({k_tile.size, n_tile.size}, dtype,
                                 Buffer::kSbuf, "rhs_tile");
  isa::dma_copy(tile, rhs.Slice(0, k_tile.offset, k_tile.size)
                          .Slice(1, n_tile.offset, n_tile.size));
  return tile;
}

// One ring step's consumer (run_matmul + write_to_output): the chunk's
// rows times rhs, written at the slot the resolver named.
void MultiplyChunkIntoSlot(const RingBuffers& buffers, const RingChunk& chunk,
                           const Tensor& chunk_data, const Tensor& slot_row,
                           const Tensor& rhs, const Tensor& rhs_sb,
                           const Tensor& out, const FgccParams& params) {
  const proto::DType dtype = params.dtype;
  for (const Tile m_tile : TiledRange(chunk.rows, Partitions())) {
    for (const Tile n_tile : TiledRange(params.n, MovingFree())) {
      Scope scope("out_tile");
      Tensor psum = builder::ndarray({m_tile.size, n_tile.size}, proto::FLOAT32,
                                     Buffer::kPsum, "out_psum");
      for (const Tile k_tile : TiledRange(params.k, Partitions())) {
        Scope k_scope("k_tile");
        const Tensor stationary =
            LhsTransposedTile(buffers, chunk_data, m_tile.offset, m_tile.size,
                              k_tile.offset, k_tile.size, dtype);
        const Tensor moving = RhsTile(rhs, rhs_sb, k_tile, n_tile, dtype);
        isa::nc_matmul(psum, stationary, moving,
                       /*accumulate=*/k_tile.index > 0);
      }
      Tensor out_tile = builder::ndarray({m_tile.size, n_tile.size}, dtype,
                                         Buffer::kSbuf, "out_tile");
      EvacuatePsum(out_tile, psum, Activation::kNone, Tensor());
      isa::dma_copy(SlotRows(out, slot_row, chunk, m_tile.offset, m_tile.size)
                        .Slice(1, n_tile.offset, n_tile.size),
                    out_tile);
    }
  }
}

// The ring's checks and a bounded trace.
absl::Status ValidateFgccParams(const FgccParams& params) {
  NKI_RETURN_IF_ERROR(ValidateRingParams(params));
  const int64_t chunks =
      params.lnc * ChannelCount(params.tp_degree, params.nc_version);
  const int64_t tiles =
      params.tp_degree * (CeilDiv(params.m, Partitions()) + chunks) *
      CeilDiv(params.n, MovingFree()) * CeilDiv(params.k, Partitions());
  return CheckTraceSize({{"tp_degree", params.tp_degree},
                         {"m", params.m},
                         {"k", params.k},
                         {"n", params.n}},
                        tiles, "matmul tiles (estimated)", "fgcc",
                        kMaxMatmulTiles, "reduce tp_degree, m, k or n");
}

void TraceFgcc(KernelIo& io, const FgccParams& p) {
  const Tensor lhs = io.Input("lhs");
  const Tensor rhs = io.Input("rhs");
  const Tensor out = io.Output("out");
  builder::jit("fgcc", AllgatherComputeMatmul)(lhs, rhs, out, p);
}

}  // namespace

bool FgccRhsInSbuf(const FgccParams& params) {
  return 2 * RhsBytes(params) <= kMaxRhsSbufBytes &&
         2 * RhsPartitionBytes(params) <= kMaxRhsSbufBytes / Partitions();
}

RingPath FgccRingPath(const FgccParams& params) {
  const bool rhs_in_sbuf = FgccRhsInSbuf(params);
  return ChooseRingPath(params, rhs_in_sbuf ? RhsBytes(params) : 0,
                        rhs_in_sbuf ? RhsPartitionBytes(params) : 0);
}

void AllgatherComputeMatmul(const Tensor& lhs, const Tensor& rhs,
                            const Tensor& out, const FgccParams& params) {
  const RingBuffers buffers = AllocateRingBuffers(params, FgccRingPath(params));
  if (buffers.chunks.empty()) return;  // m too small to give this core rows
  Tensor rhs_sb;
  if (FgccRhsInSbuf(params)) rhs_sb = LoadRhsIntoSbuf(rhs, params);
  LoadLocalLhs(lhs, buffers);
  RunRing(params, buffers,
          [&](int64_t /*step*/, const RingChunk& chunk,
              const Tensor& chunk_data, const Tensor& slot_row) {
            MultiplyChunkIntoSlot(buffers, chunk, chunk_data, slot_row, rhs,
                                  rhs_sb, out, params);
          });
}

const KernelSpec<FgccParams>& FgccSpec() {
  using P = FgccParams;
  static const auto* const spec = new KernelSpec<P>{
      .name = "fgcc",
      .summary =
          "allgather_compute_matmul: out = AllGather(lhs) @ rhs as a "
          "double-buffered ring of collective_permute_implicit, each step's "
          "product written at the resolver's rank slot",
      .params = RingFields<P>(
          "contraction size: columns of lhs, rows of rhs",
          {IntField<P>("n", &P::n, {1, kRingMaxDim}, "columns of rhs and out")
               .Edges(AroundTiles({128, 512}))}),
      .validate = ValidateFgccParams,
      .io =
          {
              RingLhsRow<P>(),
              InputRow<P>("rhs", "[k, n]",
                          [](const P& p) {
                            return Shape{p.k, p.n};
                          })
                  .PerRank(),
              OutputRow<P>("out", "[tp_degree*m, n]",
                           [](const P& p) {
                             return Shape{p.tp_degree * p.m, p.n};
                           })
                  .PerRank(),
          },
      .world = RingWorld,
      .body = TraceFgcc,
      .reference = FgccReference,
      .tolerance = ToleranceByDType(1e-4, 2e-2),
  };
  return *spec;
}

}  // namespace nkigraph::kernels
