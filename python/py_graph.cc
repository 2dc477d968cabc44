// nkigraph.Graph and what takes one: run(), random_inputs(), diff(),
// dot() and profile().
#include <cstdint>
#include <memory>
#include <optional>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "cost/cost_table.h"
#include "cost/report.h"
#include "cost/report_format.h"
#include "cost/schedule.h"
#include "cost/timeline_svg.h"
#include "cost/trace_json.h"
#include "diff/diff.h"
#include "diff/format.h"
#include "google/protobuf/text_format.h"
#include "graph/graph_index.h"
#include "interp/interpreter.h"
#include "ops/device_profile.h"
#include "pybind11/stl.h"
#include "python/module.h"
#include "python/py_arrays.h"
#include "python/py_errors.h"
#include "tools/commands.h"
#include "tools/run_support.h"
#include "util/dtype.h"
#include "util/file_io.h"
#include "util/graph_io.h"
#include "util/tensor_roles.h"
#include "viz/viz.h"

namespace nkigraph::python {
namespace py = pybind11;
namespace {

using HostForm = interp::Interpreter::HostForm;

GraphHandle Hold(proto::Graph graph) {
  return GraphHandle{std::make_shared<const proto::Graph>(std::move(graph))};
}

std::string TargetName(proto::Target target) {
  return absl::AsciiStrToLower(proto::Target_Name(target));
}

// A graph parsed from bytes or text, with the schema check ReadGraph does.
GraphHandle Parsed(proto::Graph graph) {
  ThrowIfError(CheckSchemaVersion(graph));
  return Hold(std::move(graph));
}

// The inputs or outputs of a graph as [{name, shape, dtype}], with the
// shapes a run takes and gives (a leading [num_ranks] axis for per-rank
// tensors of multi-rank graphs).
py::list Signature(const proto::Graph& graph, bool inputs) {
  py::list rows;
  const int64_t ranks = graph.world().num_ranks();
  for (const proto::Tensor& t : graph.tensors()) {
    if (inputs ? !IsHostInput(t) : !IsHostOutput(t)) continue;
    std::vector<int64_t> shape(t.shape().begin(), t.shape().end());
    if (t.per_rank() && ranks > 1) shape.insert(shape.begin(), ranks);
    py::dict row;
    // An in-place tensor's output goes by its own name.
    row["name"] = inputs ? t.name() : HostOutputName(t);
    row["shape"] = py::tuple(py::cast(shape));
    row["dtype"] = std::string(DTypeName(t.dtype()));
    rows.append(row);
  }
  return rows;
}

std::unique_ptr<interp::Interpreter> MakeInterpreter(
    const GraphHandle& graph, std::optional<int64_t> memory_limit) {
  interp::RunOptions options;
  if (memory_limit.has_value()) options.memory_limit_bytes = *memory_limit;
  absl::StatusOr<std::unique_ptr<interp::Interpreter>> created;
  {
    py::gil_scoped_release release;
    created = interp::Interpreter::Create(*graph.graph, options);
  }
  return ValueOrThrow(std::move(created));
}

void SetInputs(interp::Interpreter& interp, const py::object& inputs) {
  if (inputs.is_none()) return;
  if (!py::isinstance<py::dict>(inputs)) {
    ThrowInvalidArgument("inputs must be a dict of name: array");
  }
  for (auto [key, value] : inputs.cast<py::dict>()) {
    const std::string name = py::str(key).cast<std::string>();
    const proto::Tensor* tensor = interp.FindInput(name);
    if (tensor == nullptr) {
      ThrowInvalidArgument(absl::StrCat(
          "the graph has no input '", name,
          "' (inputs: ", absl::StrJoin(interp.InputNames(), ", "), ")"));
    }
    ThrowIfError(interp.SetInput(InputFromNumpy(name, value, *tensor)));
  }
}

py::dict Run(const GraphHandle& graph, const py::object& inputs,
             std::optional<uint64_t> random_inputs,
             std::optional<int64_t> memory_limit, bool raw_bits) {
  std::unique_ptr<interp::Interpreter> interp =
      MakeInterpreter(graph, memory_limit);
  SetInputs(*interp, inputs);
  if (random_inputs.has_value()) {
    ThrowIfError(interp->FillRandomInputs(*random_inputs));
  }
  absl::Status status;
  {
    py::gil_scoped_release release;
    status = interp->Run();
  }
  ThrowIfError(status);
  return ToNumpyDict(ValueOrThrow(tools::ReadOutputs(
      *interp, raw_bits ? HostForm::kRawBits16 : HostForm::kValues)));
}

py::dict RandomInputs(const GraphHandle& graph, uint64_t seed,
                      const py::object& inputs,
                      std::optional<int64_t> memory_limit) {
  std::unique_ptr<interp::Interpreter> interp =
      MakeInterpreter(graph, memory_limit);
  SetInputs(*interp, inputs);
  ThrowIfError(interp->FillRandomInputs(seed));
  return ToNumpyDict(
      ValueOrThrow(tools::ReadInputs(*interp, HostForm::kValues)));
}

// The result of diff().
struct DiffOutcome {
  diff::DiffResult result;
  diff::FormatOptions format;
};

DiffOutcome Diff(const GraphHandle& a, const GraphHandle& b, bool strict,
                 int64_t max_changes, const std::string& label_a,
                 const std::string& label_b) {
  diff::DiffOptions options;
  options.strict = strict;
  options.max_changes = max_changes;
  absl::StatusOr<diff::DiffResult> result;
  {
    py::gil_scoped_release release;
    result = diff::Diff(*a.graph, *b.graph, options);
  }
  DiffOutcome outcome{ValueOrThrow(std::move(result)), {}};
  outcome.format.label_a = label_a;
  outcome.format.label_b = label_b;
  outcome.format.strict = strict;
  return outcome;
}

py::dict CountsDict(const diff::Counts& counts) {
  py::dict dict;
  dict["added"] = counts.added;
  dict["removed"] = counts.removed;
  dict["changed"] = counts.changed;
  return dict;
}

py::object Dot(const GraphHandle& graph, const std::optional<std::string>& path,
               const std::string& view,
               const std::optional<std::string>& format,
               std::optional<int64_t> core, std::optional<int64_t> rank,
               const std::string& scope, std::optional<int64_t> instance,
               std::optional<uint32_t> around, int64_t radius,
               int64_t max_nodes, int64_t max_lane_nodes, bool legend,
               bool edge_labels) {
  viz::DotOptions options;
  options.view = ValueOrThrow(viz::ParseView(view));
  options.filters.core = core;
  options.filters.rank = rank;
  options.filters.scope = scope;
  options.filters.instance = instance;
  options.filters.around = around;
  options.filters.radius = radius;
  options.view_options.max_nodes = max_nodes;
  options.view_options.max_lane_nodes = max_lane_nodes;
  options.view_options.legend = legend;
  options.view_options.edge_labels = edge_labels;
  viz::Format chosen = viz::Format::kDot;
  if (format.has_value()) {
    chosen = ValueOrThrow(viz::FormatForPath(absl::StrCat("x.", *format)));
  } else if (path.has_value()) {
    chosen = ValueOrThrow(viz::FormatForPath(*path));
  }
  absl::StatusOr<std::string> picture;
  {
    py::gil_scoped_release release;
    picture = viz::RenderGraph(*graph.graph, options, chosen);
  }
  std::string bytes = ValueOrThrow(std::move(picture));
  if (path.has_value()) {
    ThrowIfError(WriteFileAtomically(*path, bytes));
    return py::none();
  }
  if (chosen == viz::Format::kPng) return py::bytes(bytes);
  return py::str(bytes);
}

// The result of profile(): the report and its renderings.
struct Profile {
  cost::Report report;
  std::string text;
  std::string json;
};

Profile ProfileGraph(const GraphHandle& graph,
                     const std::optional<std::string>& target, int top,
                     const std::optional<std::string>& trace,
                     const std::optional<std::string>& svg) {
  if (top < 0) ThrowInvalidArgument("top must be >= 0");
  proto::Target chosen = graph.graph->world().target();
  if (target.has_value()) chosen = ValueOrThrow(ops::ParseTarget(*target));
  Profile profile;
  absl::Status status;
  {
    py::gil_scoped_release release;
    status = [&]() -> absl::Status {
      absl::StatusOr<std::unique_ptr<graph::GraphIndex>> index =
          graph::GraphIndex::Build(*graph.graph);
      if (!index.ok()) return index.status();
      absl::StatusOr<cost::Schedule> schedule =
          cost::ScheduleGraph(**index, cost::CostTableFor(chosen));
      if (!schedule.ok()) return schedule.status();
      profile.report = cost::BuildReport(*schedule, top);
      if (trace.has_value()) {
        if (absl::Status s = cost::WriteChromeTraceFile(*schedule, *trace);
            !s.ok()) {
          return s;
        }
      }
      if (svg.has_value()) {
        std::ostringstream out;
        if (absl::Status s =
                cost::WriteTimelineSvg(*schedule, profile.report, out);
            !s.ok()) {
          return s;
        }
        if (absl::Status s = WriteFileAtomically(*svg, out.str()); !s.ok()) {
          return s;
        }
      }
      return absl::OkStatus();
    }();
  }
  ThrowIfError(status);
  std::ostringstream text, json;
  cost::WriteReportText(profile.report, top, text);
  cost::WriteReportJson(profile.report, json);
  profile.text = text.str();
  profile.json = json.str();
  return profile;
}

}  // namespace

void DefineGraph(py::module_& m) {
  py::class_<GraphHandle>(m, "Graph",
                          "An instruction graph: traced by trace(), or "
                          "loaded from a .pb / .pbtxt file.")
      .def_static(
          "load",
          [](const std::string& path) {
            absl::StatusOr<proto::Graph> graph;
            {
              py::gil_scoped_release release;
              graph = ReadGraph(path);
            }
            return Hold(ValueOrThrow(std::move(graph)));
          },
          py::arg("path"), "Reads a graph file (.pbtxt: text, else binary).")
      .def(
          "save",
          [](const GraphHandle& g, const std::string& path) {
            absl::Status status;
            {
              py::gil_scoped_release release;
              status = WriteGraph(*g.graph, path);
            }
            ThrowIfError(status);
          },
          py::arg("path"),
          "Writes the graph (.pbtxt: text format, else binary).")
      .def_static(
          "from_bytes",
          [](const py::bytes& bytes) {
            proto::Graph graph;
            if (!graph.ParseFromString(std::string(bytes))) {
              ThrowInvalidArgument("not a valid binary graph");
            }
            return Parsed(std::move(graph));
          },
          py::arg("data"))
      .def_static(
          "from_text",
          [](const std::string& text) {
            proto::Graph graph;
            if (!google::protobuf::TextFormat::ParseFromString(text, &graph)) {
              ThrowInvalidArgument("not a valid text-format graph");
            }
            return Parsed(std::move(graph));
          },
          py::arg("text"))
      .def(
          "to_bytes",
          [](const GraphHandle& g) {
            return py::bytes(SerializeDeterministic(*g.graph));
          },
          "The binary form, as a .pb file holds it (deterministic).")
      .def("__bytes__",
           [](const GraphHandle& g) {
             return py::bytes(SerializeDeterministic(*g.graph));
           })
      .def_property_readonly(
          "text",
          [](const GraphHandle& g) {
            std::string text;
            google::protobuf::TextFormat::PrintToString(*g.graph, &text);
            return text;
          },
          "The text form, as a .pbtxt file holds it.")
      .def(
          "info",
          [](const GraphHandle& g) {
            std::ostringstream out;
            tools::PrintInfo(*g.graph, out);
            return out.str();
          },
          "The summary `nkigraph info` prints.")
      .def_property_readonly(
          "kernel", [](const GraphHandle& g) { return g.graph->kernel_name(); })
      .def_property_readonly("params",
                             [](const GraphHandle& g) {
                               py::dict params;
                               for (const auto& p : g.graph->params()) {
                                 params[py::str(p.name())] = p.value();
                               }
                               return params;
                             })
      .def_property_readonly(
          "num_ranks",
          [](const GraphHandle& g) { return g.graph->world().num_ranks(); })
      .def_property_readonly(
          "num_cores",
          [](const GraphHandle& g) { return g.graph->world().num_cores(); })
      .def_property_readonly("target",
                             [](const GraphHandle& g) {
                               return TargetName(g.graph->world().target());
                             })
      .def_property_readonly("num_instructions",
                             [](const GraphHandle& g) {
                               int64_t count = 0;
                               for (const auto& s : g.graph->streams()) {
                                 count += s.instructions_size();
                               }
                               return count;
                             })
      .def_property_readonly(
          "inputs",
          [](const GraphHandle& g) { return Signature(*g.graph, true); },
          "[{name, shape, dtype}]: the inputs, with the shapes run() takes")
      .def_property_readonly(
          "outputs",
          [](const GraphHandle& g) { return Signature(*g.graph, false); },
          "[{name, shape, dtype}]: the outputs, with the shapes run() gives")
      .def("__repr__", [](const GraphHandle& g) {
        int64_t count = 0;
        for (const auto& s : g.graph->streams()) count += s.instructions_size();
        return absl::StrCat("<nkigraph.Graph ", g.graph->kernel_name(), ": ",
                            count, " instructions, ",
                            g.graph->world().num_ranks(), " rank(s) x ",
                            g.graph->world().num_cores(), " core(s)>");
      });

  m.def("run", &Run, py::arg("graph"), py::arg("inputs") = py::none(),
        py::kw_only(), py::arg("random_inputs") = py::none(),
        py::arg("memory_limit") = py::none(), py::arg("raw_bits") = false,
        "Runs the graph on the interpreter. `inputs`: {name: array}, float "
        "arrays for floating tensors (rounded to the declared dtype), "
        "integer arrays for integer ones, uint16 arrays as the raw bits of "
        "2-byte tensors; per-rank tensors of a multi-rank graph with a "
        "leading [num_ranks] axis. random_inputs=SEED fills the inputs not "
        "given. Returns {name: array} of every output: float32 (int32 for "
        "integer tensors; with raw_bits, uint16 bits for 2-byte ones). "
        "Device errors raise DeviceError; bad inputs InvalidArgumentError.");
  m.def("random_inputs", &RandomInputs, py::arg("graph"), py::arg("seed"),
        py::kw_only(), py::arg("inputs") = py::none(),
        py::arg("memory_limit") = py::none(),
        "The inputs run(graph, inputs, random_inputs=seed) runs on, as the "
        "device holds them (rounded to their dtypes): float32 or int32 "
        "arrays.");

  py::class_<DiffOutcome>(m, "DiffResult", "The result of diff().")
      .def_property_readonly(
          "same", [](const DiffOutcome& d) { return d.result.same(); })
      .def_property_readonly(
          "summary",
          [](const DiffOutcome& d) { return diff::SummaryLine(d.result); })
      .def_property_readonly(
          "text",
          [](const DiffOutcome& d) {
            return diff::FormatText(d.result, d.format);
          },
          "What `nkigraph diff` prints.")
      .def_property_readonly("json",
                             [](const DiffOutcome& d) {
                               return diff::FormatJson(d.result, d.format);
                             })
      .def_property_readonly("instructions",
                             [](const DiffOutcome& d) {
                               return CountsDict(d.result.instruction_counts);
                             })
      .def_property_readonly("tensors",
                             [](const DiffOutcome& d) {
                               return CountsDict(d.result.tensor_counts);
                             })
      .def_property_readonly("header",
                             [](const DiffOutcome& d) {
                               return CountsDict(d.result.header_counts);
                             })
      .def("__bool__", [](const DiffOutcome& d) { return !d.result.same(); })
      .def("__repr__", [](const DiffOutcome& d) {
        return absl::StrCat("<nkigraph.DiffResult ",
                            diff::SummaryLine(d.result), ">");
      });
  m.def("diff", &Diff, py::arg("a"), py::arg("b"), py::kw_only(),
        py::arg("strict") = false, py::arg("max_changes") = 0,
        py::arg("label_a") = "A", py::arg("label_b") = "B",
        "Semantic diff of two graphs, as `nkigraph diff`: `strict` also "
        "compares source lines and scopes. The result is true when they "
        "differ.");

  m.def("dot", &Dot, py::arg("graph"), py::arg("path") = py::none(),
        py::kw_only(), py::arg("view") = "dataflow",
        py::arg("format") = py::none(), py::arg("core") = py::none(),
        py::arg("rank") = py::none(), py::arg("scope") = "",
        py::arg("instance") = py::none(), py::arg("around") = py::none(),
        py::arg("radius") = 2, py::arg("max_nodes") = 1000,
        py::arg("max_lane_nodes") = 60, py::arg("legend") = true,
        py::arg("edge_labels") = true,
        "Draws the graph as `nkigraph dot` does: to `path` (.dot, .svg or "
        ".png by extension), or returned (DOT or SVG text, PNG bytes; "
        "`format` 'dot', 'svg' or 'png', DOT by default). view: 'dataflow' "
        "or 'barrier'.");

  py::class_<cost::EngineUse>(m, "EngineUse")
      .def_readonly("core", &cost::EngineUse::core)
      .def_readonly("engine", &cost::EngineUse::engine)
      .def_readonly("lanes", &cost::EngineUse::lanes)
      .def_readonly("instructions", &cost::EngineUse::instructions)
      .def_readonly("busy_ns", &cost::EngineUse::busy_ns)
      .def_readonly("utilisation", &cost::EngineUse::utilisation);
  py::class_<Profile>(m, "Profile",
                      "The cost model's estimate of a graph (an estimate "
                      "from public figures, not a measurement).")
      .def_property_readonly(
          "latency_ns", [](const Profile& p) { return p.report.latency_ns; })
      .def_property_readonly(
          "roofline_ns", [](const Profile& p) { return p.report.roofline_ns; })
      .def_property_readonly(
          "roofline_ratio",
          [](const Profile& p) { return p.report.roofline_ratio; })
      .def_property_readonly(
          "compute_bound",
          [](const Profile& p) { return p.report.compute_bound; })
      .def_property_readonly("flops",
                             [](const Profile& p) { return p.report.flops; })
      .def_property_readonly(
          "instructions",
          [](const Profile& p) { return p.report.instructions; })
      .def_property_readonly("target",
                             [](const Profile& p) { return p.report.target; })
      .def_property_readonly("engines",
                             [](const Profile& p) { return p.report.engines; })
      .def_readonly("text", &Profile::text, "What `nkigraph profile` prints.")
      .def_readonly("json", &Profile::json,
                    "`nkigraph profile --format json`'s document.")
      .def("__repr__", [](const Profile& p) {
        return absl::StrCat("<nkigraph.Profile ", p.report.kernel, ": ",
                            p.report.latency_ns / 1000.0, " us estimated>");
      });
  m.def("profile", &ProfileGraph, py::arg("graph"), py::kw_only(),
        py::arg("target") = py::none(), py::arg("top") = 10,
        py::arg("trace") = py::none(), py::arg("svg") = py::none(),
        "Estimates the graph's timing with the cost model, as `nkigraph "
        "profile`: target 'trn1', 'trn2' or 'trn3' (default: the graph's); "
        "`trace` writes a Chrome trace, `svg` the timeline picture.");
}

}  // namespace nkigraph::python
