#ifndef NKIGRAPH_GRAPH_VALIDATE_H_
#define NKIGRAPH_GRAPH_VALIDATE_H_

#include <vector>

#include "absl/status/status.h"
#include "proto/nkigraph.pb.h"
#include "util/diagnostic.h"

namespace nkigraph::graph {

// Checks an untrusted graph against the schema and its device profile
// before anything runs or is drawn (the interpreter, `nkigraph check` and
// GraphIndex, hence the visualizer, all validate with it): world, every
// tensor (ids, dtype, space, shape, address inside capacity, ownership),
// every instruction (ids, source and scope indexes, and the op's own checks
// on its operands), on-chip lifetimes (no use outside a tensor's lifetime,
// no live tensor overlapped by another allocation). Returns every problem
// found, each a validation diagnostic naming the tensor or instruction;
// empty when the graph is valid.
std::vector<Diagnostic> ValidateGraph(const proto::Graph& graph);

// OK, or InvalidArgument listing the problems (at most `max_listed`); its
// diagnostic holds them as notes.
absl::Status CheckGraph(const proto::Graph& graph, int max_listed = 20);

}  // namespace nkigraph::graph

#endif  // NKIGRAPH_GRAPH_VALIDATE_H_
