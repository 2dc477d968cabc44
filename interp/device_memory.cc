#include "interp/device_memory.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"
#include "ops/access_pattern.h"
#include "util/diagnostic.h"
#include "util/dtype.h"
#include "util/status_macros.h"

namespace nkigraph::interp {
namespace {

struct Extents {
  int64_t hbm = 0;
  std::vector<int64_t> sbuf_row;  // per core
  std::vector<int64_t> psum_row;
};

Extents Measure(const proto::Graph& graph) {
  const int cores = std::max<int>(1, graph.world().num_cores());
  Extents e;
  e.sbuf_row.assign(cores, 0);
  e.psum_row.assign(cores, 0);
  for (const proto::Tensor& t : graph.tensors()) {
    const int64_t esize = DTypeSize(t.dtype());
    if (ops::IsOnChip(t.space())) {
      // Rows start 64-byte aligned, like the tensors inside them.
      const int64_t end =
          (t.address() + esize * ops::RowElements(t) + 63) / 64 * 64;
      auto& rows = t.space() == proto::SBUF ? e.sbuf_row : e.psum_row;
      if (t.core() < rows.size())
        rows[t.core()] = std::max(rows[t.core()], end);
    } else {
      int64_t bytes = esize;
      for (int64_t d : t.shape()) bytes *= d;
      e.hbm = std::max(e.hbm, t.address() + bytes);
    }
  }
  return e;
}

constexpr int64_t kPartitions = 128;

}  // namespace

absl::StatusOr<int64_t> DeviceMemory::BytesNeeded(const proto::Graph& graph,
                                                  int held_ranks) {
  const Extents e = Measure(graph);
  // What AllocateRegion allocates for one region: data and shadow.
  auto region = [](int64_t bytes) {
    return bytes + Shadow::AllocatedBytes(bytes);
  };
  int64_t per_rank = region(e.hbm);
  for (int64_t row : e.sbuf_row) per_rank += region(row * kPartitions);
  for (int64_t row : e.psum_row) per_rank += region(row * kPartitions);
  const int64_t ranks = held_ranks >= 0
                            ? held_ranks
                            : std::max<int64_t>(1, graph.world().num_ranks());
  return per_rank * ranks;
}

int64_t DeviceMemory::DeviceBytes(const proto::Graph& graph, int held_ranks) {
  const Extents e = Measure(graph);
  int64_t per_rank = e.hbm;
  for (int64_t row : e.sbuf_row) per_rank += row * kPartitions;
  for (int64_t row : e.psum_row) per_rank += row * kPartitions;
  const int64_t ranks = held_ranks >= 0
                            ? held_ranks
                            : std::max<int64_t>(1, graph.world().num_ranks());
  return per_rank * ranks;
}

absl::StatusOr<DeviceMemory> DeviceMemory::Create(const proto::Graph& graph,
                                                  MemoryBudget* budget,
                                                  int first_rank,
                                                  int end_rank) {
  const Extents e = Measure(graph);
  DeviceMemory memory;
  const int ranks = std::max<int>(1, graph.world().num_ranks());
  if (end_rank < 0) end_rank = ranks;
  memory.num_cores_ = std::max<int>(1, graph.world().num_cores());
  memory.hbm_bytes_ = e.hbm;
  memory.hbm_.resize(ranks);
  for (int r = first_rank; r < end_rank; ++r) {
    NKI_RETURN_IF_ERROR(AllocateRegion(e.hbm, 0, budget, memory.hbm_[r]));
  }
  for (auto [regions, rows] : {std::pair{&memory.sbuf_, &e.sbuf_row},
                               std::pair{&memory.psum_, &e.psum_row}}) {
    regions->resize(static_cast<size_t>(ranks) * memory.num_cores_);
    for (int r = first_rank; r < end_rank; ++r) {
      for (int c = 0; c < memory.num_cores_; ++c) {
        NKI_RETURN_IF_ERROR(
            AllocateRegion((*rows)[c] * kPartitions, (*rows)[c], budget,
                           (*regions)[r * memory.num_cores_ + c]));
      }
    }
  }
  return memory;
}

absl::Status DeviceMemory::AllocateRegion(int64_t bytes,
                                          int64_t partition_bytes,
                                          MemoryBudget* budget,
                                          Region& region) {
  NKI_ASSIGN_OR_RETURN(region.data, ByteBuffer::Allocate(bytes, budget));
  NKI_ASSIGN_OR_RETURN(region.shadow, Shadow::Allocate(bytes, budget));
  region.partition_bytes = partition_bytes;
  return absl::OkStatus();
}

int64_t DeviceMemory::ByteOffset(const proto::Tensor& tensor, int64_t e,
                                 int64_t partition_bytes) {
  const int64_t esize = DTypeSize(tensor.dtype());
  if (!ops::IsOnChip(tensor.space())) return tensor.address() + e * esize;
  const int64_t row = ops::RowElements(tensor);
  return (tensor.partition_offset() + e / row) * partition_bytes +
         tensor.address() + (e % row) * esize;
}

}  // namespace nkigraph::interp
