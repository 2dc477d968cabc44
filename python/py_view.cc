// nkigraph.Graph.view() and the notebook pictures: _repr_svg_ (a small
// graph's dataflow picture) and _repr_html_ (a larger graph's page of
// `nkigraph view`, inline).
#include <cstdint>
#include <optional>
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "ops/device_profile.h"
#include "pybind11/stl.h"
#include "python/module.h"
#include "python/py_errors.h"
#include "util/file_io.h"
#include "view/page.h"
#include "viz/viz.h"

namespace nkigraph::python {
namespace py = pybind11;
namespace {

// Graphs up to this many instructions show in a notebook as the dataflow
// picture alone; larger ones as the interactive page, whose search,
// paging and timeline they need.
constexpr int64_t kInlinePictureInstructions = 200;

int64_t InstructionCount(const proto::Graph& graph) {
  int64_t count = 0;
  for (const proto::Stream& stream : graph.streams()) {
    count += stream.instructions_size();
  }
  return count;
}

std::string Page(const GraphHandle& graph, const view::PageOptions& options) {
  absl::StatusOr<std::string> page;
  {
    py::gil_scoped_release release;
    page = view::BuildPage(*graph.graph, options);
  }
  return ValueOrThrow(std::move(page));
}

py::object View(const GraphHandle& graph,
                const std::optional<std::string>& path,
                const std::optional<std::string>& dump,
                std::optional<bool> profile,
                const std::optional<std::string>& target,
                const std::string& scope, std::optional<int64_t> instance,
                std::optional<int64_t> core, std::optional<int64_t> rank,
                int64_t max_nodes) {
  view::PageOptions options;
  options.dump_dir = dump.value_or("");
  if (profile.has_value()) {
    options.profile = *profile ? view::Profile::kOn : view::Profile::kOff;
  }
  if (target.has_value())
    options.target = ValueOrThrow(ops::ParseTarget(*target));
  options.filters.scope = scope;
  options.filters.instance = instance;
  options.filters.core = core;
  options.filters.rank = rank;
  options.max_nodes = max_nodes;
  std::string page = Page(graph, options);
  if (!path.has_value()) return py::str(page);
  ThrowIfError(WriteFileAtomically(*path, page));
  return py::none();
}

py::object ReprSvg(const GraphHandle& graph) {
  if (InstructionCount(*graph.graph) > kInlinePictureInstructions) {
    return py::none();
  }
  absl::StatusOr<std::string> svg;
  {
    py::gil_scoped_release release;
    svg = viz::RenderGraph(*graph.graph, viz::DotOptions{}, viz::Format::kSvg);
  }
  return py::str(ValueOrThrow(std::move(svg)));
}

// The page in an iframe: its script and style stay apart from the
// notebook's.
py::object ReprHtml(const GraphHandle& graph) {
  if (InstructionCount(*graph.graph) <= kInlinePictureInstructions) {
    return py::none();
  }
  const std::string page = Page(graph, view::PageOptions{});
  return py::str(absl::StrCat(
      "<iframe style=\"width:100%;height:720px;border:1px solid #ccc\" "
      "srcdoc=\"",
      absl::StrReplaceAll(page, {{"&", "&amp;"}, {"\"", "&quot;"}}),
      "\"></iframe>"));
}

}  // namespace

void DefineGraphView(py::module_& m) {
  py::object graph = m.attr("Graph");
  graph.attr("view") = py::cpp_function(
      &View, py::name("view"), py::is_method(graph), py::sibling(py::none()),
      py::arg("path") = py::none(), py::kw_only(), py::arg("dump") = py::none(),
      py::arg("profile") = py::none(), py::arg("target") = py::none(),
      py::arg("scope") = "", py::arg("instance") = py::none(),
      py::arg("core") = py::none(), py::arg("rank") = py::none(),
      py::arg("max_nodes") = 1000,
      "Writes the page `nkigraph view` writes to `path` (or returns its "
      "HTML): the dataflow and barrier pictures, the cost model's "
      "timeline, instruction details, search. dump: a `run --dump` folder "
      "of this graph; profile: True/False to force the timeline in or out "
      "(default: when the graph names a target); scope/instance/core/rank: "
      "what the pictures show.");
  graph.attr("_repr_svg_") = py::cpp_function(
      &ReprSvg, py::name("_repr_svg_"), py::is_method(graph),
      py::sibling(py::none()),
      "Notebooks: the dataflow picture of a graph of at most 200 "
      "instructions (None for a larger one).");
  graph.attr("_repr_html_") = py::cpp_function(
      &ReprHtml, py::name("_repr_html_"), py::is_method(graph),
      py::sibling(py::none()),
      "Notebooks: the interactive page of a graph of more than 200 "
      "instructions, in an iframe (None for a smaller one).");
}

}  // namespace nkigraph::python
