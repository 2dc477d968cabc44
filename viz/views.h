#ifndef NKIGRAPH_VIZ_VIEWS_H_
#define NKIGRAPH_VIZ_VIEWS_H_

// The two pictures of a graph.
//
// Dataflow: one node per instruction, coloured by engine, with edges for
// the data dependencies between them (read-after-write solid,
// write-after-read dashed, write-after-write dotted, labelled with the
// tensor), boxes per core and per scope instance; sendrecv pairs and
// core barriers link the cores.
//
// Barrier: one lane per program (core; rank and core when the graph has
// collectives and several ranks), instructions in program order, and the
// synchronisation between lanes drawn explicitly: barriers and
// collectives as thick lines across the lanes they join, sendrecv pairs
// as double arrows, ring permutes as arrows from each rank to its
// successor. Instructions stuck in a deadlock are outlined in red.
//
// Above the node budget, groups collapse into summary nodes (see
// viz/group_tree.h).

#include <cstdint>

#include "absl/status/statusor.h"
#include "graph/graph_index.h"
#include "viz/selection.h"
#include "viz/view_model.h"

namespace nkigraph::viz {

struct ViewOptions {
  // Visible nodes before groups collapse; 0: never collapse.
  int64_t max_nodes = 1000;
  // Barrier view: visible nodes per lane (one row of the picture) before
  // runs between synchronisations collapse; 0: only max_nodes applies. A
  // row much longer than this is too wide to read.
  int64_t max_lane_nodes = 60;
  bool legend = true;
  bool edge_labels = true;
};

absl::StatusOr<VizGraph> BuildDataflowView(const graph::GraphIndex& index,
                                           const Filters& filters,
                                           const ViewOptions& options);
absl::StatusOr<VizGraph> BuildBarrierView(const graph::GraphIndex& index,
                                          const Filters& filters,
                                          const ViewOptions& options);

}  // namespace nkigraph::viz

#endif  // NKIGRAPH_VIZ_VIEWS_H_
