#ifndef NKIGRAPH_UTIL_GRAPH_ARENA_H_
#define NKIGRAPH_UTIL_GRAPH_ARENA_H_

#include <cstddef>

#include "google/protobuf/arena.h"

namespace nkigraph {

// Options for an arena a big graph grows on (a trace's tensors, a parsed
// graph file): blocks that double up to a few MiB, the big ones mapped and
// populated in one call (see graph_arena.cc for why).
google::protobuf::ArenaOptions GraphArenaOptions();

// The blocks GraphArenaOptions allocates, for arenas that bring in a big
// block's pages some other way (the tracer's, on its prefaulter's thread):
// below kMappedArenaBlock bytes from malloc, else mapped, its pages
// populated in the call when `populate`. Throws std::bad_alloc, as
// protobuf's allocator does, when there is no memory. A block is freed by
// FreeGraphArenaBlock with the same size.
inline constexpr size_t kMappedArenaBlock = size_t{256} << 10;
void* AllocateGraphArenaBlock(size_t size, bool populate);
void FreeGraphArenaBlock(void* block, size_t size);

}  // namespace nkigraph

#endif  // NKIGRAPH_UTIL_GRAPH_ARENA_H_
