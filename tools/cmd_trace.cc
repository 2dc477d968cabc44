// nkigraph trace NAME [--set k=v]... -o FILE: traces a registered kernel.
#include <iostream>
#include <utility>

#include "absl/strings/str_cat.h"
#include "kernels/registry.h"
#include "tools/commands.h"
#include "util/file_io.h"
#include "util/graph_io.h"

namespace nkigraph::tools {
namespace {

constexpr char kUsage[] =
    R"(usage: nkigraph trace NAME [--set PARAM=VALUE]... -o FILE

Traces the registered kernel NAME with the given parameters (defaults for
the rest) and writes the instruction graph to FILE: binary protobuf for
.pb, text format for .pbtxt. Prints a one-line summary.

options:
  -s, --set PARAM=VALUE   set a kernel parameter (repeatable)
  -o, --output FILE       the graph file to write (.pb or .pbtxt)
  -h, --help              show this help; with NAME, also the kernel's
                          parameters

Run `nkigraph list` for the kernels and their parameters.
)";

}  // namespace

int RunTrace(const std::vector<std::string>& args) {
  absl::StatusOr<ParsedArgs> parsed =
      ParseArgs(args, {{"--set", "-s", /*takes_value=*/true, /*repeated=*/true},
                       {"--output", "-o", /*takes_value=*/true,
                        /*repeated=*/false}});
  if (!parsed.ok()) return ReportError("trace", parsed.status());
  const kernels::KernelRegistry& registry = kernels::KernelRegistry::Global();
  if (parsed->help) {
    std::cout << kUsage;
    for (const std::string& name : parsed->positionals) {
      if (const kernels::KernelDef* def = registry.Find(name)) {
        std::cout << "\n";
        PrintKernel(*def, std::cout);
      }
    }
    return kExitOk;
  }
  absl::StatusOr<std::string> name_or =
      OnePositional(*parsed, "trace", "kernel name",
                    "nkigraph trace NAME [--set PARAM=VALUE]... -o FILE");
  if (!name_or.ok()) return ReportError("trace", name_or.status());
  const std::string& name = *name_or;
  std::vector<std::pair<std::string, std::string>> settings;
  for (const std::string& setting : parsed->All("--set")) {
    absl::StatusOr<std::pair<std::string, std::string>> kv =
        SplitKeyValue(setting, "--set");
    if (!kv.ok()) return ReportError("trace", kv.status());
    settings.push_back(*std::move(kv));
  }
  if (!parsed->Has("--output")) {
    return ReportError("trace",
                       "missing -o FILE (the graph to write, .pb or "
                       ".pbtxt)");
  }
  const std::string output = parsed->Get("--output");
  if (!EndsWith(output, ".pb") && !EndsWith(output, ".pbtxt")) {
    return ReportError("trace",
                       absl::StrCat("output '", output,
                                    "' must end in .pb (binary) or .pbtxt "
                                    "(text format)"));
  }

  // The graph is written straight from the tracer's arena: no copy of a
  // possibly huge graph.
  int64_t instructions = 0;
  int tensors = 0;
  int64_t num_ranks = 0;
  int64_t num_cores = 0;
  bool write_failed = false;
  absl::Status status = registry.TraceInPlace(
      name, settings, [&](const proto::Graph& graph) -> absl::Status {
        for (const proto::Stream& stream : graph.streams()) {
          instructions += stream.instructions_size();
        }
        tensors = graph.tensors_size();
        num_ranks = graph.world().num_ranks();
        num_cores = graph.world().num_cores();
        absl::Status written = WriteGraph(graph, output);
        write_failed = !written.ok();
        return written;
      });
  if (!status.ok()) {
    if (write_failed) {
      return ReportError("trace", absl::StrCat("cannot write '", output,
                                               "': ", status.message()));
    }
    return ReportError("trace", status);
  }
  std::cout << "traced " << name << ": " << instructions << " instructions, "
            << tensors << " tensors, " << num_ranks << " rank(s) x "
            << num_cores << " core(s) -> " << output << "\n";
  return kExitOk;
}

}  // namespace nkigraph::tools
