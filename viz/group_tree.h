#ifndef NKIGRAPH_VIZ_GROUP_TREE_H_
#define NKIGRAPH_VIZ_GROUP_TREE_H_

// The nesting the pictures draw as boxes, and what collapses when a graph
// is too big to lay out whole. Each lane (a core's stream) is a tree:
// scope instances (maximal runs of instructions under the same scope path
// — one box per unrolled layer or block), optional runs of
// non-synchronising instructions (the barrier view), and chunks that cap
// the fan-out. Collapse picks which groups stay expanded so the number of
// visible nodes fits a budget; a collapsed group is drawn as one summary
// node.

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "graph/graph_index.h"

namespace nkigraph::viz {

enum class GroupKind {
  kLane,   // a whole stream
  kScope,  // one scope instance
  kRun,    // consecutive instructions between synchronising ones
  kChunk,  // consecutive items of one group, to bound its fan-out
};

struct GroupItem {
  bool is_group = false;
  int index = 0;  // group id, or instruction index
};

struct Group {
  GroupKind kind = GroupKind::kLane;
  int parent = -1;
  int lane = 0;
  std::string name;  // scope component; lane name; empty for runs/chunks
  std::string path;  // full scope path (scopes)
  std::vector<GroupItem> items;  // program order
  // Over the whole subtree:
  int64_t instrs = 0;
  int64_t syncs = 0;  // synchronising instructions
  std::array<int64_t, graph::kNumEngines> per_engine{};
  int first = -1;  // first and last instruction index
  int last = -1;
  bool expanded = false;
};

class GroupTree {
 public:
  explicit GroupTree(const graph::GraphIndex& index) : index_(&index) {}

  // Adds a lane over `seq` (instruction indexes in program order) and
  // returns its root group. With `wrap_runs`, consecutive
  // non-synchronising instructions are wrapped in kRun groups.
  int AddLane(std::string name, const std::vector<int>& seq, bool wrap_runs);

  // Wraps the items of every group with more than `fanout` (>= 2) items
  // into chunks, repeatedly, then computes the subtree totals.
  void Finish(int fanout);

  // Expands groups breadth-first (runs last) while the number of visible
  // nodes — instructions and collapsed groups under expanded groups —
  // stays within `budget`. Returns that number.
  int64_t Collapse(int64_t budget);
  // Expands everything (no budget).
  int64_t ExpandAll();

  const std::vector<Group>& groups() const { return groups_; }
  const Group& group(int g) const { return groups_[g]; }
  const std::vector<int>& lanes() const { return lanes_; }

 private:
  int NewGroup(GroupKind kind, int parent, int lane);
  void Totals(int g);

  const graph::GraphIndex* index_;
  std::vector<Group> groups_;
  std::vector<int> lanes_;
};

bool IsSync(const graph::InstrInfo& info);

}  // namespace nkigraph::viz

#endif  // NKIGRAPH_VIZ_GROUP_TREE_H_
