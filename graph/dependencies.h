#ifndef NKIGRAPH_GRAPH_DEPENDENCIES_H_
#define NKIGRAPH_GRAPH_DEPENDENCIES_H_

// Data dependencies between the instructions of each program, from the
// memory regions their operands touch (graph/regions.h) and a region
// tracker fed in program order (graph/region_tracker.h): which instruction
// must wait for which, and why (read-after-write, write-after-read,
// write-after-write on bytes both touch). Within one core's stream; order
// between cores comes from their synchronising instructions. The dataflow
// picture draws these edges; a scheduler waits on them.

#include <cstdint>
#include <vector>

#include "graph/graph_index.h"
#include "graph/region_tracker.h"
#include "graph/regions.h"

namespace nkigraph::graph {

struct Dependency {
  int from = 0;  // instruction indexes (GraphIndex), from earlier to later
  int to = 0;
  DepKind kind = DepKind::kRaw;
  uint32_t tensor = 0;     // what `from` accessed
  uint32_t to_tensor = 0;  // what `to` accessed
  // The two sides name different tensors: a buffer reused by a later
  // allocation (or an alias).
  bool reuse() const { return tensor != to_tensor; }
};

struct DependencyOptions {
  // Drop the write-after-read / -write edges other edges imply (what the
  // picture wants). A scheduler, which waits for the latest predecessor
  // anyway, gets the same start times without this pass and skips it.
  bool drop_implied = true;
  // A run's dynamic offsets (graph/regions.h); nullptr: static, every
  // dynamic operand touching its whole tensor.
  const ResolvedOffsets* resolved = nullptr;
};

// One edge per dependent pair (read-after-write wins over write-after-read
// over write-after-write), without (by default) the write-after-read /
// -write ones other edges imply, sorted by (to, from): the instructions
// one instruction must wait for are one run of the result.
std::vector<Dependency> AnalyzeDependencies(const GraphIndex& index,
                                            DependencyOptions options = {});

absl::string_view DepKindName(DepKind kind);  // "raw", "war", "waw"

}  // namespace nkigraph::graph

#endif  // NKIGRAPH_GRAPH_DEPENDENCIES_H_
