#ifndef NKIGRAPH_VIZ_VIEW_COMMON_H_
#define NKIGRAPH_VIZ_VIEW_COMMON_H_

// Pieces both views use: emitting a lane's visible nodes (instructions
// and collapsed groups, with scope clusters), and collecting edges
// between visible nodes without duplicates.

#include <cstdint>
#include <string>
#include <tuple>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "graph/graph_index.h"
#include "viz/group_tree.h"
#include "viz/selection.h"
#include "viz/style.h"
#include "viz/view_model.h"

namespace nkigraph::viz {

struct LaneEmit {
  std::string prefix;  // node and cluster names start with it
  int cluster = -1;    // cluster the lane's nodes go in
  bool scope_clusters = true;
  // Instructions to outline as stuck (a deadlock), by index; may be null.
  const std::vector<char>* stuck = nullptr;
};

// Adds the visible nodes of the lane rooted at `root`. rep[i] becomes the
// node standing for instruction i; `order` gets the lane's visible nodes
// in program order.
void EmitLane(const graph::GraphIndex& index, const GroupTree& tree, int root,
              const LaneEmit& emit, VizGraph* graph, std::vector<int>* rep,
              std::vector<int>* order);

// Adds one lane per selected core that has selected instructions (named
// "core N"), in core order; returns those cores.
std::vector<int> AddCoreLanes(const graph::GraphIndex& index,
                              const Selection& sel, bool wrap_runs,
                              GroupTree* tree);

// Edges between visible nodes: self-loops dropped, one edge per
// (tail, head, kind), labels merged.
class EdgeCollector {
 public:
  explicit EdgeCollector(bool labels) : labels_(labels) {}
  void Add(int tail, int head, EdgeKind kind, const std::string& label = "",
           Attrs extra = {});
  // Pictures with more nodes than this get their edge labels outside the
  // layout (Graphviz xlabel), which keeps big layouts fast.
  static constexpr int64_t kInlineEdgeLabelNodes = 150;
  // Data edges drawn out of one node; the rest are counted in the node's
  // external label. A zero-fill or a weight load feeding hundreds of
  // collapsed blocks otherwise turns dot's crossing minimisation and
  // routing from seconds into minutes, for a fan of lines nobody can
  // follow.
  static constexpr int kMaxDataFanOut = 12;

  // Appends the edges to `graph`, in the order first added.
  void Emit(VizGraph* graph);
  unsigned kinds_seen() const { return kinds_; }
  size_t size() const { return edges_.size(); }

 private:
  struct Pending {
    int tail, head;
    EdgeKind kind;
    std::vector<std::string> labels;
    Attrs extra;
  };
  bool labels_;
  unsigned kinds_ = 0;
  std::vector<Pending> edges_;
  absl::flat_hash_map<std::tuple<int, int, int>, size_t> by_key_;
};

}  // namespace nkigraph::viz

#endif  // NKIGRAPH_VIZ_VIEW_COMMON_H_
