#ifndef NKIGRAPH_VIEW_PICTURES_H_
#define NKIGRAPH_VIEW_PICTURES_H_

// The dataflow and barrier pictures for the page: laid out by Graphviz
// exactly as `nkigraph dot` lays them out (viz/), as SVG. A picture wider
// than a screen is not laid out whole: each of its pages (viz/paging.h)
// is laid out on its own, and the page navigates between them. Every node
// gets an SVG id ("<prefix><node>"), and the data names the instructions
// each node stands for (one, or a collapsed group's range of one core's
// stream) and the page it is on, so the page's script can go from an
// instruction to its node and back.

#include <string>

#include "absl/status/statusor.h"
#include "graph/graph_index.h"
#include "nlohmann/json.hpp"
#include "viz/viz.h"

namespace nkigraph::view {

// {"pages": [svg, ...], "nodes": [[page, core, first, last] or null, ...]
// by node, "columns": N, "note": text, "error": text}. first and last are
// positions in the core's stream. A picture Graphviz cannot lay out,
// even with dot's fallbacks, is an "error" and no pages, not a failure:
// the rest of the page still works.
absl::StatusOr<nlohmann::json> Picture(const graph::GraphIndex& index,
                                       const viz::DotOptions& options,
                                       const std::string& prefix);

}  // namespace nkigraph::view

#endif  // NKIGRAPH_VIEW_PICTURES_H_
