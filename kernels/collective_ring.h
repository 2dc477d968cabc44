#ifndef NKIGRAPH_KERNELS_COLLECTIVE_RING_H_
#define NKIGRAPH_KERNELS_COLLECTIVE_RING_H_

// The fine-grained all-gather ring (design notes §2) shared by fgcc and
// fg_allgather: one implementation, as fg_allgather.py reuses fgcc.py's
// helpers.
//
//   numerator0 = collective_permute_implicit_current_processing_rank_id(0)
//   consume(buf0 -> slot numerator0)          # iteration 0: local data
//   for s in 1 .. RANK_N - 1:                 # buffers alternate
//     permute buf[(s-1) % 2] -> buf[s % 2]    # launched before step s-1's
//     numerator = ...rank_id(s)               #   consumer, which reads the
//     consume(buf[s % 2] -> slot numerator)   #   other buffer
//
// With num_buffers = 1 the ring is single-buffered: step s's permute
// replaces buf0 in place after step s's consumer has read it, so permute
// and consumer cannot overlap (what the double buffer buys, measured by
// the cost model). The transport choice does not depend on num_buffers.
//
// Each rank's m rows are split into LNC_N × CHANNEL_N chunks, one per
// (core, channel); every chunk is permuted with its own channel id. The
// buffers live in SBUF (lhs^T: k on the partitions, the core's rows on the
// free axis) or, when they do not fit the SBUF budget or force_hbm_cc is
// set, in shared HBM ([m, k], every core writing its own chunks' rows).
// The chunk index of (core, channel) is core·CHANNEL_N + channel in SBUF
// and channel·LNC_N + core in HBM, as in the notes.

#include <cstdint>
#include <vector>

#include "absl/functional/function_ref.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "builder/tensor.h"
#include "builder/tracer.h"
#include "kernels/device.h"
#include "kernels/kernel_spec.h"
#include "proto/nkigraph.pb.h"

namespace nkigraph::kernels {

// SBUF budgets of the ring kernels (fgcc.py:144-146).
inline constexpr int64_t kRingSbufBudgetBytes = int64_t{24} << 20;
inline constexpr int64_t kMaxRhsSbufBytes = int64_t{16} << 20;

// Parameters every ring kernel shares.
struct RingParams {
  int64_t tp_degree = 4;
  int64_t num_groups = 1;
  int64_t m = 128;  // rows of lhs per rank
  int64_t k = 256;  // columns of lhs
  bool force_hbm_cc = false;
  int64_t nc_version = 3;
  int64_t lnc = 2;
  int64_t num_buffers = 2;  // 2: double-buffered ring; 1: single-buffered
  proto::DType dtype = proto::BFLOAT16;
};

inline constexpr int64_t kRingMaxRanks = 4096;
inline constexpr int64_t kRingMaxDim = 65536;

// num_groups: the replica groups of tp_degree ranks (CheckRankCount bounds
// their product).
template <typename P>
ParamField<P> NumGroupsField() {
  return IntField<P>("num_groups", &P::num_groups, {1, kRingMaxRanks},
                     "replica groups; num_ranks = tp_degree x num_groups");
}

// The parameters of the kernels built on the ring (fgcc, fg_allgather), in
// their contract order: tp_degree, num_groups, m, k (described by
// `k_help`), `after_k`, force_hbm_cc, nc_version, lnc, num_buffers, dtype;
// with their limits (m and k 1 to 65536, nc_version 2 to 4, lnc 1 or 2,
// num_buffers 1 or 2). P is
// RingParams or derived from it.
template <typename P>
std::vector<ParamField<P>> RingFields(std::string k_help,
                                      std::vector<ParamField<P>> after_k) {
  std::vector<ParamField<P>> fields = {
      IntField<P>("tp_degree", &P::tp_degree, {2, kRingMaxRanks},
                  "ranks per replica group, the ring length (even, >= 2)")
          .Edges({4}),
      NumGroupsField<P>(),
      IntField<P>("m", &P::m, {1, kRingMaxDim}, "rows of lhs per rank")
          .Edges(AroundTiles({128, 512})),
      IntField<P>("k", &P::k, {1, kRingMaxDim}, std::move(k_help))
          .Edges(AroundTiles({128, 512})),
  };
  return Concat(
      Concat(std::move(fields), std::move(after_k)),
      {FlagField<P>(
           "force_hbm_cc", &P::force_hbm_cc,
           "1: run the ring over shared-HBM buffers even when the SBUF "
           "budget fits"),
       IntField<P>("nc_version", &P::nc_version, {2, 4},
                   "NeuronCore version (2 to 4); tp_degree 32 uses 4 channels "
                   "below 3"),
       IntField<P>("lnc", &P::lnc, {1, 2},
                   "logical cores per rank (1 or 2); the cores split the rows"),
       IntField<P>("num_buffers", &P::num_buffers, {1, 2},
                   "ring buffers: 2 double-buffers the ring (step s + 1's "
                   "permute overlaps step s's consumer), 1 single-buffers it"),
       DTypeField<P>()});
}

// lhs [m, k] per rank: the rows the ring gathers.
template <typename P>
IoEntry<P> RingLhsRow() {
  return InputRow<P>("lhs", "[m, k]",
                     [](const P& p) {
                       return Shape{p.m, p.k};
                     })
      .PerRank();
}

// What the fields' limits cannot say: tp_degree even, at most 4096 ranks
// in all; messages name the parameter and the limit.
absl::Status ValidateRingParams(const RingParams& params);
// num_groups groups of tp_degree ranks are at most 4096 ranks.
absl::Status CheckRankCount(int64_t tp_degree, int64_t num_groups);

// Replica group g is ranks [g·tp, (g+1)·tp), in ring order
// (fgcc._generate_replica_groups).
std::vector<std::vector<int>> GenerateReplicaGroups(int64_t tp_degree,
                                                    int64_t num_groups);
// num_ranks = tp_degree · num_groups, num_cores = `cores`, the groups
// above.
builder::WorldConfig GroupedWorld(int64_t tp_degree, int64_t num_groups,
                                  int64_t cores);
// GroupedWorld with the ring's lnc cores.
builder::WorldConfig RingWorld(const RingParams& params);

// CHANNEL_N: tp 4/8/16 → 2; tp 32 → 2 if nc_version ≥ 3 else 4;
// tp 64/128 → 4; any other → 1.
int64_t ChannelCount(int64_t tp_degree, int64_t nc_version);

enum class RingPath { kSbuf, kHbm };

// The ring's transport: SBUF unless force_hbm_cc, or unless the double
// buffer (2 × lhs bytes) does not fit what remains of the 24 MiB budget
// after `resident_bytes` (e.g. an SBUF-held rhs). The same test is applied
// per partition to the buffers' lhs^T layout (k padded to whole 128-row
// tiles), against the budget's per-partition share minus
// `resident_partition_bytes`, so a narrow k cannot overflow a partition.
RingPath ChooseRingPath(const RingParams& params, int64_t resident_bytes,
                        int64_t resident_partition_bytes);

// The share of one rank's m rows that one (core, channel) carries round
// the ring.
struct RingChunk {
  int64_t channel = 0;
  int64_t row_offset = 0;  // first row of lhs (and of each out slot)
  int64_t rows = 0;
  int64_t column = 0;  // SBUF path: first column in the core's buffer
};

// This core's non-empty chunks, in channel order.
std::vector<RingChunk> CoreChunks(const RingParams& params, RingPath path,
                                  int64_t core);

// The ring buffers buf0 (and buf1 when double-buffered) of one core: SBUF
// [min(k, 128), KT, rows of the core] holding lhs^T, or shared HBM [m, k]
// holding lhs rows.
struct RingBuffers {
  RingPath path = RingPath::kSbuf;
  int count = 2;  // num_buffers
  builder::Tensor buf[2];
  std::vector<RingChunk> chunks;
  int64_t k = 0;

  // Chunk `chunk`'s part of buffer `b` ([k_part, KT, rows] or [rows, k]).
  builder::Tensor Chunk(int b, const RingChunk& chunk) const;
};

// Allocates num_buffers buffers for this core in the current scope. Shared-HBM
// buffers are allocated on every core, in the same order.
RingBuffers AllocateRingBuffers(const RingParams& params, RingPath path);

// buf0 = this core's chunks of the local lhs [m, k] (iteration 0 needs no
// permute): loaded transposed into SBUF (load_into_lhs_sbuf), or copied
// into the shared-HBM buffer. In SBUF the unused partitions of a short last
// k tile are zeroed so the permutes carry only written bytes.
void LoadLocalLhs(const builder::Tensor& lhs, const RingBuffers& buffers);

// One stationary (lhs^T) tile [k_t, m_t] of a chunk's data for the tensor
// engine: a view of the SBUF buffer, or a DMA-transposed load from the
// shared-HBM buffer into a new SBUF tile (allocated in the current scope).
builder::Tensor LhsTransposedTile(const RingBuffers& buffers,
                                  const builder::Tensor& chunk_data,
                                  int64_t m_offset, int64_t m_size,
                                  int64_t k_offset, int64_t k_size,
                                  proto::DType dtype);

// Consumes one step's data of one chunk: `chunk_data` is
// buffers.Chunk(current buffer, chunk); `slot_row` is a one-element int32
// SBUF tensor holding the first row of the slot the data belongs to (the
// resolver's numerator × m), for WithScalarOffset(slot_row, 0).
using RingConsumer = absl::FunctionRef<void(
    int64_t step, const RingChunk& chunk, const builder::Tensor& chunk_data,
    const builder::Tensor& slot_row)>;

// Runs the tp_degree-step ring over `buffers` (buf0 loaded), calling
// `consume` for every step and chunk.
void RunRing(const RingParams& params, const RingBuffers& buffers,
             RingConsumer consume);

// rows [chunk.row_offset + offset, + size) of the slot whose first row is
// held in `slot_row`, as a dynamically offset view of `out` [tp·m, w].
builder::Tensor SlotRows(const builder::Tensor& out,
                         const builder::Tensor& slot_row,
                         const RingChunk& chunk, int64_t offset, int64_t size);

}  // namespace nkigraph::kernels

#endif  // NKIGRAPH_KERNELS_COLLECTIVE_RING_H_
