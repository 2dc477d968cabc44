#ifndef NKIGRAPH_UTIL_GRAPH_ARENA_H_
#define NKIGRAPH_UTIL_GRAPH_ARENA_H_

#include "google/protobuf/arena.h"

namespace nkigraph {

// Options for an arena a big graph grows on (a trace's tensors, a parsed
// graph file): blocks that double up to a few MiB, the big ones mapped and
// populated in one call (see graph_arena.cc for why).
google::protobuf::ArenaOptions GraphArenaOptions();

}  // namespace nkigraph

#endif  // NKIGRAPH_UTIL_GRAPH_ARENA_H_
