#ifndef NKIGRAPH_VIZ_PAGING_H_
#define NKIGRAPH_VIZ_PAGING_H_

// Pictures too wide for a screen, cut into pages (`nkigraph dot --page K`).
// Pages are runs of whole columns (layout_guard.h's NodeColumns), as many
// as fit kPageWidthPoints by an estimate of each column's width from its
// labels: a node's longest label line, the label of an edge into it (dot
// gives edge labels a rank of their own) and the gaps between ranks. An
// edge that leaves the page goes to an "on page K+1" stub on its right,
// one that enters it comes from a "from page K-1" stub on its left. The
// legend and lane headers are on every page.

#include <cstdint>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "viz/view_model.h"

namespace nkigraph::viz {

// A page's width, in points: about 3,070 pixels at the 96 dpi of dot's
// PNGs, with room below 4,000 for the estimate's error (up to about a
// third on a production-size MoE block's pages).
inline constexpr double kPageWidthPoints = 2300;

// The estimated width in points of a left-to-right dot layout of
// `graph`'s columns 1 to LayoutColumns (index 0 unused), the legend and
// lane headers not counted.
std::vector<double> EstimatedColumnWidths(const VizGraph& graph);

// The columns [first, last] of each page, in order: at least one page,
// each at least one column.
std::vector<std::pair<int64_t, int64_t>> Pages(const VizGraph& graph);
inline int64_t PageCount(const VizGraph& graph) {
  return static_cast<int64_t>(Pages(graph).size());
}

// Keeps page `page` (1 to PageCount) of `graph` and says so in its title
// ("page K of N: --page K (1 to N) for the others"); an error naming the
// page count for any other page.
absl::Status KeepPage(VizGraph& graph, int64_t page);

}  // namespace nkigraph::viz

#endif  // NKIGRAPH_VIZ_PAGING_H_
