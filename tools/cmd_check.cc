// nkigraph check FILE: validates a graph and lists every problem found.
#include <cstdint>
#include <iostream>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "graph/validate.h"
#include "tools/commands.h"
#include "tools/run_support.h"
#include "util/diagnostic.h"

namespace nkigraph::tools {
namespace {

constexpr char kUsage[] = R"(usage: nkigraph check FILE [--diagnostics json]

Validates a graph (.pb or .pbtxt, or a replay bundle's graph) without running it: the schema version,
the world, every tensor (dtype, memory space, shape, address within the
device's capacity) and every instruction (operands, attributes, on-chip
lifetimes), as the interpreter does before a run. Prints every problem
found, one per line, each naming the instruction or tensor.

options:
%s  -h, --help             show this help

Exit status: 0 valid, 1 invalid, 2 unreadable file or bad usage.
)";

constexpr char kVerb[] = "check";

}  // namespace

int RunCheck(const std::vector<std::string>& args) {
  int exit_code = kExitOk;
  std::optional<ParsedArgs> parsed =
      StartVerb(args, kVerb, {}, kUsage, &exit_code);
  if (!parsed) return exit_code;
  absl::StatusOr<std::string> path_or =
      OnePositional(*parsed, kVerb, "graph", "nkigraph check FILE");
  if (!path_or.ok()) return ReportError(kVerb, path_or.status());
  const std::string& path = *path_or;
  // Not ReadGraph: a schema version problem is a finding, listed with the
  // others, not a reason to stop.
  absl::StatusOr<GraphSource> source =
      ReadGraphArg(kVerb, path, /*check_schema=*/false);
  if (!source.ok()) return ReportError(kVerb, source.status());
  const proto::Graph& graph = source->graph;
  const std::vector<Diagnostic> problems = graph::ValidateGraph(graph);
  const bool json = CurrentDiagnosticsFormat() == DiagnosticsFormat::kJson;
  if (problems.empty()) {
    if (json) return kExitOk;
    int64_t instructions = 0;
    for (const proto::Stream& stream : graph.streams()) {
      instructions += stream.instructions_size();
    }
    std::cout << path << ": valid (" << instructions << " instructions, "
              << graph.tensors_size() << " tensors)\n";
    return kExitOk;
  }
  for (const Diagnostic& problem : problems) {
    PrintDiagnostic(std::cout, kVerb, path, problem);
  }
  if (json) return kExitFailure;
  std::cout << path << ": invalid (" << problems.size()
            << (problems.size() == 1 ? " problem" : " problems") << ")\n";
  return kExitFailure;
}

}  // namespace nkigraph::tools
