#ifndef NKIGRAPH_VIEW_PAGE_H_
#define NKIGRAPH_VIEW_PAGE_H_

// One self-contained HTML page of a graph (`nkigraph view`): the
// dataflow and barrier pictures as `nkigraph dot` lays them out, the cost
// model's timeline, an instruction panel with operands, attributes,
// source line, estimated timing and (from a `run --dump` folder) values,
// and search; selecting an instruction anywhere selects it everywhere.
// Every script, style and datum is inside the file: it opens offline.
//
//   absl::StatusOr<std::string> html = view::BuildPage(graph, options);

#include <optional>
#include <string>

#include "absl/status/statusor.h"
#include "proto/nkigraph.pb.h"
#include "viz/selection.h"

namespace nkigraph::view {

enum class Profile { kAuto, kOn, kOff };

struct PageOptions {
  // Which instructions the pictures show (`dot`'s --scope, --core,
  // --rank); the panel and search cover the whole graph.
  viz::Filters filters;
  // A `run --dump` folder of this graph, or empty.
  std::string dump_dir;
  // kAuto: the timeline when the graph (or `target`) names a target.
  // kOn without a target is an error.
  Profile profile = Profile::kAuto;
  std::optional<proto::Target> target;  // instead of the graph's
  // Nodes per picture before scopes collapse (viz::ViewOptions).
  int64_t max_nodes = 1000;
};

// The page. Errors: a graph that does not validate, filters that select
// nothing, a dump folder that is not this graph's, kOn without a target.
// A picture Graphviz cannot lay out, or a schedule that deadlocks, is
// said so on the page instead.
absl::StatusOr<std::string> BuildPage(const proto::Graph& graph,
                                      const PageOptions& options);

}  // namespace nkigraph::view

#endif  // NKIGRAPH_VIEW_PAGE_H_
