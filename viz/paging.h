#ifndef NKIGRAPH_VIZ_PAGING_H_
#define NKIGRAPH_VIZ_PAGING_H_

// Pictures too wide for a screen, cut into pages (`nkigraph dot --page K`):
// page K holds the nodes of columns (K-1)*kScreenColumns+1 to
// K*kScreenColumns (layout_guard.h's NodeColumns), so each page is at most
// a screen's width. An edge that leaves the page goes to a "page K+1"
// stub on its right, one that enters it comes from a "page K-1" stub on
// its left. The legend and lane headers are on every page.

#include <cstdint>

#include "absl/status/status.h"
#include "viz/view_model.h"

namespace nkigraph::viz {

// How many pages `graph` takes: its columns over kScreenColumns, rounded
// up (1 for a picture that fits).
int64_t PageCount(const VizGraph& graph);

// Keeps page `page` (1 to PageCount) of `graph` and says so in its title
// ("page K of N: --page K (1 to N) for the others"); an error naming the
// page count for any other page.
absl::Status KeepPage(VizGraph& graph, int64_t page);

}  // namespace nkigraph::viz

#endif  // NKIGRAPH_VIZ_PAGING_H_
