#ifndef NKIGRAPH_VIEW_DUMP_VALUES_H_
#define NKIGRAPH_VIEW_DUMP_VALUES_H_

// The values a `run --dump DIR` folder holds, per instruction: for every
// DIR/<seq>_<tensor>_i<instr>[_r<rank>][_c<core>].npy the run wrote, the
// tensor's shape and dtype, min / max / mean over its finite values, NaN
// and Inf counts, and a heat-map of a 2-D slice (its last two dims at
// index 0 of the others) averaged down to at most kHeatCells per side.
// Only one rank's files are summarised (the lowest); the others are
// counted.
//
// A folder from another graph is an error, not a page of wrong values:
// every file must name an instruction of this graph that writes a tensor
// of that name, with that tensor's element count.

#include <string>

#include "absl/status/statusor.h"
#include "graph/graph_index.h"
#include "nlohmann/json.hpp"

namespace nkigraph::view {

inline constexpr int kHeatCells = 32;

// {"dir": DIR, "files": N, "by_instr": {index: [value summary, ...]}}.
absl::StatusOr<nlohmann::json> DumpValues(const graph::GraphIndex& index,
                                          const std::string& dir);

}  // namespace nkigraph::view

#endif  // NKIGRAPH_VIEW_DUMP_VALUES_H_
