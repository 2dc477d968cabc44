#include "viz/group_tree.h"

#include <algorithm>
#include <deque>
#include <tuple>
#include <utility>

#include "absl/strings/str_join.h"

namespace nkigraph::viz {

bool IsSync(const graph::InstrInfo& info) {
  return info.def->sync != ops::SyncKind::kNone;
}

int GroupTree::NewGroup(GroupKind kind, int parent, int lane) {
  Group group;
  group.kind = kind;
  group.parent = parent;
  group.lane = lane;
  groups_.push_back(std::move(group));
  return static_cast<int>(groups_.size()) - 1;
}

int GroupTree::AddLane(std::string name, const std::vector<int>& seq,
                       bool wrap_runs) {
  const int lane = static_cast<int>(lanes_.size());
  const int root = NewGroup(GroupKind::kLane, -1, lane);
  groups_[root].name = std::move(name);
  lanes_.push_back(root);

  // Open scope instances: stack[k] is the instance of component k - 1
  // (stack[0] is the lane); starts[k] the earliest stream position it can
  // have begun at.
  std::vector<int> stack = {root};
  std::vector<uint32_t> starts = {0};
  std::vector<std::string> open;  // components of the innermost instance
  int64_t prev = -1;              // position of the previous instruction
  for (int i : seq) {
    const graph::InstrInfo& info = index_->info(i);
    const std::vector<std::string>& parts =
        index_->scope_components(info.instr->scope());
    // A scope that freed tensors since the previous instruction ended:
    // the innermost instance open when the earliest of them was
    // allocated. Close it (and what it contains) even if the next
    // instruction has the same scope path: that is the next iteration.
    const std::vector<uint32_t>& frees = index_->frees(info.core);
    uint32_t begin = graph::GraphIndex::kNoFree;
    for (int64_t p = prev + 1; p <= info.position; ++p) {
      begin = std::min(begin, frees[p]);
    }
    if (begin != graph::GraphIndex::kNoFree) {
      size_t k = stack.size() - 1;
      while (k > 0 && starts[k] > begin) --k;
      if (k > 0) {
        stack.resize(k);
        starts.resize(k);
        open.resize(k - 1);
      }
    }
    size_t common = 0;
    while (common < open.size() && common < parts.size() &&
           open[common] == parts[common]) {
      ++common;
    }
    stack.resize(common + 1);
    starts.resize(common + 1);
    open.resize(common);
    for (size_t k = common; k < parts.size(); ++k) {
      const int g = NewGroup(GroupKind::kScope, stack.back(), lane);
      groups_[g].name = parts[k];
      groups_[g].path =
          absl::StrJoin(parts.begin(), parts.begin() + k + 1, "/");
      groups_[stack.back()].items.push_back({true, g});
      stack.push_back(g);
      starts.push_back(static_cast<uint32_t>(prev + 1));
      open.push_back(parts[k]);
    }
    groups_[stack.back()].items.push_back({false, i});
    prev = info.position;
  }

  if (wrap_runs) {
    const size_t end = groups_.size();
    for (size_t g = root; g < end; ++g) {
      std::vector<GroupItem> items;
      std::vector<GroupItem> run;
      auto flush = [&] {
        if (run.size() >= 2) {
          const int r = NewGroup(GroupKind::kRun, static_cast<int>(g), lane);
          groups_[r].items = std::move(run);
          items.push_back({true, r});
        } else {
          items.insert(items.end(), run.begin(), run.end());
        }
        run.clear();
      };
      const std::vector<GroupItem> old = std::move(groups_[g].items);
      for (const GroupItem& item : old) {
        if (!item.is_group && !IsSync(index_->info(item.index))) {
          run.push_back(item);
        } else {
          flush();
          items.push_back(item);
        }
      }
      flush();
      groups_[g].items = std::move(items);
    }
  }
  return root;
}

void GroupTree::Finish(int fanout) {
  fanout = std::max(fanout, 2);
  for (size_t g = 0; g < groups_.size(); ++g) {  // grows as chunks are added
    while (groups_[g].items.size() > static_cast<size_t>(fanout)) {
      std::vector<GroupItem> items = std::move(groups_[g].items);
      groups_[g].items.clear();
      for (size_t start = 0; start < items.size(); start += fanout) {
        const size_t stop = std::min(items.size(), start + fanout);
        if (stop - start == 1) {
          groups_[g].items.push_back(items[start]);
          continue;
        }
        const int c =
            NewGroup(GroupKind::kChunk, static_cast<int>(g), groups_[g].lane);
        for (size_t k = start; k < stop; ++k) {
          if (items[k].is_group) groups_[items[k].index].parent = c;
          groups_[c].items.push_back(items[k]);
        }
        groups_[g].items.push_back({true, c});
      }
    }
  }
  for (int root : lanes_) Totals(root);
}

void GroupTree::Totals(int root) {
  // Iterative post-order (trees can be deep for long chunk chains).
  std::vector<std::pair<int, size_t>> stack = {{root, 0}};
  while (!stack.empty()) {
    auto& [g, next] = stack.back();
    Group& group = groups_[g];
    if (next < group.items.size()) {
      const GroupItem item = group.items[next++];
      if (item.is_group) stack.push_back({item.index, 0});
      continue;
    }
    group.instrs = group.syncs = 0;
    group.per_engine.fill(0);
    group.first = group.last = -1;
    for (const GroupItem& item : group.items) {
      int first, last;
      if (item.is_group) {
        const Group& child = groups_[item.index];
        group.instrs += child.instrs;
        group.syncs += child.syncs;
        for (int e = 0; e < graph::kNumEngines; ++e) {
          group.per_engine[e] += child.per_engine[e];
        }
        first = child.first;
        last = child.last;
      } else {
        const graph::InstrInfo& info = index_->info(item.index);
        ++group.instrs;
        group.syncs += IsSync(info) ? 1 : 0;
        ++group.per_engine[static_cast<int>(info.engine)];
        first = last = item.index;
      }
      if (first < 0) continue;
      if (group.first < 0) group.first = first;
      group.last = last;
    }
    stack.pop_back();
  }
}

int64_t GroupTree::Collapse(int64_t budget) {
  for (Group& group : groups_) group.expanded = false;
  int64_t visible = static_cast<int64_t>(lanes_.size());
  const size_t num_lanes = lanes_.size();
  auto try_expand = [&](int g) {
    Group& group = groups_[g];
    const int64_t grown =
        visible - 1 + static_cast<int64_t>(group.items.size());
    if (grown > budget) return;
    group.expanded = true;
    visible = grown;
  };
  // Pass 0 expands lanes, scopes and chunks level by level; pass 1 the
  // runs under expanded groups. Within a level the lanes take turns, so
  // they are expanded alike.
  for (int pass = 0; pass < 2; ++pass) {
    std::vector<std::vector<int>> level(num_lanes);
    for (size_t l = 0; l < num_lanes; ++l) level[l] = {lanes_[l]};
    while (true) {
      size_t longest = 0;
      for (const auto& lane : level) longest = std::max(longest, lane.size());
      if (longest == 0) break;
      // Position-major order, lanes taking turns; for runs, smallest
      // first: a collapsed run of two instructions saves one node, while
      // a long run is where a summary pays.
      std::vector<std::tuple<size_t, size_t, size_t>> order;  // size, k, l
      for (size_t k = 0; k < longest; ++k) {
        for (size_t l = 0; l < num_lanes; ++l) {
          if (k >= level[l].size()) continue;
          const size_t size = pass == 1 ? groups_[level[l][k]].items.size() : 0;
          order.emplace_back(size, k, l);
        }
      }
      std::stable_sort(order.begin(), order.end());
      for (const auto& [size, k, l] : order) {
        const int g = level[l][k];
        const bool is_run = groups_[g].kind == GroupKind::kRun;
        if (!groups_[g].expanded && is_run == (pass == 1)) try_expand(g);
      }
      std::vector<std::vector<int>> next(num_lanes);
      for (size_t l = 0; l < num_lanes; ++l) {
        for (int g : level[l]) {
          if (!groups_[g].expanded) continue;
          for (const GroupItem& item : groups_[g].items) {
            if (item.is_group) next[l].push_back(item.index);
          }
        }
      }
      level = std::move(next);
    }
  }
  return visible;
}

int64_t GroupTree::ExpandAll() {
  int64_t visible = 0;
  for (Group& group : groups_) {
    group.expanded = true;
    for (const GroupItem& item : group.items) visible += item.is_group ? 0 : 1;
  }
  return visible;
}

}  // namespace nkigraph::viz
