#ifndef NKIGRAPH_DIFF_HEADER_H_
#define NKIGRAPH_DIFF_HEADER_H_

// The graph-level fields: kernel name, schema version, the parameters it
// was traced with (matched by name) and the world.

#include "diff/result.h"
#include "proto/nkigraph.pb.h"

namespace nkigraph::diff {

// Fills result->header and result->header_counts.
void DiffHeader(const proto::Graph& a, const proto::Graph& b,
                DiffResult* result);

}  // namespace nkigraph::diff

#endif  // NKIGRAPH_DIFF_HEADER_H_
