#ifndef NKIGRAPH_VIZ_VIZ_H_
#define NKIGRAPH_VIZ_VIZ_H_

// Draws instruction graphs with Graphviz: `nkigraph dot`'s library.
//
//   absl::StatusOr<std::string> svg = viz::RenderGraph(graph, options,
//                                                      viz::Format::kSvg);
//
// views.h describes the two views, group_tree.h how big graphs collapse,
// selection.h the filters.

#include <cstdint>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "graph/graph_index.h"
#include "proto/nkigraph.pb.h"
#include "viz/render.h"
#include "viz/selection.h"
#include "viz/view_model.h"
#include "viz/views.h"

namespace nkigraph::viz {

enum class View { kDataflow, kBarrier };
absl::StatusOr<View> ParseView(absl::string_view name);  // dataflow|barrier

struct DotOptions {
  View view = View::kDataflow;
  Filters filters;
  ViewOptions view_options;
  // 0: the whole picture; K: its K-th page of a screen's width
  // (viz/paging.h), K from 1.
  int64_t page = 0;
};

// The picture of `graph`, before Graphviz. Malformed graphs and filters
// that select nothing are errors.
absl::StatusOr<VizGraph> BuildView(const proto::Graph& graph,
                                   const DotOptions& options);
// The same for a graph already indexed (and so validated): callers drawing
// several pictures of one graph index it once.
absl::StatusOr<VizGraph> BuildView(const graph::GraphIndex& index,
                                   const DotOptions& options);

// BuildView, then DOT text or a laid-out SVG / PNG.
absl::StatusOr<std::string> RenderGraph(const proto::Graph& graph,
                                        const DotOptions& options,
                                        Format format);

// A picture BuildView made, cut for paging: its parallel loose edges
// folded (layout_guard.h), ready for PageCount / KeepPage / RenderPicture.
// Callers drawing several pages of one picture build it once.
VizGraph PreparePicture(VizGraph picture);

// RenderGraph's second half, on a PreparePicture result: page `page` (0:
// the whole picture, whose title then says how many pages it has), laid
// out with the fallbacks RenderGraph tries when dot fails.
absl::StatusOr<std::string> RenderPicture(const VizGraph& picture, int64_t page,
                                          Format format);

}  // namespace nkigraph::viz

#endif  // NKIGRAPH_VIZ_VIZ_H_
