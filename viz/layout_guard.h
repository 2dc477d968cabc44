#ifndef NKIGRAPH_VIZ_LAYOUT_GUARD_H_
#define NKIGRAPH_VIZ_LAYOUT_GUARD_H_

// What keeps dot's layout from failing on the pictures the views build,
// and what is done when it fails anyway. Pure functions on the VizGraph,
// before Graphviz sees it.

#include <cstdint>
#include <string>
#include <vector>

#include "absl/strings/string_view.h"
#include "viz/view_model.h"

namespace nkigraph::viz {

// dot 2.4x asserts in merge_chain (`ED_to_virt(e) == NULL`) on parallel
// edges (the same tail and head) when one of them does not constrain the
// layout (constraint=false) and the nodes sit in clusters. The views draw
// such pairs where two kinds of ordering meet (a write-after-read beside
// the invisible edge that keeps a node in program order, write-after-read
// and write-after-write on one buffer, a sendrecv beside a dependency).
// So no pair is left with a loose edge: where one of the edges
// constrains, the loose ones constrain too (the pair is ordered anyway;
// nothing moves) and invisible ones are dropped; where all are loose, the
// first stays and its label lists the others'. Returns how many edges
// were dropped.
int FoldParallelLooseEdges(VizGraph& graph);

// dot 2.4x also asserts there on some loose edges between two nodes of
// one cluster (bwmm_shard_on_H at T 1024, H 1024, E 8, I 512, B 128,
// N 20: a write-after-write between neighbours in a block's box). Making
// every such edge constrain avoids it, but changes the layout of every big
// picture (ordering lines kept loose so as not to pull it now do), so it
// is a fallback, not a rule. Returns how many edges now constrain.
int ConstrainLooseEdgesInsideClusters(VizGraph& graph);

// The fallback layouts tried, in order, when dot still fails; each keeps
// the ones before it.
enum class Fallback {
  kExternalLabels,       // edge labels placed after layout
  kLocalEdgesConstrain,  // ConstrainLooseEdgesInsideClusters
  kNewRank,              // newrank=true: ranks without cluster-local ranking
  kNoLooseEdges,         // newrank, and edges that do not constrain left out
};
// Changes `graph` for `fallback` (the caller says so in the title).
void ApplyFallback(Fallback fallback, VizGraph& graph);
absl::string_view FallbackName(Fallback fallback);

// Each node's column (dot rank, left to right, from 1): the longest path
// to it over the edges that constrain the layout.
std::vector<int64_t> NodeColumns(const VizGraph& graph);
// The number of columns the picture needs: the largest of those, at least 1.
int64_t LayoutColumns(const VizGraph& graph);

// Appends `note` as a line of the picture's title.
void AppendToTitle(VizGraph& graph, absl::string_view note);

}  // namespace nkigraph::viz

#endif  // NKIGRAPH_VIZ_LAYOUT_GUARD_H_
