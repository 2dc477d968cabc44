#ifndef NKIGRAPH_INTERP_SEGMENT_FOOTPRINT_H_
#define NKIGRAPH_INTERP_SEGMENT_FOOTPRINT_H_

// What decides whether two cores of one rank may run side by side: the
// HBM each stretch of a stream between synchronising instructions (a
// segment) may read and write. The scheduler runs a rank's cores at once
// only when their current segments cannot conflict — neither may write a
// block the other may touch — so each sees exactly the memory, the shadow
// state and the race-detection state it would see if the lower core had
// run its whole segment first, as a one-thread run does.

#include <cstdint>
#include <utility>
#include <vector>

#include "proto/nkigraph.pb.h"

namespace nkigraph::interp {

// Footprints are kept in blocks of this many HBM bytes: a block two cores
// touch counts as shared even when their bytes in it differ, so state kept
// per block (the shadow's) is never updated by two threads at once.
inline constexpr int64_t kFootprintBlockBytes = 64;

class SegmentFootprints {
 public:
  // Over-approximates, per segment of every stream, the HBM blocks its
  // instructions read and write: an operand's bounding range, its whole
  // tensor for a dynamic offset or a bitcast view, and a dynamic offset's
  // whole index tensor. The graph must have passed CheckGraph.
  explicit SegmentFootprints(const proto::Graph& graph);

  // Whether the segment core `a` starts at position `pc_a` of its stream
  // and the one core `b` starts at `pc_b` may touch a common block, one of
  // them writing it. A position at a synchronising instruction or past the
  // end starts an empty segment.
  bool Conflict(int a, int pc_a, int b, int pc_b) const;

 private:
  // Sorted, disjoint, non-adjacent block ranges [first, last).
  using Blocks = std::vector<std::pair<int64_t, int64_t>>;
  struct Footprint {
    Blocks reads;
    Blocks writes;
  };
  struct Stream {
    std::vector<int> segment_of;  // by position; -1 at sync instructions
    std::vector<Footprint> segments;
  };
  const Footprint* At(int core, int pc) const;

  std::vector<Stream> streams_;  // by core
};

}  // namespace nkigraph::interp

#endif  // NKIGRAPH_INTERP_SEGMENT_FOOTPRINT_H_
