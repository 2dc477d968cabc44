#ifndef NKIGRAPH_INTERP_DEVICE_MEMORY_H_
#define NKIGRAPH_INTERP_DEVICE_MEMORY_H_

#include <cstdint>
#include <vector>

#include "absl/status/statusor.h"
#include "proto/nkigraph.pb.h"
#include "util/memory_budget.h"

namespace nkigraph::interp {

// Shadow bits kept for every byte of device memory.
inline constexpr uint8_t kInitialized = 1;  // written since the run began
inline constexpr uint8_t kMatmulGroup = 2;  // psum: last written by a matmul

// One byte-addressed memory with its shadow. On-chip regions are
// partition-major: byte b of partition p is at p * partition_bytes + b.
struct Region {
  std::vector<uint8_t> data;
  std::vector<uint8_t> shadow;
  int64_t partition_bytes = 0;  // on-chip only
};

// The device's memories, sized from the graph's declared tensors (not the
// full hardware capacity): per rank one HBM region (private and shared
// tensors at their assigned addresses), per rank and core an SBUF and a
// PSUM region.
class DeviceMemory {
 public:
  // Bytes of data and shadow state the graph's tensors need.
  static absl::StatusOr<int64_t> BytesNeeded(const proto::Graph& graph);
  // Allocates them, charging `budget` (when given) before allocating;
  // the charge is released when the memory is.
  static absl::StatusOr<DeviceMemory> Create(const proto::Graph& graph,
                                             MemoryBudget* budget = nullptr);

  int64_t hbm_bytes() const { return hbm_bytes_; }
  Region& RegionFor(const proto::Tensor& tensor, int rank, int core);
  // Byte offset, inside its region, of flat element `e` of `tensor`.
  static int64_t ByteOffset(const proto::Tensor& tensor, int64_t e,
                            int64_t partition_bytes);

 private:
  ScopedCharge charge_;
  int num_cores_ = 1;
  int64_t hbm_bytes_ = 0;
  std::vector<Region> hbm_;   // [rank]
  std::vector<Region> sbuf_;  // [rank * num_cores + core]
  std::vector<Region> psum_;
};

}  // namespace nkigraph::interp

#endif  // NKIGRAPH_INTERP_DEVICE_MEMORY_H_
