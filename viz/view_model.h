#ifndef NKIGRAPH_VIZ_VIEW_MODEL_H_
#define NKIGRAPH_VIZ_VIEW_MODEL_H_

// A picture before Graphviz sees it: nodes, edges, nested clusters and
// same-rank sets, each with Graphviz attributes. The views fill one in;
// viz/cgraph_builder turns it into a cgraph graph.

#include <string>
#include <utility>
#include <vector>

namespace nkigraph::viz {

using Attrs = std::vector<std::pair<std::string, std::string>>;

struct VizCluster {
  std::string name;  // starts with "cluster" so dot draws a box
  int parent = -1;   // enclosing cluster, or -1 (the graph)
  Attrs attrs;
};

enum class NodeRole { kInstruction, kSummary, kLaneHeader, kLegend };

struct VizNode {
  std::string name;
  int cluster = -1;
  NodeRole role = NodeRole::kInstruction;
  bool html_label = false;  // the "label" attr is Graphviz HTML
  Attrs attrs;
};

struct VizEdge {
  int tail = 0;
  int head = 0;
  Attrs attrs;
};

struct VizGraph {
  std::string name;
  Attrs graph_attrs;
  Attrs node_defaults;
  Attrs edge_defaults;
  std::vector<VizCluster> clusters;
  std::vector<VizNode> nodes;
  std::vector<VizEdge> edges;
  // Node sets dot places on one rank (one column, left to right).
  std::vector<std::vector<int>> same_rank;
};

}  // namespace nkigraph::viz

#endif  // NKIGRAPH_VIZ_VIEW_MODEL_H_
