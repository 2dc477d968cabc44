#include "viz/viz.h"

#include <memory>
#include <utility>

#include "absl/strings/str_cat.h"
#include "graph/graph_index.h"
#include "util/status_macros.h"
#include "viz/layout_guard.h"
#include "viz/paging.h"

namespace nkigraph::viz {

absl::StatusOr<View> ParseView(absl::string_view name) {
  if (name == "dataflow") return View::kDataflow;
  if (name == "barrier") return View::kBarrier;
  return absl::InvalidArgumentError(
      absl::StrCat("unknown view '", name, "' (views: dataflow, barrier)"));
}

absl::StatusOr<VizGraph> BuildView(const proto::Graph& graph,
                                   const DotOptions& options) {
  NKI_ASSIGN_OR_RETURN(std::unique_ptr<graph::GraphIndex> index,
                       graph::GraphIndex::Build(graph));
  return BuildView(*index, options);
}

absl::StatusOr<VizGraph> BuildView(const graph::GraphIndex& index,
                                   const DotOptions& options) {
  if (options.view_options.max_lane_nodes < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("--max-lane-nodes ", options.view_options.max_lane_nodes,
                     " must be 0 (no limit) or more"));
  }
  if (options.view_options.max_nodes < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("--max-nodes ", options.view_options.max_nodes,
                     " must be 0 (no limit) or more"));
  }
  switch (options.view) {
    case View::kDataflow:
      return BuildDataflowView(index, options.filters, options.view_options);
    case View::kBarrier:
      return BuildBarrierView(index, options.filters, options.view_options);
  }
  return absl::InvalidArgumentError("unknown view");
}

absl::StatusOr<std::string> RenderGraph(const proto::Graph& graph,
                                        const DotOptions& options,
                                        Format format) {
  NKI_ASSIGN_OR_RETURN(VizGraph picture, BuildView(graph, options));
  return RenderPicture(PreparePicture(std::move(picture)), options.page,
                       format);
}

VizGraph PreparePicture(VizGraph picture) {
  FoldParallelLooseEdges(picture);
  return picture;
}

absl::StatusOr<std::string> RenderPicture(const VizGraph& prepared,
                                          int64_t page, Format format) {
  VizGraph picture = prepared;
  if (page > 0) {
    NKI_RETURN_IF_ERROR(KeepPage(picture, page));
  } else if (const int64_t pages = PageCount(picture); pages > 1) {
    AppendToTitle(
        picture,
        absl::StrCat("about ", LayoutColumns(picture),
                     " columns wide, more than a screen: page through it with "
                     "--page K (1 to ",
                     pages,
                     "), --around ID --radius N, --scope PATH --instance N or "
                     "--core N, or collapse it with a smaller --max-nodes"));
  }

  absl::StatusOr<std::string> out = Render(picture, format);
  if (out.ok() || format == Format::kDot) return out;
  // dot still fails on some pictures (its known crashes routing labelled
  // edges, ranking clusters). Each fallback keeps the ones before it; the
  // title says which one drew the picture.
  VizGraph fallback = picture;
  for (Fallback step :
       {Fallback::kExternalLabels, Fallback::kLocalEdgesConstrain,
        Fallback::kNewRank, Fallback::kNoLooseEdges}) {
    ApplyFallback(step, fallback);
    VizGraph titled = fallback;
    AppendToTitle(titled, absl::StrCat("(Graphviz failed on this picture; "
                                       "fallback layout: ",
                                       FallbackName(step), ")"));
    absl::StatusOr<std::string> retry = Render(titled, format);
    if (retry.ok()) return retry;
  }
  return out.status();
}

}  // namespace nkigraph::viz
