#ifndef NKIGRAPH_VIEW_GRAPH_DATA_H_
#define NKIGRAPH_VIEW_GRAPH_DATA_H_

// The graph as the page's script reads it: tensors, instructions with
// their operands (tensor, role, read/write, extent, byte range),
// attributes and source lines, and each instruction's producers (the
// read-after-write edges the dataflow picture draws). Arrays rather than
// objects per instruction, so a graph of tens of thousands of
// instructions stays a small part of the page (view/assets/model.js
// names the fields).

#include "graph/graph_index.h"
#include "nlohmann/json.hpp"

namespace nkigraph::view {

nlohmann::json GraphData(const graph::GraphIndex& index);

}  // namespace nkigraph::view

#endif  // NKIGRAPH_VIEW_GRAPH_DATA_H_
