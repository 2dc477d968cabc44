#ifndef NKIGRAPH_VIZ_LABELS_H_
#define NKIGRAPH_VIZ_LABELS_H_

// Node text: an instruction's opcode and a short operand summary, a
// collapsed group's instruction counts per engine, and the longer
// tooltips SVG viewers show on hover.

#include <string>

#include "absl/strings/string_view.h"
#include "graph/graph_index.h"
#include "viz/group_tree.h"

namespace nkigraph::viz {

// `text` with Graphviz escString specials (backslash) escaped, so user
// names cannot inject \N, \G, ... sequences.
std::string EscapeLabel(absl::string_view text);

// `name` cut to at most `max` characters (with a trailing "~").
std::string ShortName(absl::string_view name, size_t max = 18);

// Three lines: "nc_matmul +=", "psum <- rhs_tile, lhs_T_tile",
// "#12  128x512". Escaped.
std::string InstrLabel(const graph::GraphIndex& index, int i);
// Id, core, scope, source line and every operand. Escaped.
std::string InstrTooltip(const graph::GraphIndex& index, int i);

// "k_tile", "96 instrs", "tensor 32 | dma 64". Escaped. `parent` names a
// chunk or run.
std::string GroupLabel(const graph::GraphIndex& index, const GroupTree& tree,
                       int g);
std::string GroupTooltip(const graph::GraphIndex& index, const GroupTree& tree,
                         int g);

}  // namespace nkigraph::viz

#endif  // NKIGRAPH_VIZ_LABELS_H_
