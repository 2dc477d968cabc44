#ifndef NKIGRAPH_BUILDER_TRACE_ARENA_H_
#define NKIGRAPH_BUILDER_TRACE_ARENA_H_

#include "google/protobuf/arena.h"

namespace nkigraph::builder {

// Options for the arena a traced graph grows on: blocks that double up to
// a few MiB, the big ones mapped and populated in one call (see
// trace_arena.cc for why).
google::protobuf::ArenaOptions TraceArenaOptions();

}  // namespace nkigraph::builder

#endif  // NKIGRAPH_BUILDER_TRACE_ARENA_H_
