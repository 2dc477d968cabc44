// The barrier view (see viz/views.h).
#include <algorithm>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "ops/instr_facts.h"
#include "ops/sync_rule.h"
#include "util/status_macros.h"
#include "viz/group_tree.h"
#include "viz/labels.h"
#include "viz/style.h"
#include "viz/sync_match.h"
#include "viz/view_common.h"
#include "viz/views.h"

namespace nkigraph::viz {
namespace {

// Where a rank's lanes sit among the ranks drawn, or -1.
int RankSlot(const std::vector<int64_t>& ranks, int64_t rank) {
  auto it = std::lower_bound(ranks.begin(), ranks.end(), rank);
  return it != ranks.end() && *it == rank ? static_cast<int>(it - ranks.begin())
                                          : -1;
}

}  // namespace

absl::StatusOr<VizGraph> BuildBarrierView(const graph::GraphIndex& index,
                                          const Filters& filters,
                                          const ViewOptions& options) {
  const SyncMatch sync = MatchSync(index);
  std::vector<std::pair<int, int>> links;
  for (int core = 0; core < index.num_cores(); ++core) {
    const std::vector<int>& stream = index.stream(core);
    for (size_t k = 1; k < stream.size(); ++k) {
      links.push_back({stream[k - 1], stream[k]});
    }
  }
  for (const SyncGroup& group : sync.groups) {
    for (size_t k = 1; k < group.members.size(); ++k) {
      links.push_back({group.members[k - 1], group.members[k]});
    }
  }
  NKI_ASSIGN_OR_RETURN(const Selection sel, Select(index, filters, links));

  // Lanes per rank only when ranks differ in what the picture shows: the
  // collectives that join them.
  bool collectives = false;
  for (int i = 0; i < index.size() && !collectives; ++i) {
    collectives = sel.selected[i] &&
                  index.info(i).def->sync == ops::SyncKind::kCollective;
  }
  const bool per_rank = collectives && index.num_ranks() > 1;
  std::vector<int64_t> ranks = sel.ranks;
  if (!per_rank) ranks.resize(1);

  GroupTree tree(index);
  const std::vector<int> lane_core =
      AddCoreLanes(index, sel, /*wrap_runs=*/true, &tree);
  const int64_t cores = static_cast<int64_t>(lane_core.size());
  const int64_t lanes = cores * static_cast<int64_t>(ranks.size());
  const int64_t budget = options.max_nodes;
  if (budget > 0 && 2 * lanes > budget) {
    return absl::InvalidArgumentError(absl::StrCat(
        "the barrier view needs ", lanes, " lanes (", ranks.size(),
        " rank(s) x ", cores, " core(s)), too many for --max-nodes ", budget,
        "; pick ranks with --rank or cores with --core, or raise "
        "--max-nodes"));
  }
  // The budget is shared by every rank's copy of the lanes.
  int64_t per_copy =
      budget > 0
          ? std::max<int64_t>(
                cores, (budget - lanes) / static_cast<int64_t>(ranks.size()))
          : 0;
  if (options.max_lane_nodes > 0) {
    const int64_t lane_cap =
        std::max<int64_t>(2, options.max_lane_nodes) * cores;
    per_copy = per_copy > 0 ? std::min(per_copy, lane_cap) : lane_cap;
  }
  const bool collapse = per_copy > 0;
  tree.Finish(
      collapse ? static_cast<int>(std::max<int64_t>(4, per_copy / (2 * cores)))
               : 1 << 30);
  const int64_t visible = collapse ? tree.Collapse(per_copy) : tree.ExpandAll();

  VizGraph graph;
  graph.name = "barrier";
  ApplyDefaults(graph);
  graph.graph_attrs.push_back({"nodesep", "0.25"});
  std::string title = absl::StrCat(index.graph().kernel_name().empty()
                                       ? "graph"
                                       : index.graph().kernel_name(),
                                   ": synchronisation, ", lanes, " lane(s), ",
                                   sel.count, " instructions per rank");
  if (!sel.description.empty()) {
    absl::StrAppend(&title, " (", sel.description, ")");
  }
  if (visible < sel.count) {
    absl::StrAppend(&title, "; collapsed to ", visible,
                    " nodes per rank (--max-nodes ", budget,
                    ", --max-lane-nodes ", options.max_lane_nodes, ")");
  }
  graph.graph_attrs.push_back({"label", EscapeLabel(title)});

  std::vector<char> stuck(index.size(), 0);
  for (int i : sync.stuck) stuck[i] = 1;

  // Every rank draws the same lanes, so its nodes are rank 0's shifted by
  // a fixed stride: node(rank slot s, instruction i) = rep[i] + s * stride.
  std::vector<int> rep(index.size(), -1);
  std::vector<int> headers;
  EdgeCollector edges(options.edge_labels);
  int stride = 0;
  for (size_t s = 0; s < ranks.size(); ++s) {
    const int before = static_cast<int>(graph.nodes.size());
    for (size_t l = 0; l < lane_core.size(); ++l) {
      const int core = lane_core[l];
      const std::string prefix =
          per_rank ? absl::StrCat("r", ranks[s], "c", core, "_")
                   : absl::StrCat("c", core, "_");
      VizNode header;
      header.name = prefix + "lane";
      header.role = NodeRole::kLaneHeader;
      header.attrs = {
          {"label", per_rank ? absl::StrCat("rank ", ranks[s], "\\ncore ", core)
                             : absl::StrCat("core ", core)},
          {"shape", "plaintext"},
          {"style", "solid"},
          {"fontsize", "12"},
          {"group", prefix},
          {"class", "lane"}};
      graph.nodes.push_back(std::move(header));
      const int head = static_cast<int>(graph.nodes.size()) - 1;
      headers.push_back(head);
      std::vector<int> order;
      std::vector<int> lane_rep(index.size(), -1);
      LaneEmit emit;
      emit.prefix = prefix;
      emit.scope_clusters = false;
      emit.stuck = &stuck;
      EmitLane(index, tree, tree.lanes()[l], emit, &graph,
               s == 0 ? &rep : &lane_rep, &order);
      int prev = head;
      for (int n : order) {
        graph.nodes[n].attrs.push_back({"group", prefix});
        edges.Add(prev, n, EdgeKind::kOrder, "", {{"weight", "8"}});
        prev = n;
      }
    }
    if (s == 0) stride = static_cast<int>(graph.nodes.size()) - before;
  }
  auto node = [&](int slot, int i) {
    return rep[i] < 0 ? -1 : rep[i] + slot * stride;
  };
  auto is_instr = [&](int n) {
    return n >= 0 && graph.nodes[n].role == NodeRole::kInstruction;
  };
  // A set dot should place in one column, if every member is drawn as
  // itself (collapsed groups would make conflicting demands).
  auto same_rank = [&](const std::vector<int>& nodes) {
    if (nodes.size() < 2) return;
    for (int n : nodes) {
      if (!is_instr(n)) return;
    }
    graph.same_rank.push_back(nodes);
  };

  // Barriers and sendrecv pairs, inside each rank.
  for (const SyncGroup& group : sync.groups) {
    std::vector<int> shown;
    for (int i : group.members) {
      if (sel.selected[i] && rep[i] >= 0) shown.push_back(i);
    }
    for (size_t s = 0; s < ranks.size(); ++s) {
      const int slot = static_cast<int>(s);
      std::vector<int> nodes;
      for (int i : shown) nodes.push_back(node(slot, i));
      for (size_t k = 1; k < shown.size(); ++k) {
        if (group.kind == ops::SyncKind::kSendRecv) {
          edges.Add(nodes[k - 1], nodes[k], EdgeKind::kSendRecv,
                    ops::LinkLabel(index.instr(shown[k])));
        } else {
          edges.Add(nodes[k - 1], nodes[k], EdgeKind::kBarrier);
        }
      }
      if (shown.size() == group.members.size()) same_rank(nodes);
    }
  }

  // Collectives, across the ranks of each replica group, joined as the
  // op's sync rule says: to each member's successor for a ring permute
  // (SyncGroup::sends_to), one line through the group otherwise.
  if (per_rank) {
    const proto::World& world = index.graph().world();
    ops::SyncGroup sync_group;
    for (int i = 0; i < index.size(); ++i) {
      if (!sel.selected[i] || rep[i] < 0 ||
          index.info(i).def->sync != ops::SyncKind::kCollective) {
        continue;
      }
      const std::string label = ops::LinkLabel(index.instr(i));
      const int core = static_cast<int>(index.info(i).core);
      // One pass per replica group, from its first rank in ring order.
      for (int r = 0; r < index.num_ranks(); ++r) {
        const absl::StatusOr<ops::GroupPosition> position =
            ops::GroupOf(world, r);
        if (!position.ok() || position->index != 0) continue;
        const ops::ProgramId first{r, core};
        if (!ops::SyncMembers(world, first, index.instr(i), &sync_group).ok()) {
          continue;
        }
        const std::vector<ops::ProgramId>& members = sync_group.members;
        const size_t n = members.size();
        std::vector<int> nodes;
        for (size_t k = 0; k < n; ++k) {
          const int from = RankSlot(ranks, members[k].rank);
          if (from >= 0) nodes.push_back(node(from, i));
          if (n < 2) continue;
          if (!sync_group.sends_to.empty()) {
            const int to =
                RankSlot(ranks, members[sync_group.sends_to[k]].rank);
            if (from >= 0 && to >= 0) {
              edges.Add(node(from, i), node(to, i), EdgeKind::kPermute, label,
                        {{"constraint", "false"}});
            }
          } else if (k + 1 < n) {
            const int to = RankSlot(ranks, members[k + 1].rank);
            if (from >= 0 && to >= 0) {
              edges.Add(node(from, i), node(to, i), EdgeKind::kCollective);
            }
          }
        }
        same_rank(nodes);
      }
    }
  }

  // Lanes top to bottom in order.
  graph.same_rank.push_back(headers);
  for (size_t h = 1; h < headers.size(); ++h) {
    VizEdge edge;
    edge.tail = headers[h - 1];
    edge.head = headers[h];
    edge.attrs = {{"style", "invis"}, {"class", "lane-order"}};
    graph.edges.push_back(std::move(edge));
  }
  unsigned engines = 0;
  for (int i = 0; i < index.size(); ++i) {
    if (sel.selected[i])
      engines |= 1u << static_cast<int>(index.info(i).engine);
  }
  const unsigned kinds = edges.kinds_seen();
  edges.Emit(&graph);
  if (options.legend) graph.nodes.push_back(LegendNode(engines, kinds));
  return graph;
}

}  // namespace nkigraph::viz
