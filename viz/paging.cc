#include "viz/paging.h"

#include <algorithm>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
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

// Helvetica's average character is about 0.55 of its size.
constexpr double kCharWidthEm = 0.55;
// dot's gap between ranks (viz/style.cc's ranksep 0.35 inch) and a node's
// least width (0.75 inch) and side margins (0.06 inch each).
constexpr double kRankGapPoints = 0.35 * 72;
constexpr double kMinNodePoints = 0.75 * 72;
constexpr double kNodeMarginPoints = 2 * 0.06 * 72;
// What a page keeps for its two stubs beside the columns.
constexpr double kStubPoints = 2 * (kMinNodePoints + kRankGapPoints);

const std::string* FindAttr(const Attrs& attrs, absl::string_view key) {
  for (const auto& [k, v] : attrs) {
    if (k == key) return &v;
  }
  return nullptr;
}

double FontSize(const Attrs& attrs, const Attrs& defaults, double fallback) {
  double size = fallback;
  for (const Attrs* a : {&defaults, &attrs}) {
    if (const std::string* v = FindAttr(*a, "fontsize")) {
      double parsed = 0;
      if (absl::SimpleAtod(*v, &parsed) && parsed > 0) size = parsed;
    }
  }
  return size;
}

// The characters of a label's longest line: plain labels break at dot's
// escapes (\n, \l, \r), HTML ones at rows and <BR/>, their tags unseen.
size_t LongestLine(absl::string_view label, bool html) {
  size_t longest = 0, line = 0;
  for (size_t i = 0; i < label.size(); ++i) {
    const char c = label[i];
    if (html && c == '<') {
      const size_t close = label.find('>', i);
      if (close == absl::string_view::npos) break;
      const absl::string_view tag = label.substr(i, close - i + 1);
      if (absl::StartsWithIgnoreCase(tag, "<BR") ||
          absl::StartsWithIgnoreCase(tag, "</TR")) {
        longest = std::max(longest, line);
        line = 0;
      }
      i = close;
      continue;
    }
    if (!html && c == '\\' && i + 1 < label.size() &&
        (label[i + 1] == 'n' || label[i + 1] == 'l' || label[i + 1] == 'r')) {
      longest = std::max(longest, line);
      line = 0;
      ++i;
      continue;
    }
    if (c == '\n') {
      longest = std::max(longest, line);
      line = 0;
      continue;
    }
    ++line;
  }
  return std::max(longest, line);
}

double NodeWidth(const VizNode& node, const VizGraph& graph) {
  const std::string* label = FindAttr(node.attrs, "label");
  const double text =
      label == nullptr ? 0
                       : LongestLine(*label, node.html_label) * kCharWidthEm *
                             FontSize(node.attrs, graph.node_defaults, 14);
  return std::max(kMinNodePoints, text + kNodeMarginPoints);
}

}  // namespace

std::vector<double> EstimatedColumnWidths(const VizGraph& graph) {
  const std::vector<int64_t> columns = NodeColumns(graph);
  const int64_t count = LayoutColumns(graph);
  std::vector<double> nodes(count + 1, 0), labels(count + 1, 0);
  for (size_t i = 0; i < graph.nodes.size(); ++i) {
    if (OnEveryPage(graph.nodes[i])) continue;
    double& widest = nodes[columns[i]];
    widest = std::max(widest, NodeWidth(graph.nodes[i], graph));
  }
  for (const VizEdge& edge : graph.edges) {
    const std::string* label = FindAttr(edge.attrs, "label");
    if (label == nullptr || label->empty()) continue;
    const size_t head = static_cast<size_t>(edge.head);
    if (head >= columns.size()) continue;
    double& widest = labels[columns[head]];
    widest =
        std::max(widest, LongestLine(*label, false) * kCharWidthEm *
                             FontSize(edge.attrs, graph.edge_defaults, 14));
  }
  std::vector<double> widths(count + 1, 0);
  for (int64_t c = 1; c <= count; ++c) {
    widths[c] = nodes[c] + kRankGapPoints +
                (labels[c] > 0 ? labels[c] + kRankGapPoints : 0);
  }
  return widths;
}

std::vector<std::pair<int64_t, int64_t>> Pages(const VizGraph& graph) {
  const std::vector<double> widths = EstimatedColumnWidths(graph);
  double always = 0;  // the legend and lane headers, on every page
  for (const VizNode& node : graph.nodes) {
    if (OnEveryPage(node)) always = std::max(always, NodeWidth(node, graph));
  }
  const double room =
      std::max(kPageWidthPoints - always - kStubPoints, kMinNodePoints);
  std::vector<std::pair<int64_t, int64_t>> pages;
  const int64_t count = static_cast<int64_t>(widths.size()) - 1;
  double used = 0;
  for (int64_t c = 1; c <= count; ++c) {
    if (pages.empty() || used + widths[c] > room) {
      pages.push_back({c, c});
      used = widths[c];
    } else {
      pages.back().second = c;
      used += widths[c];
    }
  }
  if (pages.empty()) pages.push_back({1, 1});
  return pages;
}

absl::Status KeepPage(VizGraph& graph, int64_t page) {
  const std::vector<std::pair<int64_t, int64_t>> pages = Pages(graph);
  const int64_t count = static_cast<int64_t>(pages.size());
  if (page < 1 || page > count) {
    return absl::InvalidArgumentError(
        absl::StrCat("--page ", page, ": this picture has ", count, " page",
                     count == 1 ? "" : "s", " of a screen's width"));
  }
  const std::vector<int64_t> columns = NodeColumns(graph);
  // Not a structured binding: clang 14 (the fuzz build) cannot capture
  // one in a lambda.
  const int64_t first = pages[page - 1].first;
  const int64_t last = pages[page - 1].second;
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
                absl::StrCat("page ", page, " of ", count, ": --page K (1 to ",
                             count, ") for the others"));
  return absl::OkStatus();
}

}  // namespace nkigraph::viz
