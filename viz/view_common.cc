#include "viz/view_common.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "viz/labels.h"

namespace nkigraph::viz {
namespace {

constexpr char kSummaryFill[] = "#eeeeee";

int AddNode(VizGraph* graph, VizNode node) {
  graph->nodes.push_back(std::move(node));
  return static_cast<int>(graph->nodes.size()) - 1;
}

}  // namespace

void EmitLane(const graph::GraphIndex& index, const GroupTree& tree, int root,
              const LaneEmit& emit, VizGraph* graph, std::vector<int>* rep,
              std::vector<int>* order) {
  auto instr_node = [&](int i, int cluster) {
    const graph::InstrInfo& info = index.info(i);
    VizNode node;
    node.name = absl::StrCat(emit.prefix, "i", info.instr->id());
    node.cluster = cluster;
    node.role = NodeRole::kInstruction;
    node.attrs = {
        {"label", InstrLabel(index, i)},
        {"tooltip", InstrTooltip(index, i)},
        {"fillcolor", std::string(EngineColor(info.engine))},
        {"class", absl::StrCat("instr ", ops::EngineName(info.engine))}};
    if (emit.stuck != nullptr && (*emit.stuck)[i]) {
      node.attrs.push_back({"color", "#d62728"});
      node.attrs.push_back({"penwidth", "3"});
      node.attrs.push_back({"xlabel", "stuck"});
      node.attrs.push_back({"fontcolor", "#000000"});
    }
    const int n = AddNode(graph, std::move(node));
    (*rep)[i] = n;
    order->push_back(n);
  };
  auto summary_node = [&](int g, int cluster) {
    VizNode node;
    node.name = absl::StrCat(emit.prefix, "g", g);
    node.cluster = cluster;
    node.role = NodeRole::kSummary;
    node.attrs = {{"label", GroupLabel(index, tree, g)},
                  {"tooltip", GroupTooltip(index, tree, g)},
                  {"fillcolor", kSummaryFill},
                  {"shape", "box3d"},
                  {"style", "filled"},
                  {"class", "summary"}};
    const Group& group = tree.group(g);
    if (group.first >= 0) {
      // The instruction ids it stands for (a lane's ids are increasing):
      // lets tools map edges of a collapsed picture back.
      node.attrs.push_back(
          {"ids", absl::StrCat(index.instr(group.first).id(), "-",
                               index.instr(group.last).id())});
    }
    const int n = AddNode(graph, std::move(node));
    order->push_back(n);
    // Every instruction below maps to the summary.
    std::vector<int> stack = {g};
    while (!stack.empty()) {
      const int h = stack.back();
      stack.pop_back();
      for (const GroupItem& item : tree.group(h).items) {
        if (item.is_group) {
          stack.push_back(item.index);
        } else {
          (*rep)[item.index] = n;
        }
      }
    }
  };

  if (!tree.group(root).expanded) {
    summary_node(root, emit.cluster);
    return;
  }
  // Depth-first in program order; a frame is (group, next item, cluster).
  struct Frame {
    int group;
    size_t next;
    int cluster;
  };
  std::vector<Frame> stack = {{root, 0, emit.cluster}};
  while (!stack.empty()) {
    Frame& frame = stack.back();
    const Group& group = tree.group(frame.group);
    if (frame.next == group.items.size()) {
      stack.pop_back();
      continue;
    }
    const GroupItem item = group.items[frame.next++];
    const int cluster = frame.cluster;
    if (!item.is_group) {
      instr_node(item.index, cluster);
      continue;
    }
    const Group& child = tree.group(item.index);
    if (!child.expanded) {
      summary_node(item.index, cluster);
      continue;
    }
    int inner = cluster;
    if (child.kind == GroupKind::kScope && emit.scope_clusters) {
      VizCluster box;
      box.name = absl::StrCat("cluster_", emit.prefix, "g", item.index);
      box.parent = cluster;
      box.attrs = {{"label", EscapeLabel(ShortName(child.name, 32))},
                   {"tooltip", EscapeLabel(child.path)},
                   {"style", "rounded"},
                   {"color", "#8c8c8c"},
                   {"fontsize", "10"},
                   {"class", "scope"}};
      graph->clusters.push_back(std::move(box));
      inner = static_cast<int>(graph->clusters.size()) - 1;
    }
    stack.push_back({item.index, 0, inner});  // invalidates `frame`
  }
}

std::vector<int> AddCoreLanes(const graph::GraphIndex& index,
                              const Selection& sel, bool wrap_runs,
                              GroupTree* tree) {
  std::vector<int> lane_core;
  std::vector<int> seq;
  for (int core : sel.cores) {
    seq.clear();
    for (int i : index.stream(core)) {
      if (sel.selected[i]) seq.push_back(i);
    }
    if (seq.empty()) continue;
    tree->AddLane(absl::StrCat("core ", core), seq, wrap_runs);
    lane_core.push_back(core);
  }
  return lane_core;
}

void EdgeCollector::Add(int tail, int head, EdgeKind kind,
                        const std::string& label, Attrs extra) {
  if (tail < 0 || head < 0 || tail == head) return;
  kinds_ |= 1u << static_cast<int>(kind);
  auto [it, inserted] = by_key_.try_emplace(
      std::make_tuple(tail, head, static_cast<int>(kind)), edges_.size());
  if (inserted) {
    edges_.push_back({tail, head, kind, {}, std::move(extra)});
  }
  Pending& edge = edges_[it->second];
  if (!label.empty() && edge.labels.size() < 4 &&
      std::find(edge.labels.begin(), edge.labels.end(), label) ==
          edge.labels.end()) {
    edge.labels.push_back(label);
  }
}

void EdgeCollector::Emit(VizGraph* graph) {
  const bool small_picture =
      static_cast<int64_t>(graph->nodes.size()) <= kInlineEdgeLabelNodes;
  // Edges are kept in the order added (program order of their heads), so
  // the nearest consumers of a wide fan-out are the ones drawn.
  absl::flat_hash_map<int, int> fan_out;
  absl::flat_hash_map<int, int> not_drawn;
  for (Pending& pending : edges_) {
    const bool data = pending.kind == EdgeKind::kRaw ||
                      pending.kind == EdgeKind::kWar ||
                      pending.kind == EdgeKind::kWaw;
    if (data && ++fan_out[pending.tail] > kMaxDataFanOut) {
      ++not_drawn[pending.tail];
      continue;
    }
    VizEdge edge;
    edge.tail = pending.tail;
    edge.head = pending.head;
    edge.attrs = EdgeStyle(pending.kind);
    // In big pictures ordering-only edges do not place nodes: most come
    // from buffer reuse between distant instructions, and letting them
    // pull the layout stretches it into long crossing curves. Small
    // pictures keep them, so time still reads left to right.
    const bool ordering_only =
        pending.kind == EdgeKind::kWar || pending.kind == EdgeKind::kWaw;
    if (ordering_only && !small_picture) {
      edge.attrs.push_back({"constraint", "false"});
    }
    if (labels_ && !pending.labels.empty()) {
      std::string label = absl::StrJoin(
          pending.labels.begin(),
          pending.labels.begin() + std::min<size_t>(pending.labels.size(), 3),
          ", ");
      if (pending.labels.size() > 3) label += ", ...";
      // dot lays an edge label out as a node of its own, which makes big
      // pictures several times slower (a 542-instruction backward: 2 min
      // against 2 s), so past a small picture labels are external,
      // placed after layout. Edges that do not constrain the layout
      // (synchronisation; ordering in big pictures) often join nodes of
      // one rank; dot 2.4x mishandles labels on such flat edges (it
      // crashes freeing the layout), so theirs are always external.
      const bool inline_label =
          (pending.kind == EdgeKind::kRaw || ordering_only) && small_picture;
      edge.attrs.push_back(
          {inline_label ? "label" : "xlabel", EscapeLabel(label)});
    }
    for (auto& attr : pending.extra) edge.attrs.push_back(std::move(attr));
    graph->edges.push_back(std::move(edge));
  }
  for (const auto& [node, count] : not_drawn) {
    graph->nodes[node].attrs.push_back(
        {"xlabel", absl::StrCat("+", count, " dependents not drawn")});
  }
  edges_.clear();
  by_key_.clear();
}

}  // namespace nkigraph::viz
