#include "viz/sync_match.h"

#include "ops/sync_rule.h"

namespace nkigraph::viz {

SyncMatch MatchSync(const graph::GraphIndex& index) {
  SyncMatch match;
  match.group_of.assign(index.size(), -1);
  const proto::World& world = index.graph().world();
  const int cores = index.num_cores();
  std::vector<size_t> pos(cores, 0);

  auto current = [&](int core) -> int {
    const std::vector<int>& stream = index.stream(core);
    return pos[core] < stream.size() ? stream[pos[core]] : -1;
  };
  // Whether core `c` is at an instruction that waits for other cores.
  // Collectives meet across ranks at the same instruction, which every
  // rank reaches: they never block here.
  auto blocked = [&](int core) {
    const int i = current(core);
    if (i < 0) return false;
    const ops::SyncKind kind = index.info(i).def->sync;
    return kind != ops::SyncKind::kNone && kind != ops::SyncKind::kCollective;
  };

  // One rank's cores: what a member waits at, if it is blocked.
  auto waiting_at = [&](ops::ProgramId p) -> const proto::Instruction* {
    if (p.rank != 0 || p.core < 0 || p.core >= cores || !blocked(p.core)) {
      return nullptr;
    }
    return &index.instr(current(p.core));
  };

  ops::SyncGroup group;
  std::vector<int> members;
  while (true) {
    bool progressed = false;
    // Run every core up to its next barrier or sendrecv.
    bool any_left = false;
    for (int c = 0; c < cores; ++c) {
      while (current(c) >= 0 && !blocked(c)) {
        ++pos[c];
        progressed = true;
      }
      any_left |= current(c) >= 0;
    }
    if (!any_left) break;
    // Fire every group whose members all wait at matching instructions, as
    // the interpreter's scheduler does (ops/sync_rule.h).
    for (int c = 0; c < cores; ++c) {
      if (!blocked(c)) continue;
      if (!ops::SyncGroupReady(world, {0, c}, index.instr(current(c)),
                               waiting_at, &group)) {
        continue;
      }
      members.clear();
      for (const ops::ProgramId& member : group.members) {
        members.push_back(current(member.core));
      }
      const int g = static_cast<int>(match.groups.size());
      for (int i : members) match.group_of[i] = g;
      match.groups.push_back({index.info(members[0]).def->sync, members});
      for (const ops::ProgramId& member : group.members) ++pos[member.core];
      progressed = true;
    }
    if (!progressed) {
      for (int c = 0; c < cores; ++c) {
        if (current(c) >= 0) match.stuck.push_back(current(c));
      }
      break;
    }
  }
  return match;
}

}  // namespace nkigraph::viz
