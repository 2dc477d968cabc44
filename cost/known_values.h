#ifndef NKIGRAPH_COST_KNOWN_VALUES_H_
#define NKIGRAPH_COST_KNOWN_VALUES_H_

// The values a graph computes without its input data, found before
// scheduling so that a dynamic offset computed from them touches exactly
// the rows it will touch, not its whole tensor.
//
// Each core's stream of rank 0 (the rank the cost model simulates) is
// walked in program order. An instruction that runs alone (no
// synchronisation) and reads only known elements is executed with its
// op's own semantics (ops/defs/<opcode>.cc), and what it writes becomes
// known: iota, memset, the ring's rank id
// (collective_permute_implicit_current_processing_rank_id), arithmetic on
// those, copies of them. Everything else writes unknown elements: reads
// of inputs, of shared HBM (other cores write it), sync and collective
// results, engine accumulation registers. Only small operands are
// executed (see known_values.cc), so the pass stays cheap on big graphs;
// a larger one writes unknown elements, which is conservative.
//
// A dynamic offset whose index entries are all known when its instruction
// runs is resolved to the flat elements it reaches (graph::ResolvedRange,
// as a run would record them); the others are data-dependent and keep
// touching their whole tensor.

#include <cstdint>

#include "graph/graph_index.h"
#include "graph/regions.h"

namespace nkigraph::cost {

struct KnownOffsets {
  graph::ResolvedOffsets resolved;
  int64_t dynamic_operands = 0;  // operands with a dynamic offset
  int64_t data_dependent = 0;    // of those, not resolved
};

KnownOffsets ResolveKnownOffsets(const graph::GraphIndex& index);

}  // namespace nkigraph::cost

#endif  // NKIGRAPH_COST_KNOWN_VALUES_H_
