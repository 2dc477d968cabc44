#ifndef NKIGRAPH_DIFF_TENSORS_H_
#define NKIGRAPH_DIFF_TENSORS_H_

// Matching of two graphs' tensor tables.
//
// Tensors are matched by name within their core (shared-HBM tensors
// across cores). Names repeat -- every iteration of a tiled loop
// allocates its own "rhs_tile" -- so the occurrences of one name are
// aligned as a sequence on their content (space, dtype, shape, address,
// partition offset, role): one extra tile is one added tensor, not a
// cascade. A removed and an added tensor left over with identical content
// are reported as a rename. Live ranges (stream positions) are not
// compared: they move whenever an instruction is inserted, and the
// instruction diff already shows that.

#include <cstdint>
#include <vector>

#include "diff/result.h"
#include "proto/nkigraph.pb.h"

namespace nkigraph::diff {

// Appends the tensor differences to result->tensors (at most
// `max_changes` of them when it is > 0; the rest are counted in
// result->tensors_omitted) and counts them in result->tensor_counts.
void DiffTensors(const proto::Graph& a, const proto::Graph& b,
                 int64_t max_changes, DiffResult* result);

}  // namespace nkigraph::diff

#endif  // NKIGRAPH_DIFF_TENSORS_H_
