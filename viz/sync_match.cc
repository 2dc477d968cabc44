#include "viz/sync_match.h"

namespace nkigraph::viz {

int64_t IntAttr(const proto::Instruction& instr, absl::string_view name,
                int64_t fallback) {
  for (const proto::Attr& attr : instr.attrs()) {
    if (attr.name() == name && attr.value_case() == proto::Attr::kI) {
      return attr.i();
    }
  }
  return fallback;
}

SyncMatch MatchSync(const graph::GraphIndex& index) {
  SyncMatch match;
  match.group_of.assign(index.size(), -1);
  const int cores = index.num_cores();
  std::vector<size_t> pos(cores, 0);

  auto current = [&](int core) -> int {
    const std::vector<int>& stream = index.stream(core);
    return pos[core] < stream.size() ? stream[pos[core]] : -1;
  };
  // Blocking sync kind of the instruction core `c` is at, or kNone.
  auto waiting = [&](int core) {
    const int i = current(core);
    if (i < 0) return ops::SyncKind::kNone;
    const ops::SyncKind kind = index.info(i).def->sync;
    return kind == ops::SyncKind::kCollective ? ops::SyncKind::kNone : kind;
  };
  auto add_group = [&](ops::SyncKind kind, std::vector<int> members) {
    const int g = static_cast<int>(match.groups.size());
    for (int i : members) match.group_of[i] = g;
    match.groups.push_back({kind, std::move(members)});
  };

  while (true) {
    bool progressed = false;
    // Run every core up to its next barrier or sendrecv.
    for (int c = 0; c < cores; ++c) {
      while (current(c) >= 0 && waiting(c) == ops::SyncKind::kNone) {
        ++pos[c];
        progressed = true;
      }
    }
    // All cores at a barrier: they meet.
    bool all_at_barrier = true;
    bool any_left = false;
    for (int c = 0; c < cores; ++c) {
      if (current(c) >= 0) any_left = true;
      all_at_barrier &= waiting(c) == ops::SyncKind::kCoreBarrier;
    }
    if (!any_left) break;
    if (all_at_barrier) {
      std::vector<int> members;
      for (int c = 0; c < cores; ++c) members.push_back(current(c));
      add_group(ops::SyncKind::kCoreBarrier, std::move(members));
      for (int c = 0; c < cores; ++c) ++pos[c];
      continue;
    }
    // Sendrecv pairs: each names its peer in send_to and recv_from.
    for (int c = 0; c < cores; ++c) {
      if (waiting(c) != ops::SyncKind::kSendRecv) continue;
      const proto::Instruction& mine = index.instr(current(c));
      const int64_t peer = IntAttr(mine, "send_to", -1);
      if (peer != IntAttr(mine, "recv_from", -1) || peer < 0 || peer >= cores) {
        continue;
      }
      if (peer == c) {
        add_group(ops::SyncKind::kSendRecv, {current(c)});
        ++pos[c];
        progressed = true;
        continue;
      }
      if (peer < c ||
          waiting(static_cast<int>(peer)) != ops::SyncKind::kSendRecv) {
        continue;  // the lower core of a pair matches it
      }
      const int p = static_cast<int>(peer);
      const proto::Instruction& theirs = index.instr(current(p));
      if (IntAttr(theirs, "send_to", -1) != c ||
          IntAttr(theirs, "recv_from", -1) != c ||
          IntAttr(theirs, "pipe_id", 0) != IntAttr(mine, "pipe_id", 0)) {
        continue;
      }
      add_group(ops::SyncKind::kSendRecv, {current(c), current(p)});
      ++pos[c];
      ++pos[p];
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
