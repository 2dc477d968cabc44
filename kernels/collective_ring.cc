#include "kernels/collective_ring.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"
#include "kernels/dsl.h"
#include "util/dtype.h"

namespace nkigraph::kernels {
namespace {

// First row of chunk q of the rank's m rows split into `num_chunks`
// near-equal chunks (sizes differ by at most one row).
int64_t ChunkStart(int64_t m, int64_t num_chunks, int64_t q) {
  return q * m / num_chunks;
}

// Rows of lhs that core `core` holds in its SBUF buffer: its CHANNEL_N
// chunks, which are contiguous on the SBUF path.
int64_t SbufCoreRows(const RingParams& params, int64_t core) {
  const int64_t channels = ChannelCount(params.tp_degree, params.nc_version);
  const int64_t num_chunks = channels * params.lnc;
  return ChunkStart(params.m, num_chunks, (core + 1) * channels) -
         ChunkStart(params.m, num_chunks, core * channels);
}

// numerator = the group-local rank whose rows the buffer holds at
// `iteration`; returns its first row in out, numerator · m, as the register
// the slot write's scalar offset reads.
Tensor ResolveSlotRow(int64_t iteration, int64_t channel, int64_t m) {
  Tensor numerator =
      builder::ndarray({1, 1}, proto::INT32, Buffer::kSbuf, "numerator");
  isa::collective_permute_implicit_current_processing_rank_id(
      numerator, static_cast<int>(iteration), static_cast<int>(channel));
  Tensor slot_row =
      builder::ndarray({1, 1}, proto::INT32, Buffer::kSbuf, "slot_row");
  isa::tensor_scalar(slot_row, numerator, isa::Alu::kMultiply,
                     static_cast<int>(m));
  return slot_row;
}

// One ring step for every channel: each rank sends buffer `from` to its
// successor, which receives it into buffer `to`
// (launch_collective_permutes).
void LaunchRingPermutes(const RingBuffers& buffers, int from, int to) {
  for (const RingChunk& chunk : buffers.chunks) {
    isa::collective_permute_implicit(buffers.Chunk(to, chunk),
                                     buffers.Chunk(from, chunk),
                                     static_cast<int>(chunk.channel));
  }
}

}  // namespace

absl::Status ValidateRingParams(const RingParams& params) {
  if (params.tp_degree % 2 != 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("parameter 'tp_degree' is ", params.tp_degree,
                     "; it must be even and between 2 and ", kRingMaxRanks,
                     " (the ring runs its steps in pairs)"));
  }
  return CheckRankCount(params.tp_degree, params.num_groups);
}

absl::Status CheckRankCount(int64_t tp_degree, int64_t num_groups) {
  return CheckRange(
      "num_groups", num_groups, 1, kRingMaxRanks / tp_degree,
      absl::StrCat("tp_degree × num_groups ranks, at most ", kRingMaxRanks));
}

std::vector<std::vector<int>> GenerateReplicaGroups(int64_t tp_degree,
                                                    int64_t num_groups) {
  std::vector<std::vector<int>> groups(num_groups);
  for (int64_t g = 0; g < num_groups; ++g) {
    for (int64_t r = 0; r < tp_degree; ++r) {
      groups[g].push_back(static_cast<int>(g * tp_degree + r));
    }
  }
  return groups;
}

builder::WorldConfig GroupedWorld(int64_t tp_degree, int64_t num_groups,
                                  int64_t cores) {
  builder::WorldConfig world;
  world.num_ranks = static_cast<int>(tp_degree * num_groups);
  world.num_cores = static_cast<int>(cores);
  world.replica_groups = GenerateReplicaGroups(tp_degree, num_groups);
  return world;
}

builder::WorldConfig RingWorld(const RingParams& params) {
  return GroupedWorld(params.tp_degree, params.num_groups, params.lnc);
}

int64_t ChannelCount(int64_t tp_degree, int64_t nc_version) {
  switch (tp_degree) {
    case 4:
    case 8:
    case 16:
      return 2;
    case 32:
      return nc_version >= 3 ? 2 : 4;
    case 64:
    case 128:
      return 4;
    default:
      return 1;
  }
}

RingPath ChooseRingPath(const RingParams& params, int64_t resident_bytes,
                        int64_t resident_partition_bytes) {
  if (params.force_hbm_cc) return RingPath::kHbm;
  const int64_t dsize = DTypeSize(params.dtype);
  const int64_t lhs_bytes = params.m * params.k * dsize;
  if (2 * lhs_bytes > kRingSbufBudgetBytes - resident_bytes) {
    return RingPath::kHbm;
  }
  int64_t core_rows = 0;
  for (int64_t core = 0; core < params.lnc; ++core) {
    core_rows = std::max(core_rows, SbufCoreRows(params, core));
  }
  const int64_t partition_bytes =
      CeilDiv(params.k, Partitions()) * core_rows * dsize;
  if (2 * partition_bytes >
      kRingSbufBudgetBytes / Partitions() - resident_partition_bytes) {
    return RingPath::kHbm;
  }
  return RingPath::kSbuf;
}

std::vector<RingChunk> CoreChunks(const RingParams& params, RingPath path,
                                  int64_t core) {
  const int64_t channels = ChannelCount(params.tp_degree, params.nc_version);
  const int64_t num_chunks = channels * params.lnc;
  const int64_t core_first_row =
      ChunkStart(params.m, num_chunks, core * channels);
  std::vector<RingChunk> chunks;
  for (int64_t channel = 0; channel < channels; ++channel) {
    const int64_t q = path == RingPath::kSbuf ? core * channels + channel
                                              : channel * params.lnc + core;
    RingChunk chunk;
    chunk.channel = channel;
    chunk.row_offset = ChunkStart(params.m, num_chunks, q);
    chunk.rows = ChunkStart(params.m, num_chunks, q + 1) - chunk.row_offset;
    chunk.column =
        path == RingPath::kSbuf ? chunk.row_offset - core_first_row : 0;
    if (chunk.rows > 0) chunks.push_back(chunk);
  }
  return chunks;
}

Tensor RingBuffers::Chunk(int b, const RingChunk& chunk) const {
  return path == RingPath::kSbuf
             ? buf[b].Slice(2, chunk.column, chunk.rows)
             : buf[b].Slice(0, chunk.row_offset, chunk.rows);
}

RingBuffers AllocateRingBuffers(const RingParams& params, RingPath path) {
  RingBuffers buffers;
  buffers.path = path;
  buffers.count = static_cast<int>(params.num_buffers);
  buffers.k = params.k;
  buffers.chunks = CoreChunks(params, path, builder::program_id());
  for (int b = 0; b < buffers.count; ++b) {
    const std::string name = absl::StrCat("buf", b);
    if (path == RingPath::kHbm) {
      buffers.buf[b] = builder::ndarray({params.m, params.k}, params.dtype,
                                        Buffer::kSharedHbm, name);
    } else if (!buffers.chunks.empty()) {
      buffers.buf[b] = builder::ndarray(
          PartitionTiledShape(params.k, Partitions(),
                              {SbufCoreRows(params, builder::program_id())}),
          params.dtype, Buffer::kSbuf, name);
    }
  }
  return buffers;
}

void LoadLocalLhs(const Tensor& lhs, const RingBuffers& buffers) {
  if (buffers.chunks.empty()) return;
  if (buffers.path == RingPath::kHbm) {
    for (const RingChunk& chunk : buffers.chunks) {
      isa::dma_copy(buffers.Chunk(0, chunk),
                    lhs.Slice(0, chunk.row_offset, chunk.rows));
    }
    return;
  }
  const Tensor& buf0 = buffers.buf[0];
  const int64_t k_tiles = buf0.dim(1);
  if (k_tiles > 1 && buffers.k % Partitions() != 0) {
    isa::memset(buf0.Select(1, k_tiles - 1), 0.0f);
  }
  const int64_t first_row = buffers.chunks.front().row_offset;
  const int64_t rows = buf0.dim(2);
  for (const Tile k_tile : TiledRange(buffers.k, Partitions())) {
    isa::dma_copy(PartitionTile(buf0, k_tile),
                  lhs.Slice(0, first_row, rows)
                      .Slice(1, k_tile.offset, k_tile.size)
                      .Permute({1, 0}));
  }
}

Tensor LhsTransposedTile(const RingBuffers& buffers, const Tensor& chunk_data,
                         int64_t m_offset, int64_t m_size, int64_t k_offset,
                         int64_t k_size, proto::DType dtype) {
  if (buffers.path == RingPath::kSbuf) {
    return PartitionTile(chunk_data,
                         Tile{k_offset / Partitions(), k_offset, k_size})
        .Slice(1, m_offset, m_size);
  }
  Tensor tile =
      builder::ndarray({k_size, m_size}, dtype, Buffer::kSbuf, "lhs_T_tile");
  isa::dma_copy(tile, chunk_data.Slice(0, m_offset, m_size)
                          .Slice(1, k_offset, k_size)
                          .Permute({1, 0}));
  return tile;
}

void RunRing(const RingParams& params, const RingBuffers& buffers,
             RingConsumer consume) {
  const bool double_buffered = buffers.count == 2;
  for (int64_t step = 0; step < params.tp_degree; ++step) {
    Scope scope("ring_step");
    const bool more = step + 1 < params.tp_degree;
    const int current = double_buffered ? static_cast<int>(step % 2) : 0;
    const int next = double_buffered ? 1 - current : 0;
    // Double-buffered: the next step's data flows into the other buffer
    // while this step's is consumed.
    if (more && double_buffered) LaunchRingPermutes(buffers, current, next);
    for (const RingChunk& chunk : buffers.chunks) {
      const Tensor slot_row = ResolveSlotRow(step, chunk.channel, params.m);
      consume(step, chunk, buffers.Chunk(current, chunk), slot_row);
    }
    // Single-buffered: only once it is consumed may buf0 be replaced.
    if (more && !double_buffered) LaunchRingPermutes(buffers, current, next);
  }
}

Tensor SlotRows(const Tensor& out, const Tensor& slot_row,
                const RingChunk& chunk, int64_t offset, int64_t size) {
  return out.Slice(0, chunk.row_offset + offset, size)
      .WithScalarOffset(slot_row, /*indirect_dim=*/0);
}

}  // namespace nkigraph::kernels
