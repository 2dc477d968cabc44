// The dataflow view (see viz/views.h).
#include <algorithm>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "graph/dependencies.h"
#include "ops/instr_facts.h"
#include "util/status_macros.h"
#include "viz/group_tree.h"
#include "viz/labels.h"
#include "viz/style.h"
#include "viz/sync_match.h"
#include "viz/view_common.h"
#include "viz/views.h"

namespace nkigraph::viz {

namespace {

// Time runs left to right: consecutive scope instances of one lane (layer
// after layer, block after block) are chained by invisible edges from the
// last instruction of one to the first of the next. Dependencies alone
// would let independent blocks stack vertically, reading as parallel.
void AddScopeSequence(const GroupTree& tree, const std::vector<int>& rep,
                      VizGraph* graph) {
  for (const Group& group : tree.groups()) {
    if (!group.expanded) continue;
    const Group* prev = nullptr;
    for (const GroupItem& item : group.items) {
      const Group* next = item.is_group ? &tree.group(item.index) : nullptr;
      if (prev != nullptr && next != nullptr &&
          prev->kind == GroupKind::kScope && next->kind == GroupKind::kScope) {
        const int tail = rep[prev->last];
        const int head = rep[next->first];
        if (tail >= 0 && head >= 0 && tail != head) {
          graph->edges.push_back(
              {tail, head, {{"style", "invis"}, {"class", "sequence"}}});
        }
      }
      prev = next;
    }
  }
}

// dot puts a node nothing points to in the first column, so a load deep in
// the program (its source is a kernel input) would be drawn at the start,
// stretching its scope's box back over everything before it. Such nodes
// hang by an invisible edge from the node before them in program order.
void AnchorSources(const std::vector<std::vector<int>>& lane_orders,
                   VizGraph* graph) {
  std::vector<char> placed(graph->nodes.size(), 0);
  for (const VizEdge& edge : graph->edges) {
    const bool loose =
        std::find(edge.attrs.begin(), edge.attrs.end(),
                  std::pair<std::string, std::string>("constraint", "false")) !=
        edge.attrs.end();
    if (!loose) placed[edge.head] = 1;
  }
  for (const std::vector<int>& order : lane_orders) {
    for (size_t k = 1; k < order.size(); ++k) {
      if (placed[order[k]]) continue;
      graph->edges.push_back({order[k - 1],
                              order[k],
                              {{"style", "invis"}, {"class", "sequence"}}});
    }
  }
}

}  // namespace

absl::StatusOr<VizGraph> BuildDataflowView(const graph::GraphIndex& index,
                                           const Filters& filters,
                                           const ViewOptions& options) {
  const std::vector<graph::Dependency> deps = graph::AnalyzeDependencies(index);
  const SyncMatch sync = MatchSync(index);
  std::vector<std::pair<int, int>> links;
  links.reserve(deps.size());
  for (const graph::Dependency& dep : deps) links.push_back({dep.from, dep.to});
  for (const SyncGroup& group : sync.groups) {
    for (size_t k = 1; k < group.members.size(); ++k) {
      links.push_back({group.members[k - 1], group.members[k]});
    }
  }
  NKI_ASSIGN_OR_RETURN(const Selection sel, Select(index, filters, links));

  GroupTree tree(index);
  const std::vector<int> lane_core =
      AddCoreLanes(index, sel, /*wrap_runs=*/false, &tree);
  const int64_t lanes = static_cast<int64_t>(lane_core.size());
  const int64_t budget = options.max_nodes;
  tree.Finish(budget > 0
                  ? static_cast<int>(std::max<int64_t>(4, budget / (2 * lanes)))
                  : 1 << 30);
  const int64_t visible = budget > 0 ? tree.Collapse(budget) : tree.ExpandAll();

  VizGraph graph;
  graph.name = "dataflow";
  ApplyDefaults(graph);
  std::string title = absl::StrCat(index.graph().kernel_name().empty()
                                       ? "graph"
                                       : index.graph().kernel_name(),
                                   ": dataflow, ", sel.count, " instructions");
  if (!sel.description.empty())
    absl::StrAppend(&title, " (", sel.description, ")");
  if (visible < sel.count) {
    absl::StrAppend(&title, "; collapsed to ", visible, " nodes (--max-nodes ",
                    budget, "; zoom in with --scope or --around)");
  }
  graph.graph_attrs.push_back({"label", EscapeLabel(title)});

  std::vector<int> rep(index.size(), -1);
  std::vector<std::vector<int>> lane_orders(lane_core.size());
  unsigned engines = 0;
  for (size_t l = 0; l < lane_core.size(); ++l) {
    VizCluster box;
    box.name = absl::StrCat("cluster_core", lane_core[l]);
    box.attrs = {{"label", absl::StrCat("core ", lane_core[l])},
                 {"style", "rounded,filled"},
                 {"fillcolor", "#fafafa"},
                 {"color", "#606060"},
                 {"fontsize", "12"},
                 {"class", "core"}};
    graph.clusters.push_back(std::move(box));
    LaneEmit emit;
    emit.cluster = static_cast<int>(graph.clusters.size()) - 1;
    emit.stuck = nullptr;
    EmitLane(index, tree, tree.lanes()[l], emit, &graph, &rep, &lane_orders[l]);
  }
  for (int i = 0; i < index.size(); ++i) {
    if (sel.selected[i])
      engines |= 1u << static_cast<int>(index.info(i).engine);
  }

  EdgeCollector edges(options.edge_labels);
  for (const graph::Dependency& dep : deps) {
    if (!sel.selected[dep.from] || !sel.selected[dep.to]) continue;
    const EdgeKind kind = dep.kind == graph::DepKind::kRaw   ? EdgeKind::kRaw
                          : dep.kind == graph::DepKind::kWar ? EdgeKind::kWar
                                                             : EdgeKind::kWaw;
    std::string label = ShortName(index.tensor(dep.tensor).name());
    if (dep.reuse()) {
      // A later allocation in the same bytes.
      const std::string now = ShortName(index.tensor(dep.to_tensor).name());
      label = now == label ? absl::StrCat(label, " (buffer reused)")
                           : absl::StrCat(now, " reuses ", label);
    }
    edges.Add(rep[dep.from], rep[dep.to], kind, label);
  }
  for (const SyncGroup& group : sync.groups) {
    std::vector<int> shown;
    for (int i : group.members) {
      if (sel.selected[i]) shown.push_back(i);
    }
    for (size_t k = 1; k < shown.size(); ++k) {
      const int a = shown[k - 1], b = shown[k];
      // Between two collapsed groups the line says little (their labels
      // count their synchronisations) and hundreds of such cross-core
      // lines make dot's layout take minutes.
      if (graph.nodes[rep[a]].role == NodeRole::kSummary &&
          graph.nodes[rep[b]].role == NodeRole::kSummary) {
        continue;
      }
      if (group.kind == ops::SyncKind::kSendRecv) {
        edges.Add(rep[a], rep[b], EdgeKind::kSendRecv,
                  ops::LinkLabel(index.instr(a)), {{"constraint", "false"}});
      } else {
        edges.Add(rep[a], rep[b], EdgeKind::kBarrier, "",
                  {{"constraint", "false"}});
      }
    }
  }
  const unsigned kinds = edges.kinds_seen();
  edges.Emit(&graph);
  AddScopeSequence(tree, rep, &graph);
  AnchorSources(lane_orders, &graph);
  if (options.legend) graph.nodes.push_back(LegendNode(engines, kinds));
  return graph;
}

}  // namespace nkigraph::viz
