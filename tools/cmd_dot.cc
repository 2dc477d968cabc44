// nkigraph dot FILE [-o OUT] [--view dataflow|barrier] ...: draws a graph
// with Graphviz.
#include <cstdint>
#include <iostream>
#include <optional>
#include <string>

#include "absl/strings/str_cat.h"
#include "tools/commands.h"
#include "tools/picture_flags.h"
#include "tools/run_support.h"
#include "util/file_io.h"
#include "viz/viz.h"

namespace nkigraph::tools {
namespace {

constexpr char kUsage[] =
    R"(usage: nkigraph dot FILE [-o OUT] [--view dataflow|barrier] [options]

Draws the graph FILE (.pb or .pbtxt, or a replay bundle's graph) with
Graphviz. Without -o, writes DOT
to stdout; with -o, the format follows OUT's extension: .dot (or .gv),
.svg or .png (laid out by dot, left to right in time).

views:
  dataflow   (default) one node per instruction, coloured by engine;
             edges for data dependencies derived from the memory the
             operands touch: read-after-write (solid, labelled with the
             tensor), write-after-read (dashed), write-after-write
             (dotted); boxes per core and per scope (kernel, layer,
             block, ...); sendrecv pairs and core barriers across cores
  barrier    one lane per program (core; rank x core when the graph has
             collectives), instructions in program order, and the
             synchronisation across lanes: core_barrier and collectives
             as thick lines, sendrecv pairs, ring permute steps; a
             deadlocked instruction is outlined in red

Big graphs: above --max-nodes visible nodes, scopes collapse into summary
nodes with instruction counts per engine; zoom in with --scope or --around.

options:
  -o, --output OUT       file to write (.dot, .gv, .svg, .png); '-' or
                         none: DOT to stdout
      --view VIEW        dataflow (default) or barrier
      --max-nodes N      node budget before scopes collapse (default
                         1000; 0: never collapse)
      --max-lane-nodes N barrier view: nodes per lane before the runs
                         between synchronisations collapse (default 60;
                         0: only --max-nodes applies)
      --scope PATH       only this scope and what it contains; PATH is a
                         scope path or part of one ("layer_3",
                         "k_tile")
      --instance N       with --scope: only its N-th instance on each core
                         (0-based: one layer or block of many)
      --around ID        only the instructions within --radius edges of
                         instruction ID
      --radius N         hops for --around (default 2)
      --core N           only core N
      --rank N           only rank N (barrier view of collectives)
      --page K           page K (from 1) of a picture wider than a screen:
                         as many whole columns as fit about 3,000 pixels,
                         with stubs for the edges that leave the page (a
                         wide picture's title says how many pages it has)
      --no-legend        leave out the legend
      --no-edge-labels   leave out edge labels
%s  -h, --help             show this help
)";

std::vector<FlagSpec> Flags() {
  std::vector<FlagSpec> flags = PictureFlags();
  flags.insert(flags.end(), {{"--output", "-o", true, false},
                             {"--view", "", true, false},
                             {"--max-lane-nodes", "", true, false},
                             {"--around", "", true, false},
                             {"--radius", "", true, false},
                             {"--page", "", true, false},
                             {"--no-legend", "", false, false},
                             {"--no-edge-labels", "", false, false}});
  return flags;
}

}  // namespace

int RunDot(const std::vector<std::string>& args) {
  int exit_code = kExitOk;
  std::optional<ParsedArgs> parsed =
      StartVerb(args, "dot", Flags(), kUsage, &exit_code);
  if (!parsed) return exit_code;
  absl::StatusOr<std::string> input_or = OnePositional(
      *parsed, "dot", "graph file", "nkigraph dot FILE [-o OUT.dot|.svg|.png]");
  if (!input_or.ok()) return ReportError("dot", input_or.status());
  const std::string& input = *input_or;

  viz::DotOptions options;
  if (parsed->Has("--view")) {
    absl::StatusOr<viz::View> view = viz::ParseView(parsed->Get("--view"));
    if (!view.ok()) return ReportError("dot", view.status());
    options.view = *view;
  }
  if (absl::Status status = ReadPictureFlags(*parsed, &options.filters,
                                             &options.view_options.max_nodes);
      !status.ok()) {
    return ReportError("dot", status);
  }
  for (const char* flag :
       {"--max-lane-nodes", "--around", "--radius", "--page"}) {
    if (!parsed->Has(flag)) continue;
    absl::StatusOr<int64_t> value = IntFlag(*parsed, flag);
    if (!value.ok()) return ReportError("dot", value.status());
    const std::string name = flag;
    if (name == "--max-lane-nodes") {
      options.view_options.max_lane_nodes = *value;
    }
    if (name == "--radius") options.filters.radius = *value;
    if (name == "--page") {
      if (*value < 1) {
        return ReportError(
            "dot", absl::StrCat("--page ", *value, " must be 1 or more"));
      }
      options.page = *value;
    }
    if (name == "--around") {
      if (*value < 0 || *value > UINT32_MAX) {
        return ReportError("dot", absl::StrCat("--around ", *value,
                                               " is not an instruction id"));
      }
      options.filters.around = static_cast<uint32_t>(*value);
    }
  }
  if (parsed->Has("--radius") && !parsed->Has("--around")) {
    return ReportError("dot", "--radius needs --around ID");
  }
  options.view_options.legend = !parsed->Has("--no-legend");
  options.view_options.edge_labels = !parsed->Has("--no-edge-labels");

  const std::string output = parsed->Get("--output", "-");
  viz::Format format = viz::Format::kDot;
  if (output != "-") {
    absl::StatusOr<viz::Format> by_name = viz::FormatForPath(output);
    if (!by_name.ok()) return ReportError("dot", by_name.status());
    format = *by_name;
  }

  absl::StatusOr<ArenaGraphSource> source = LoadGraphArg("dot", input);
  if (!source.ok()) return ReportError("dot", source.status());
  absl::StatusOr<std::string> rendered =
      viz::RenderGraph(*source->graph, options, format);
  if (!rendered.ok()) {
    return ReportError(
        "dot", WithContext(absl::StrCat("'", input, "'"), rendered.status()));
  }
  if (output == "-") {
    std::cout << *rendered;
    std::cout.flush();
    return std::cout ? kExitOk : kExitError;
  }
  if (absl::Status status = WriteFileAtomically(output, *rendered);
      !status.ok()) {
    return ReportError(
        "dot", absl::StrCat("cannot write '", output, "': ", status.message()));
  }
  return kExitOk;
}

}  // namespace nkigraph::tools
