#ifndef NKIGRAPH_INTERP_DEVICE_MEMORY_H_
#define NKIGRAPH_INTERP_DEVICE_MEMORY_H_

#include <cstdint>
#include <vector>

#include "absl/status/statusor.h"
#include "interp/byte_buffer.h"
#include "interp/shadow.h"
#include "proto/nkigraph.pb.h"
#include "util/memory_budget.h"

namespace nkigraph::interp {

// One byte-addressed memory with its shadow. On-chip regions are
// partition-major: byte b of partition p is at p * partition_bytes + b.
// Both start as untouched zero pages (ByteBuffer): what the graph never
// touches is never allocated, and nothing is zero-filled up front.
struct Region {
  ByteBuffer data;
  Shadow shadow;
  int64_t partition_bytes = 0;  // on-chip only
};

// The device's memories, sized from the graph's declared tensors (not the
// full hardware capacity): per rank one HBM region (private and shared
// tensors at their assigned addresses), per rank and core an SBUF and a
// PSUM region.
class DeviceMemory {
 public:
  // Bytes of data and shadow state Create allocates for the graph's
  // tensors (the shadow as if every 64-byte block were written in part):
  // what it charges. Pages never touched cost less; the budget counts
  // what is allocated, so the limit holds whatever the run touches.
  // `held_ranks` of the world's ranks (all when negative) are held by this
  // process; the others have no memory here.
  static absl::StatusOr<int64_t> BytesNeeded(const proto::Graph& graph,
                                             int held_ranks = -1);
  // The bytes of the graph's device memories themselves, without shadow
  // state: per rank its HBM (private and shared tensors), per rank and
  // core its SBUF and PSUM; for `held_ranks` ranks (all when negative).
  static int64_t DeviceBytes(const proto::Graph& graph, int held_ranks = -1);
  // The most a process running the graph may hold (peak RSS), by the
  // memory rule: 1.15 x the device bytes it holds + 1 GiB. The device holds
  // each tensor once, in its dtype; its shadow state (1/64 of it, and the
  // pages of blocks written in part), the race detector's state, the
  // graph and the host's chunks of inputs and outputs fit the rest.
  static int64_t ExpectedPeakBytes(int64_t device_bytes) {
    return device_bytes + device_bytes * 3 / 20 + (int64_t{1} << 30);
  }
  // Allocates them, charging `budget` (when given) region by region as it
  // allocates; each charge is released when its memory is. Only the ranks
  // [first_rank, end_rank) get memory (end_rank < 0: up to the last);
  // RegionFor another rank's is an empty region.
  static absl::StatusOr<DeviceMemory> Create(const proto::Graph& graph,
                                             MemoryBudget* budget = nullptr,
                                             int first_rank = 0,
                                             int end_rank = -1);

  int64_t hbm_bytes() const { return hbm_bytes_; }
  // Inline: every operand access asks it.
  Region& RegionFor(const proto::Tensor& tensor, int rank, int core) {
    switch (tensor.space()) {
      case proto::SBUF:
        return sbuf_[rank * num_cores_ + core];
      case proto::PSUM:
        return psum_[rank * num_cores_ + core];
      default:
        return hbm_[rank];
    }
  }
  // Byte offset, inside its region, of flat element `e` of `tensor`.
  static int64_t ByteOffset(const proto::Tensor& tensor, int64_t e,
                            int64_t partition_bytes);

 private:
  // Allocates one region of `bytes` bytes with its shadow, charging
  // `budget` for both: every byte of device memory the interpreter holds
  // is allocated, and charged, here.
  static absl::Status AllocateRegion(int64_t bytes, int64_t partition_bytes,
                                     MemoryBudget* budget, Region& region);

  int num_cores_ = 1;
  int64_t hbm_bytes_ = 0;
  std::vector<Region> hbm_;   // [rank]
  std::vector<Region> sbuf_;  // [rank * num_cores + core]
  std::vector<Region> psum_;
};

}  // namespace nkigraph::interp

#endif  // NKIGRAPH_INTERP_DEVICE_MEMORY_H_
