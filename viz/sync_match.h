#ifndef NKIGRAPH_VIZ_SYNC_MATCH_H_
#define NKIGRAPH_VIZ_SYNC_MATCH_H_

// Which synchronising instructions of the cores of one rank meet, by the
// ops' sync rules (ops/sync_rule.h): a core_barrier meets the barrier every
// other core is waiting at, a sendrecv its partner's sendrecv with the same
// pipe_id — found by running the streams the way the interpreter's
// scheduler does, without data.
// Every rank runs the same streams, so one rank's answer is every rank's.
// Collectives meet across ranks at the same instruction; they never block
// here.

#include <vector>

#include "graph/graph_index.h"

namespace nkigraph::viz {

struct SyncGroup {
  ops::SyncKind kind = ops::SyncKind::kNone;
  std::vector<int> members;  // instruction indexes, in group (core) order
};

struct SyncMatch {
  std::vector<SyncGroup> groups;
  std::vector<int> group_of;  // per instruction index: group, or -1
  // Instructions the cores are stuck at when no core can proceed (a
  // deadlock: a barrier some core never reaches, a sendrecv without its
  // partner), in core order.
  std::vector<int> stuck;
};

SyncMatch MatchSync(const graph::GraphIndex& index);

}  // namespace nkigraph::viz

#endif  // NKIGRAPH_VIZ_SYNC_MATCH_H_
