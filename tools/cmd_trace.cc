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

  // A binary graph is written as the tracer serialized it; text format
  // needs the messages.
  absl::StatusOr<builder::SerializedGraph> traced =
      registry.TraceSerialized(name, settings);
  if (!traced.ok()) return ReportError("trace", traced.status());
  absl::Status written;
  if (EndsWith(output, ".pbtxt")) {
    absl::StatusOr<ArenaGraph> graph = ParseGraph(traced->bytes, output);
    written = graph.ok() ? WriteGraph(**graph, output) : graph.status();
  } else {
    written = WriteFileAtomically(output, traced->bytes);
  }
  if (!written.ok()) {
    return ReportError("trace", absl::StrCat("cannot write '", output,
                                             "': ", written.message()));
  }
  const int64_t instructions = traced->num_instructions;
  const int tensors = traced->num_tensors;
  const int num_ranks = traced->num_ranks;
  const int num_cores = traced->num_cores;
  std::cout << "traced " << name << ": " << instructions << " instructions, "
            << tensors << " tensors, " << num_ranks << " rank(s) x "
            << num_cores << " core(s) -> " << output << "\n";
  return kExitOk;
}

}  // namespace nkigraph::tools
