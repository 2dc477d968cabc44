#ifndef NKIGRAPH_DIFF_STREAMS_H_
#define NKIGRAPH_DIFF_STREAMS_H_

// The instruction-stream part of a diff: per core, the two streams'
// instruction keys are aligned (diff/align.h); inside each hunk of
// removed and added instructions, those of the same opcode are paired up
// (a second alignment, on opcodes) and reported as changed, field by
// field; the rest are removed or added.

#include <cstdint>

#include "diff/model.h"
#include "diff/result.h"

namespace nkigraph::diff {

struct StreamDiffOptions {
  bool strict = false;      // compare source locations and scopes too
  int64_t max_changes = 0;  // per stream; <= 0: all
};

// Fills result->streams and result->instruction_counts.
void DiffStreams(const GraphModel& a, const GraphModel& b,
                 const StreamDiffOptions& options, DiffResult* result);

}  // namespace nkigraph::diff

#endif  // NKIGRAPH_DIFF_STREAMS_H_
