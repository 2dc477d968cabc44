#ifndef NKIGRAPH_VIZ_STYLE_H_
#define NKIGRAPH_VIZ_STYLE_H_

// Colours and line styles shared by the views, and the legend.

#include <string>

#include "absl/strings/string_view.h"
#include "ops/op_def.h"
#include "viz/view_model.h"

namespace nkigraph::viz {

// Fill colour of an engine's instructions.
absl::string_view EngineColor(ops::Engine engine);

// Kinds of edges; each is a class in the DOT/SVG output.
enum class EdgeKind {
  kRaw,         // read after write: data flows
  kWar,         // write after read
  kWaw,         // write after write
  kOrder,       // program order (barrier view)
  kBarrier,     // core_barrier: the cores meet
  kSendRecv,    // a sendrecv pair
  kCollective,  // all_gather / all_reduce participants
  kPermute,     // a ring step: rank r sends to its successor
};
absl::string_view EdgeKindName(EdgeKind kind);  // the class
// style, color, penwidth, arrowheads for the kind.
Attrs EdgeStyle(EdgeKind kind);

// Graph, node and edge defaults of both views.
void ApplyDefaults(VizGraph& graph);

// A legend node (HTML table) listing `engines` (bit i: ops::Engine i) and
// the edge kinds in `edges` (bit i: EdgeKind i).
VizNode LegendNode(unsigned engines, unsigned edges);

}  // namespace nkigraph::viz

#endif  // NKIGRAPH_VIZ_STYLE_H_
