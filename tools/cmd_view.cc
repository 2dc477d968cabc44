// nkigraph view GRAPH -o PAGE.html: one self-contained HTML page to
// explore a graph (view/page.h).
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "ops/device_profile.h"
#include "tools/commands.h"
#include "tools/picture_flags.h"
#include "tools/run_support.h"
#include "util/file_io.h"
#include "view/page.h"

namespace nkigraph::tools {
namespace {

constexpr char kVerb[] = "view";

constexpr char kUsage[] =
    R"(usage: nkigraph view GRAPH -o PAGE.html [--dump DIR] [options]

Writes one self-contained HTML page to explore the graph GRAPH (.pb or
.pbtxt, or a replay bundle's graph): no network access when it is
opened, every script and style inside the file. The page shows, linked
by instruction:
  dataflow   the picture `nkigraph dot` draws, with pan and zoom, scope
             boxes that fold, and a wide picture's pages as navigation
  barriers   the barrier-lanes picture (`dot --view barrier`)
  timeline   the cost model's estimate (`nkigraph profile`): one lane per
             engine and DMA queue per core, the critical path marked
  panel      the selected instruction: opcode, operands with their
             tensors, shapes, memory spaces and byte ranges, attributes,
             source file:line, estimated start, duration and engine; with
             --dump the values it wrote (shape, dtype, min/max/mean, NaN
             and Inf counts, a heat-map of a 2-D slice)
  search     by instruction id, opcode, tensor name or source line
Selecting an instruction anywhere selects it everywhere and marks its
producers and consumers. PAGE.html#select=ID opens it with instruction
ID selected; #select=NAME selects the instruction writing tensor NAME.

options:
  -o, --output PAGE    the page to write (required)
      --dump DIR       a `nkigraph run GRAPH --dump DIR` folder of this
                       graph: values shown per instruction
      --profile        include the timeline (the default when the graph
                       or --target names a target; an error without one)
      --no-profile     leave the timeline out
      --target NAME    cost table: trn1, trn2 or trn3 (default: the graph's)
      --scope PATH     the pictures show only this scope (as `dot`)
      --instance N     with --scope: only its N-th instance on each core
      --core N         the pictures show only core N
      --rank N         the barrier picture shows only rank N
      --max-nodes N    nodes per picture before scopes collapse (default
                       1000; 0: never collapse)
%s  -h, --help           show this help

Exit status: 0 page written, 2 unreadable or invalid graph, a dump folder
of another graph, or bad usage.
)";

std::vector<FlagSpec> Flags() {
  std::vector<FlagSpec> flags = PictureFlags();
  flags.insert(flags.end(), {{"--output", "-o", true, false},
                             {"--dump", "", true, false},
                             {"--profile", "", false, false},
                             {"--no-profile", "", false, false},
                             {"--target", "", true, false}});
  return flags;
}

}  // namespace

int RunView(const std::vector<std::string>& args) {
  int exit_code = kExitOk;
  std::optional<ParsedArgs> parsed =
      StartVerb(args, kVerb, Flags(), kUsage, &exit_code);
  if (!parsed) return exit_code;
  absl::StatusOr<std::string> input = OnePositional(
      *parsed, kVerb, "graph file", "nkigraph view GRAPH -o PAGE.html");
  if (!input.ok()) return ReportError(kVerb, input.status());
  if (!parsed->Has("--output") || parsed->Get("--output").empty()) {
    return ReportError(kVerb, "no page to write: give -o PAGE.html");
  }
  const std::string output = parsed->Get("--output");

  view::PageOptions options;
  if (parsed->Has("--profile") && parsed->Has("--no-profile")) {
    return ReportError(kVerb, "--profile and --no-profile contradict");
  }
  if (parsed->Has("--profile")) options.profile = view::Profile::kOn;
  if (parsed->Has("--no-profile")) options.profile = view::Profile::kOff;
  if (parsed->Has("--target")) {
    absl::StatusOr<proto::Target> target =
        ops::ParseTarget(parsed->Get("--target"));
    if (!target.ok()) return ReportError(kVerb, target.status());
    options.target = *target;
  }
  if (absl::Status status =
          ReadPictureFlags(*parsed, &options.filters, &options.max_nodes);
      !status.ok()) {
    return ReportError(kVerb, status);
  }
  options.dump_dir = parsed->Get("--dump");
  if (parsed->Has("--dump") && options.dump_dir.empty()) {
    return ReportError(kVerb, "--dump needs a folder");
  }

  absl::StatusOr<ArenaGraphSource> source = LoadGraphArg(kVerb, *input);
  if (!source.ok()) return ReportError(kVerb, source.status());
  absl::StatusOr<std::string> page = view::BuildPage(*source->graph, options);
  if (!page.ok()) {
    return ReportError(
        kVerb, WithContext(absl::StrCat("'", *input, "'"), page.status()));
  }
  if (absl::Status status = WriteFileAtomically(output, *page); !status.ok()) {
    return ReportError(
        kVerb, absl::StrCat("cannot write '", output, "': ", status.message()));
  }
  return kExitOk;
}

}  // namespace nkigraph::tools
