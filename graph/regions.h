#ifndef NKIGRAPH_GRAPH_REGIONS_H_
#define NKIGRAPH_GRAPH_REGIONS_H_

// The memory an instruction touches, operand by operand, as boxes of
// rows x bytes: on-chip tensors in their core's SBUF/PSUM (rows are
// partitions, bytes are offsets inside a partition, so two tensors that
// reuse the same buffer touch the same region); HBM tensors in their own
// space (rows along dim 0, bytes inside a row). A box over-approximates a
// strided pattern; an operand with a dynamic offset touches its whole
// tensor, and its index tensor's entries are read too.

#include <cstdint>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "graph/graph_index.h"

namespace nkigraph::graph {

struct Touch {
  // Which address space the box lives in: the program's SBUF or PSUM, or
  // one HBM tensor as seen by one program.
  uint64_t space_key = 0;
  int64_t row_lo = 0;  // [row_lo, row_hi)
  int64_t row_hi = 0;
  int64_t byte_lo = 0;  // [byte_lo, byte_hi) inside each row
  int64_t byte_hi = 0;
  bool write = false;
  uint32_t tensor = 0;  // the tensor the operand names
};

// What a run's dynamic offsets really reached: for an operand with a
// dynamic offset, the lowest and highest flat element of its tensor it
// touched, keyed by (instruction id, operand slot). The interpreter
// records them (Interpreter::RecordResolvedOffsets); an operand without an
// entry touches its whole tensor, as statically.
struct ResolvedRange {
  int64_t lo = 0;
  int64_t hi = 0;
};
using ResolvedOffsets =
    absl::flat_hash_map<std::pair<uint32_t, int>, ResolvedRange>;

// Appends the regions instruction `i` reads, then those it writes (an
// accumulating matmul, dma_compute and other read-modify-write operands
// appear in both). With `resolved`, a dynamic operand touches what the run
// reached instead of its whole tensor.
void AppendTouches(const GraphIndex& index, int i, std::vector<Touch>* out,
                   const ResolvedOffsets* resolved = nullptr);

}  // namespace nkigraph::graph

#endif  // NKIGRAPH_GRAPH_REGIONS_H_
