#include "viz/paging.h"

#include <set>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "viz/layout_guard.h"

namespace nkigraph::viz {
namespace {

bool OnEveryPage(const VizNode& node) {
  return node.role == NodeRole::kLegend || node.role == NodeRole::kLaneHeader;
}

// A node that stands for the nodes of another page.
VizNode PageStub(const std::string& name, int64_t page, bool before) {
  VizNode stub;
  stub.name = name;
  stub.role = NodeRole::kSummary;
  stub.attrs = {{"shape", "cds"},
                {"style", "dashed"},
                // "\\n": dot's line break in a plain label.
                {"label", absl::StrCat(before ? "from" : "on", " page ", page,
                                       "\\n(--page ", page, ")")}};
  return stub;
}

// Drops the clusters that hold no node (directly or in a nested cluster),
// renumbering the others.
void DropEmptyClusters(VizGraph& graph) {
  std::vector<char> used(graph.clusters.size(), 0);
  for (const VizNode& node : graph.nodes) {
    for (int c = node.cluster; c >= 0 && !used[c];
         c = graph.clusters[c].parent) {
      used[c] = 1;
    }
  }
  std::vector<int> renumbered(graph.clusters.size(), -1);
  std::vector<VizCluster> kept;
  for (size_t c = 0; c < graph.clusters.size(); ++c) {
    if (!used[c]) continue;
    // Parents come before their children (the views add them so), and a
    // used cluster's parent is used.
    VizCluster cluster = std::move(graph.clusters[c]);
    if (cluster.parent >= 0) cluster.parent = renumbered[cluster.parent];
    renumbered[c] = static_cast<int>(kept.size());
    kept.push_back(std::move(cluster));
  }
  graph.clusters = std::move(kept);
  for (VizNode& node : graph.nodes) {
    if (node.cluster >= 0) node.cluster = renumbered[node.cluster];
  }
}

}  // namespace

int64_t PageCount(const VizGraph& graph) {
  return (LayoutColumns(graph) + kScreenColumns - 1) / kScreenColumns;
}

absl::Status KeepPage(VizGraph& graph, int64_t page) {
  const int64_t pages = PageCount(graph);
  if (page < 1 || page > pages) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--page ", page, ": this picture has ", pages, " page",
        pages == 1 ? "" : "s", " of up to ", kScreenColumns, " columns"));
  }
  const std::vector<int64_t> columns = NodeColumns(graph);
  const int64_t first = (page - 1) * kScreenColumns + 1;
  const int64_t last = page * kScreenColumns;
  // -1: before this page, 0: on it, 1: after it.
  auto side = [&](int node) {
    if (OnEveryPage(graph.nodes[node])) return 0;
    return columns[node] < first ? -1 : columns[node] > last ? 1 : 0;
  };

  std::vector<int> renumbered(graph.nodes.size(), -1);
  std::vector<VizNode> nodes;
  for (size_t i = 0; i < graph.nodes.size(); ++i) {
    if (side(static_cast<int>(i)) != 0) continue;
    renumbered[i] = static_cast<int>(nodes.size());
    nodes.push_back(std::move(graph.nodes[i]));
  }
  int before_stub = -1, after_stub = -1;
  auto stub = [&](bool before) {
    int& index = before ? before_stub : after_stub;
    if (index < 0) {
      index = static_cast<int>(nodes.size());
      nodes.push_back(PageStub(before ? "page_before" : "page_after",
                               before ? page - 1 : page + 1, before));
    }
    return index;
  };
  // An edge across the page's edge becomes one dashed edge from or to the
  // stub per node (not one per edge: they would only stack).
  std::vector<VizEdge> edges;
  std::set<std::pair<int, int>> stub_edges;
  for (VizEdge& edge : graph.edges) {
    const int tail_side = side(edge.tail), head_side = side(edge.head);
    if (tail_side == 0 && head_side == 0) {
      edge.tail = renumbered[edge.tail];
      edge.head = renumbered[edge.head];
      edges.push_back(std::move(edge));
      continue;
    }
    if ((tail_side == 0) == (head_side == 0)) continue;  // both elsewhere
    const bool tail_here = tail_side == 0;
    const int other_side = tail_here ? head_side : tail_side;
    const int here = renumbered[tail_here ? edge.tail : edge.head];
    const int s = stub(other_side < 0);
    // Drawn left to right: from the earlier page's stub, to the later's.
    const std::pair<int, int> ends =
        other_side < 0 ? std::pair{s, here} : std::pair{here, s};
    if (!stub_edges.insert(ends).second) continue;
    VizEdge crossing;
    crossing.tail = ends.first;
    crossing.head = ends.second;
    crossing.attrs = {{"style", "dashed"}};
    edges.push_back(std::move(crossing));
  }
  graph.nodes = std::move(nodes);
  graph.edges = std::move(edges);
  std::vector<std::vector<int>> same_rank;
  for (const std::vector<int>& set : graph.same_rank) {
    std::vector<int> kept;
    for (int node : set) {
      if (renumbered[node] >= 0) kept.push_back(renumbered[node]);
    }
    if (!kept.empty()) same_rank.push_back(std::move(kept));
  }
  graph.same_rank = std::move(same_rank);
  DropEmptyClusters(graph);
  AppendToTitle(graph,
                absl::StrCat("page ", page, " of ", pages, ": --page K (1 to ",
                             pages, ") for the others"));
  return absl::OkStatus();
}

}  // namespace nkigraph::viz
