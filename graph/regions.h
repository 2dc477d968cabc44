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
#include <vector>

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

// Appends the regions instruction `i` reads, then those it writes (an
// accumulating matmul, dma_compute and other read-modify-write operands
// appear in both).
void AppendTouches(const GraphIndex& index, int i, std::vector<Touch>* out);

}  // namespace nkigraph::graph

#endif  // NKIGRAPH_GRAPH_REGIONS_H_
