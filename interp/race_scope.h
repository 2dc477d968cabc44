#ifndef NKIGRAPH_INTERP_RACE_SCOPE_H_
#define NKIGRAPH_INTERP_RACE_SCOPE_H_

#include <cstdint>
#include <vector>

#include "proto/nkigraph.pb.h"

namespace nkigraph::interp {

// Why (or whether) accesses to a tensor need race detection.
enum class RaceScope : uint8_t {
  kNone,      // not shared HBM: only one core can reach it
  kOneCore,   // shared HBM named by one core's stream only
  kReadOnly,  // shared HBM that no instruction writes (inputs, mostly)
  kTracked,   // shared HBM that two cores name and one of them writes
};

// A static pass over the streams, indexed by tensor id - 1. A tensor
// counts as named by a core when an operand or a dynamic offset of that
// core's stream refers to it (offsets computed at run time still name a
// static tensor id), and as written when an operand whose role writes
// refers to it. Shared tensors whose bytes overlap get the verdict of
// their union, because races are defined on bytes, not on tensor ids.
// kOneCore and kReadOnly tensors can never race; skipping them is exact.
// The graph must have passed CheckGraph.
std::vector<RaceScope> ComputeRaceScopes(const proto::Graph& graph);

}  // namespace nkigraph::interp

#endif  // NKIGRAPH_INTERP_RACE_SCOPE_H_
