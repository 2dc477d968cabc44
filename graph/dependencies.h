#ifndef NKIGRAPH_GRAPH_DEPENDENCIES_H_
#define NKIGRAPH_GRAPH_DEPENDENCIES_H_

// Data dependencies between the instructions of each program, from the
// memory regions their operands touch (viz/regions.h) and a region
// tracker fed in program order (viz/region_tracker.h).

#include <cstdint>
#include <vector>

#include "graph/graph_index.h"
#include "graph/region_tracker.h"

namespace nkigraph::viz {

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

// One edge per dependent pair (read-after-write wins over write-after-read
// over write-after-write), without the write-after-read / -write ones
// other edges imply, sorted by (to, from).
std::vector<Dependency> AnalyzeDependencies(const GraphIndex& index);

absl::string_view DepKindName(DepKind kind);  // "raw", "war", "waw"

}  // namespace nkigraph::viz

#endif  // NKIGRAPH_GRAPH_DEPENDENCIES_H_
