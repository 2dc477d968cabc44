#ifndef NKIGRAPH_VIZ_CGRAPH_BUILDER_H_
#define NKIGRAPH_VIZ_CGRAPH_BUILDER_H_

// Turns a VizGraph into a libcgraph graph, and writes cgraph graphs as
// DOT. Graphviz keeps global state and is not thread-safe: every call
// into it, here and in viz/render, happens under GraphvizMutex().

#include <graphviz/cgraph.h>

#include <memory>
#include <mutex>
#include <string>

#include "viz/view_model.h"

namespace nkigraph::viz {

std::mutex& GraphvizMutex();

struct AgraphCloser {
  void operator()(Agraph_t* graph) const;  // caller holds the mutex
};
using AgraphPtr = std::unique_ptr<Agraph_t, AgraphCloser>;

// Builds the cgraph graph. Objects get ids in creation order (not by
// string address, cgraph's default), so subgraph order — and with it
// the layout and the output — is the same on every run. Caller holds the
// mutex.
AgraphPtr BuildAgraph(const VizGraph& graph);

// The graph as DOT text (agwrite). Caller holds the mutex.
std::string WriteDot(Agraph_t* graph);

}  // namespace nkigraph::viz

#endif  // NKIGRAPH_VIZ_CGRAPH_BUILDER_H_
