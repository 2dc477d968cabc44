#include "viz/layout_guard.h"

#include <algorithm>
#include <map>
#include <utility>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "viz/labels.h"

namespace nkigraph::viz {
namespace {

bool HasAttr(const Attrs& attrs, absl::string_view key,
             absl::string_view value) {
  return std::any_of(attrs.begin(), attrs.end(), [&](const auto& kv) {
    return kv.first == key && kv.second == value;
  });
}

bool Loose(const VizEdge& edge) {
  return HasAttr(edge.attrs, "constraint", "false");
}

std::string* FindAttr(Attrs& attrs, absl::string_view key) {
  for (auto& [k, v] : attrs) {
    if (k == key) return &v;
  }
  return nullptr;
}

}  // namespace

int FoldParallelLooseEdges(VizGraph& graph) {
  // The edges of each (tail, head), in order.
  std::map<std::pair<int, int>, std::vector<size_t>> by_pair;
  for (size_t e = 0; e < graph.edges.size(); ++e) {
    by_pair[{graph.edges[e].tail, graph.edges[e].head}].push_back(e);
  }
  std::vector<char> drop(graph.edges.size(), 0);
  int folded = 0;
  for (const auto& [pair, edges] : by_pair) {
    if (edges.size() < 2) continue;
    const bool any_loose =
        std::any_of(edges.begin(), edges.end(),
                    [&](size_t e) { return Loose(graph.edges[e]); });
    if (!any_loose) continue;
    const bool any_constraining =
        std::any_of(edges.begin(), edges.end(),
                    [&](size_t e) { return !Loose(graph.edges[e]); });
    if (any_constraining) {
      // The pair is ordered by its constraining edge anyway, so its loose
      // edges may constrain too without moving anything; an invisible
      // edge (which only anchored the head) then goes.
      for (size_t e : edges) {
        Attrs& attrs = graph.edges[e].attrs;
        attrs.erase(std::remove(attrs.begin(), attrs.end(),
                                std::pair<std::string, std::string>(
                                    "constraint", "false")),
                    attrs.end());
      }
      for (size_t e : edges) {
        if (HasAttr(graph.edges[e].attrs, "style", "invis")) {
          drop[e] = 1;
          ++folded;
        }
      }
      // At least one edge stays.
      if (std::all_of(edges.begin(), edges.end(),
                      [&](size_t e) { return drop[e] != 0; })) {
        drop[edges.front()] = 0;
        --folded;
      }
      continue;
    }
    // Only loose edges: the first stays and lists the others' labels.
    VizEdge& into = graph.edges[edges.front()];
    for (size_t k = 1; k < edges.size(); ++k) {
      drop[edges[k]] = 1;
      ++folded;
      for (const char* key : {"label", "xlabel"}) {
        const std::string* label = FindAttr(graph.edges[edges[k]].attrs, key);
        if (label == nullptr || label->empty()) continue;
        std::string* mine = FindAttr(into.attrs, "label");
        if (mine == nullptr) mine = FindAttr(into.attrs, "xlabel");
        if (mine == nullptr) {
          into.attrs.push_back({"xlabel", *label});
        } else if (mine->find(*label) == std::string::npos) {
          absl::StrAppend(mine, ", ", *label);
        }
      }
    }
  }
  std::vector<VizEdge> kept;
  kept.reserve(graph.edges.size());
  for (size_t e = 0; e < graph.edges.size(); ++e) {
    if (!drop[e]) kept.push_back(std::move(graph.edges[e]));
  }
  graph.edges = std::move(kept);
  return folded;
}

int ConstrainLooseEdgesInsideClusters(VizGraph& graph) {
  const int num_nodes = static_cast<int>(graph.nodes.size());
  int changed = 0;
  for (VizEdge& edge : graph.edges) {
    if (!Loose(edge) || edge.tail < 0 || edge.head < 0 ||
        edge.tail >= num_nodes || edge.head >= num_nodes ||
        graph.nodes[edge.tail].cluster != graph.nodes[edge.head].cluster) {
      continue;
    }
    edge.attrs.erase(
        std::remove(edge.attrs.begin(), edge.attrs.end(),
                    std::pair<std::string, std::string>("constraint", "false")),
        edge.attrs.end());
    ++changed;
  }
  return changed;
}

absl::string_view FallbackName(Fallback fallback) {
  switch (fallback) {
    case Fallback::kExternalLabels:
      return "edge labels placed after layout";
    case Fallback::kLocalEdgesConstrain:
      return "lines inside one box order the layout";
    case Fallback::kNewRank:
      return "global ranking (newrank)";
    case Fallback::kNoLooseEdges:
      return "global ranking, lines that do not order the layout left out";
  }
  return "";
}

void ApplyFallback(Fallback fallback, VizGraph& graph) {
  switch (fallback) {
    case Fallback::kExternalLabels:
      for (VizEdge& edge : graph.edges) {
        for (auto& [key, value] : edge.attrs) {
          if (key == "label") key = "xlabel";
        }
      }
      break;
    case Fallback::kLocalEdgesConstrain:
      ConstrainLooseEdgesInsideClusters(graph);
      break;
    case Fallback::kNewRank:
      graph.graph_attrs.push_back({"newrank", "true"});
      break;
    case Fallback::kNoLooseEdges:
      if (!HasAttr(graph.graph_attrs, "newrank", "true")) {
        graph.graph_attrs.push_back({"newrank", "true"});
      }
      graph.edges.erase(
          std::remove_if(graph.edges.begin(), graph.edges.end(),
                         [](const VizEdge& e) { return Loose(e); }),
          graph.edges.end());
      break;
  }
}

std::vector<int64_t> NodeColumns(const VizGraph& graph) {
  const size_t n = graph.nodes.size();
  std::vector<std::vector<int>> out(n);
  std::vector<int> indegree(n, 0);
  for (const VizEdge& edge : graph.edges) {
    if (Loose(edge) || edge.tail == edge.head || edge.tail < 0 ||
        edge.head < 0 || static_cast<size_t>(edge.tail) >= n ||
        static_cast<size_t>(edge.head) >= n) {
      continue;
    }
    out[edge.tail].push_back(edge.head);
    ++indegree[edge.head];
  }
  // Longest path by Kahn's order; nodes left on a cycle (dot reverses one
  // of its edges) keep the depth they reached.
  std::vector<int64_t> depth(n, 1);
  std::vector<int> ready;
  for (size_t i = 0; i < n; ++i) {
    if (indegree[i] == 0) ready.push_back(static_cast<int>(i));
  }
  while (!ready.empty()) {
    const int v = ready.back();
    ready.pop_back();
    for (int w : out[v]) {
      depth[w] = std::max(depth[w], depth[v] + 1);
      if (--indegree[w] == 0) ready.push_back(w);
    }
  }
  return depth;
}

int64_t LayoutColumns(const VizGraph& graph) {
  const std::vector<int64_t> columns = NodeColumns(graph);
  return columns.empty() ? 1
                         : *std::max_element(columns.begin(), columns.end());
}

void AppendToTitle(VizGraph& graph, absl::string_view note) {
  for (auto& [key, value] : graph.graph_attrs) {
    if (key == "label") {
      // Titles are escaped text; "\l" ends a left-justified line, as
      // the title is (labeljust=l).
      if (!absl::EndsWith(value, "\\l")) value += "\\l";
      absl::StrAppend(&value, EscapeLabel(note), "\\l");
      return;
    }
  }
  graph.graph_attrs.push_back({"label", EscapeLabel(note)});
}

}  // namespace nkigraph::viz
