// nkigraph run GRAPH --input NAME=FILE.npy... --output-dir DIR: executes a
// graph on the interpreter.
#include <iostream>
#include <memory>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "cost/cost_table.h"
#include "cost/schedule.h"
#include "cost/trace_json.h"
#include "graph/dependencies.h"
#include "graph/graph_index.h"
#include "interp/interpreter.h"
#include "tools/commands.h"
#include "tools/run_support.h"
#include "util/file_io.h"
#include "util/graph_io.h"
#include "util/npy.h"
#include "util/status_macros.h"

namespace nkigraph::tools {
namespace {

constexpr char kUsage[] =
    R"(usage: nkigraph run GRAPH [--input NAME=FILE.npy]... [--random-inputs SEED]
                    --output-dir DIR [--dump DIR [--dump-filter REGEX]]
                    [--save-bundle BUNDLE.pb] [--memory-limit BYTES]
                    [--timeline FILE.json] [--raw-bits]

Executes GRAPH (.pb or .pbtxt) on the memory-model device and writes
DIR/<output>.npy for every output. Inputs are .npy files: float32 (rounded
to the declared dtype) or int32 for integer tensors; per-rank tensors of a
multi-rank graph carry a leading [num_ranks] axis.

options:
  -i, --input NAME=FILE.npy   an input (repeatable; every input is needed
                              unless --random-inputs is given)
  --random-inputs SEED        fill the inputs not given with deterministic
                              random values (floats in [-1, 1))
  -o, --output-dir DIR        where the outputs are written
  --dump DIR                  also write each tensor the filter names every
                              time an instruction writes it, as
                              DIR/<seq>_<tensor>_i<instr>[_r<rank>][_c<core>].npy;
                              after a device error, also the state of every
                              such tensor as DIR/final_*.npy
  --dump-filter REGEX         the tensors to dump: a regex searched in the
                              tensor name (default: all; anchor with ^...$)
  --save-bundle FILE          write a replay bundle: the graph, its inputs
                              (as the device holds them) and its outputs;
                              `nkigraph replay FILE` re-executes it
  --raw-bits                  write 16-bit outputs (bfloat16, float16, int16,
                              uint16) as uint16 .npy files of their raw
                              bits, in the bundle too (default: float32 or
                              int32 values)
  --memory-limit BYTES        refuse graphs needing more device, shadow and
                              race-detection memory (default 8 GiB)
  --timeline FILE.json        also write the cost model's Chrome trace of
                              the run (see `nkigraph profile`), scheduled
                              with the addresses the run's dynamic offsets
                              really reached (rank 0's)
  -h, --help                  show this help

Exit status: 0 success, 1 device error (race, deadlock, out-of-bounds
access, read of never-written memory...), 2 bad usage or input.
)";

constexpr char kVerb[] = "run";

// Schedules `graph` with the dependencies of the run (its dynamic offsets
// reaching only `reached`) and writes the Chrome trace; returns the
// estimated latency.
using ReachedOffsets = graph::ResolvedOffsets;

absl::StatusOr<double> WriteTimeline(const proto::Graph& ran,
                                     const ReachedOffsets& reached,
                                     const std::string& path) {
  NKI_ASSIGN_OR_RETURN(std::unique_ptr<graph::GraphIndex> index,
                       graph::GraphIndex::Build(ran));
  const std::vector<graph::Dependency> deps = graph::AnalyzeDependencies(
      *index, {.drop_implied = false, .resolved = &reached});
  NKI_ASSIGN_OR_RETURN(
      cost::Schedule schedule,
      cost::ScheduleGraph(*index, cost::CostTableFor(ran.world().target()),
                          deps));
  NKI_RETURN_IF_ERROR(cost::WriteChromeTraceFile(schedule, path));
  return schedule.makespan_ns;
}

}  // namespace

int RunRun(const std::vector<std::string>& args) {
  absl::StatusOr<ParsedArgs> parsed =
      ParseArgs(args, {{"--input", "-i", /*takes_value=*/true,
                        /*repeated=*/true},
                       {"--random-inputs", "", true, false},
                       {"--output-dir", "-o", true, false},
                       {"--dump", "", true, false},
                       {"--dump-filter", "", true, false},
                       {"--save-bundle", "", true, false},
                       {"--memory-limit", "", true, false},
                       {"--timeline", "", true, false},
                       {"--raw-bits", "", false, false}});
  if (!parsed.ok()) return ReportError(kVerb, parsed.status());
  if (parsed->help) {
    std::cout << kUsage;
    return kExitOk;
  }
  absl::StatusOr<std::string> graph_path_or = OnePositional(
      *parsed, kVerb, "graph",
      "nkigraph run GRAPH --input NAME=FILE.npy... --output-dir DIR");
  if (!graph_path_or.ok()) return ReportError(kVerb, graph_path_or.status());
  const std::string& graph_path = *graph_path_or;
  if (!parsed->Has("--output-dir")) {
    return ReportError(kVerb,
                       "missing --output-dir DIR (where the outputs "
                       "are written)");
  }
  const std::string output_dir = parsed->Get("--output-dir");
  if (parsed->Has("--dump-filter") && !parsed->Has("--dump")) {
    return ReportError(kVerb, "--dump-filter needs --dump DIR");
  }
  const std::string bundle_path = parsed->Get("--save-bundle");
  if (parsed->Has("--save-bundle") && !EndsWith(bundle_path, ".pb") &&
      !EndsWith(bundle_path, ".pbtxt")) {
    return ReportError(kVerb, absl::StrCat("bundle '", bundle_path,
                                           "' must end in .pb or .pbtxt"));
  }

  interp::RunOptions options;
  if (parsed->Has("--memory-limit")) {
    absl::StatusOr<uint64_t> limit =
        ParseCount(parsed->Get("--memory-limit"), "--memory-limit");
    if (!limit.ok()) return ReportError(kVerb, limit.status());
    options.memory_limit_bytes =
        static_cast<int64_t>(std::min<uint64_t>(*limit, INT64_MAX));
  }
  std::unique_ptr<TensorDumper> dumper;
  if (parsed->Has("--dump")) {
    absl::StatusOr<std::unique_ptr<TensorDumper>> created =
        TensorDumper::Create(parsed->Get("--dump"),
                             parsed->Get("--dump-filter", ".*"));
    if (!created.ok()) return ReportError(kVerb, created.status());
    dumper = *std::move(created);
    dumper->Attach(options);
  }

  absl::StatusOr<proto::Graph> graph = ReadGraph(graph_path);
  if (!graph.ok()) return ReportError(kVerb, graph.status());
  absl::StatusOr<std::unique_ptr<interp::Interpreter>> created =
      interp::Interpreter::Create(*std::move(graph), options);
  if (!created.ok()) {
    return ReportError(kVerb, absl::StrCat("'", graph_path,
                                           "': ", created.status().message()));
  }
  interp::Interpreter& interp = **created;
  if (dumper) dumper->SetInterpreter(&interp);

  std::set<std::string> given;
  for (const std::string& setting : parsed->All("--input")) {
    absl::StatusOr<std::pair<std::string, std::string>> kv =
        SplitKeyValue(setting, "--input");
    if (!kv.ok()) return ReportError(kVerb, kv.status());
    const auto& [name, file] = *kv;
    if (!given.insert(name).second) {
      return ReportError(kVerb,
                         absl::StrCat("input '", name, "' is given twice"));
    }
    absl::StatusOr<HostArray> array = ReadNpy(file);
    if (!array.ok()) {
      return ReportError(kVerb, absl::StrCat("input '", name,
                                             "': ", array.status().message()));
    }
    array->name = name;
    if (absl::Status status = interp.SetInput(*array); !status.ok()) {
      return ReportError(
          kVerb, absl::StrCat(status.message(), " (from '", file, "')"));
    }
  }
  if (parsed->Has("--random-inputs")) {
    absl::StatusOr<uint64_t> seed =
        ParseCount(parsed->Get("--random-inputs"), "--random-inputs");
    if (!seed.ok()) return ReportError(kVerb, seed.status());
    if (absl::Status status = interp.FillRandomInputs(*seed); !status.ok()) {
      return ReportError(kVerb, status);
    }
  }
  if (std::vector<std::string> missing = interp.MissingInputs();
      !missing.empty()) {
    return ReportError(
        kVerb, absl::StrCat("missing input", missing.size() > 1 ? "s " : " ",
                            "'", absl::StrJoin(missing, "', '"),
                            "' (give --input NAME=FILE.npy, or "
                            "--random-inputs SEED)"));
  }

  proto::Bundle bundle;
  if (parsed->Has("--save-bundle")) {
    *bundle.mutable_graph() = interp.graph();
    // Read before the run: inputs written in place are overwritten by it.
    absl::StatusOr<std::vector<HostArray>> inputs = ReadInputs(interp);
    if (!inputs.ok()) return ReportError(kVerb, inputs.status());
    for (const HostArray& input : *inputs) {
      *bundle.add_inputs() = ToNamedArray(input);
    }
  }

  ReachedOffsets reached;
  if (parsed->Has("--timeline")) interp.RecordResolvedOffsets(&reached);
  if (absl::Status status = interp.Run(); !status.ok()) {
    const int code = ReportRunError(kVerb, status);
    if (code != kExitFailure) return code;
    if (dumper) {
      if (absl::Status dumped = dumper->DumpFinalState(); !dumped.ok()) {
        ReportError(kVerb, absl::StrCat("cannot dump the final state: ",
                                        dumped.message()));
      } else {
        std::cerr << "nkigraph run: dumped " << dumper->files_written()
                  << " file(s) to " << parsed->Get("--dump")
                  << " (final_*.npy: the state when the run stopped)\n";
      }
    }
    // A bundle without outputs still reproduces the failure.
    if (parsed->Has("--save-bundle")) {
      if (absl::Status saved = WriteMessage(bundle, bundle_path); !saved.ok()) {
        ReportError(kVerb, absl::StrCat("cannot write bundle '", bundle_path,
                                        "': ", saved.message()));
      } else {
        std::cerr << "nkigraph run: wrote bundle " << bundle_path
                  << " (inputs only; replaying it reproduces the error)\n";
      }
    }
    return kExitFailure;
  }
  if (dumper && !dumper->status().ok()) {
    return ReportError(kVerb, absl::StrCat("cannot write a dump file: ",
                                           dumper->status().message()));
  }

  absl::StatusOr<std::vector<HostArray>> outputs =
      ReadOutputs(interp, parsed->Has("--raw-bits")
                              ? interp::Interpreter::HostForm::kRawBits16
                              : interp::Interpreter::HostForm::kValues);
  if (!outputs.ok()) return ReportError(kVerb, outputs.status());
  if (absl::Status status = WriteArrays(output_dir, *outputs); !status.ok()) {
    return ReportError(kVerb, status);
  }
  if (parsed->Has("--save-bundle")) {
    for (const HostArray& output : *outputs) {
      *bundle.add_outputs() = ToNamedArray(output);
    }
    if (absl::Status status = WriteMessage(bundle, bundle_path); !status.ok()) {
      return ReportError(kVerb,
                         absl::StrCat("cannot write bundle '", bundle_path,
                                      "': ", status.message()));
    }
  }
  double estimate_ns = 0;
  if (parsed->Has("--timeline")) {
    absl::StatusOr<double> written =
        WriteTimeline(interp.graph(), reached, parsed->Get("--timeline"));
    if (!written.ok()) return ReportError(kVerb, written.status());
    estimate_ns = *written;
  }
  std::vector<std::string> names;
  for (const HostArray& output : *outputs) names.push_back(output.name);
  std::cout << "ran " << graph_path << ": " << interp.instructions_executed()
            << " instructions; wrote " << absl::StrJoin(names, ", ") << " to "
            << output_dir;
  if (dumper) {
    std::cout << "; dumped " << dumper->files_written() << " file(s) to "
              << parsed->Get("--dump");
  }
  if (parsed->Has("--save-bundle")) std::cout << "; bundle " << bundle_path;
  if (parsed->Has("--timeline")) {
    std::cout << "; timeline " << parsed->Get("--timeline") << " (estimated "
              << absl::StrFormat("%.3f", estimate_ns / 1000.0) << " us)";
  }
  std::cout << "\n";
  return kExitOk;
}

}  // namespace nkigraph::tools
