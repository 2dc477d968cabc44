#ifndef NKIGRAPH_GRAPH_DESCRIBE_H_
#define NKIGRAPH_GRAPH_DESCRIBE_H_

#include <string>

#include "proto/nkigraph.pb.h"
#include "util/diagnostic.h"

namespace nkigraph::graph {

// A diagnostic about `instr`: its id, op name, kernel file:line and scope
// path, as far as the graph's tables hold them (an untrusted graph's
// indexes may be out of range), with `kind` and `message`.
Diagnostic InstructionDiagnostic(DiagnosticKind kind, const proto::Graph& graph,
                                 const proto::Instruction& instr,
                                 std::string message);

}  // namespace nkigraph::graph

#endif  // NKIGRAPH_GRAPH_DESCRIBE_H_
