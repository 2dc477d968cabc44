#ifndef NKIGRAPH_INTERP_SEGMENT_FOOTPRINT_H_
#define NKIGRAPH_INTERP_SEGMENT_FOOTPRINT_H_

// What decides how far a core may run beside a lower core of its rank: the
// HBM each instruction may read and write, and per stretch of a stream
// between synchronising instructions (a segment) which of its instructions
// last touches each block. A core executes an instruction only once every
// lower core of its rank has passed the last instruction of its current
// segment that may touch a common block with a write on either side; so
// each core sees exactly the memory, the shadow state and the
// race-detection state it would see had the lower core run its whole
// segment first, as a one-thread run does.

#include <cstdint>
#include <utility>
#include <vector>

#include "interp/interval_map.h"
#include "proto/nkigraph.pb.h"

namespace nkigraph::interp {

// Footprints are kept in blocks of this many HBM bytes: a block two cores
// touch counts as shared even when their bytes in it differ, so state kept
// per block (the shadow's) is never updated by two threads at once.
inline constexpr int64_t kFootprintBlockBytes = 64;

class SegmentFootprints {
 public:
  // Over-approximates what every instruction of every stream reads and
  // writes in HBM: an operand's bounding range, its whole tensor for a
  // dynamic offset or a bitcast view, and a dynamic offset's whole index
  // tensor. The graph must have passed CheckGraph.
  explicit SegmentFootprints(const proto::Graph& graph);

  // The last position of the segment core `a` starts at position `pc_a`
  // whose instruction may touch a block the instruction at position `pc_b`
  // of core `b` touches, one of them writing it; -1 when there is none (or
  // `pc_a` starts no segment: a synchronising instruction or the end).
  int LastConflict(int a, int pc_a, int b, int pc_b) const;

 private:
  // Block ranges [first, last).
  using Blocks = std::vector<std::pair<int64_t, int64_t>>;
  struct Touches {
    Blocks reads;
    Blocks writes;
  };
  // The last positions in a segment that touch a block: any access, and
  // writes.
  struct LastUse {
    int access = -1;
    int write = -1;
    bool operator==(const LastUse&) const = default;
  };
  struct Stream {
    std::vector<Touches> touches;  // by position
    std::vector<int> segment_of;   // by position; -1 at sync instructions
    std::vector<IntervalMap<LastUse>> segments;
  };

  std::vector<Stream> streams_;  // by core
};

}  // namespace nkigraph::interp

#endif  // NKIGRAPH_INTERP_SEGMENT_FOOTPRINT_H_
