#include "view/page.h"

#include <memory>
#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "cost/cost_table.h"
#include "cost/schedule.h"
#include "graph/graph_index.h"
#include "nlohmann/json.hpp"
#include "util/status_macros.h"
#include "view/assets.h"
#include "view/dump_values.h"
#include "view/graph_data.h"
#include "view/pictures.h"
#include "view/schedule_data.h"
#include "viz/viz.h"

namespace nkigraph::view {
namespace {

using nlohmann::json;

// The scripts, in the order they load: each defines one part of the
// page's global `NkiView` object; main.js starts it.
constexpr const char* kScripts[] = {"model.js", "graph_view.js", "timeline.js",
                                    "panel.js", "search.js",     "main.js"};

// `text` safe inside an HTML element's text (the title).
std::string EscapeHtml(absl::string_view text) {
  return absl::StrReplaceAll(
      text, {{"&", "&amp;"}, {"<", "&lt;"}, {">", "&gt;"}, {"\"", "&quot;"}});
}

// JSON text safe inside <script>: no "</" (which could close the
// element) and no "<!--"; "\/" and "\u003c" mean the same in JSON.
std::string ScriptSafe(const std::string& text) {
  return absl::StrReplaceAll(text, {{"</", "<\\/"}, {"<!--", "\\u003c!--"}});
}

absl::StatusOr<json> Timeline(const graph::GraphIndex& index,
                              const proto::Graph& graph,
                              const PageOptions& options) {
  const proto::Target target = options.target.value_or(graph.world().target());
  if (options.profile == Profile::kOff) {
    return json{{"absent", "left out (--no-profile)"}};
  }
  if (target == proto::TARGET_UNSPECIFIED) {
    if (options.profile == Profile::kOn) {
      return absl::InvalidArgumentError(
          "--profile needs a target: the graph names none; give --target "
          "trn1, trn2 or trn3");
    }
    return json{{"absent",
                 "no target: the graph names no device, so the cost model "
                 "has no table (`nkigraph view --target trn2` to estimate)"}};
  }
  const cost::CostTable& table = cost::CostTableFor(target);
  absl::StatusOr<cost::Schedule> schedule = cost::ScheduleGraph(index, table);
  if (!schedule.ok()) {
    return json{{"absent", absl::StrCat("the cost model could not schedule "
                                        "this graph: ",
                                        schedule.status().message())}};
  }
  return ScheduleData(*schedule, std::string(table.name));
}

}  // namespace

absl::StatusOr<std::string> BuildPage(const proto::Graph& graph,
                                      const PageOptions& options) {
  NKI_ASSIGN_OR_RETURN(std::unique_ptr<graph::GraphIndex> index,
                       graph::GraphIndex::Build(graph));
  json data = GraphData(*index);
  NKI_ASSIGN_OR_RETURN(data["schedule"], Timeline(*index, graph, options));
  if (options.dump_dir.empty()) {
    data["values"] = {{"absent",
                       "no values: no --dump folder was given "
                       "(`nkigraph run GRAPH --dump DIR` writes "
                       "one)"}};
  } else {
    NKI_ASSIGN_OR_RETURN(data["values"], DumpValues(*index, options.dump_dir));
  }
  viz::DotOptions dot;
  dot.filters = options.filters;
  dot.view_options.max_nodes = options.max_nodes;
  dot.view = viz::View::kDataflow;
  NKI_ASSIGN_OR_RETURN(data["dataflow"], Picture(*index, dot, "df"));
  dot.view = viz::View::kBarrier;
  NKI_ASSIGN_OR_RETURN(data["barrier"], Picture(*index, dot, "bl"));

  const std::string title =
      EscapeHtml(absl::StrCat(graph.kernel_name(), " — nkigraph view"));
  std::string scripts;
  for (const char* script : kScripts) {
    absl::StrAppend(&scripts, "<script>\n", Asset(script), "</script>\n");
  }
  return absl::StrReplaceAll(
      Asset("page.html"),
      {{"@TITLE@", title},
       {"@STYLE@", Asset("page.css")},
       {"@DATA@",
        ScriptSafe(data.dump(-1, ' ', false, json::error_handler_t::replace))},
       {"@SCRIPTS@", scripts}});
}

}  // namespace nkigraph::view
