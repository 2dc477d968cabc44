// nkigraph profile GRAPH: the cost model's estimate of when every
// instruction runs, summarised; optionally a Chrome trace and an SVG.
#include <algorithm>
#include <cstdint>
#include <iostream>
#include <memory>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "cost/cost_table.h"
#include "cost/report.h"
#include "cost/report_format.h"
#include "cost/schedule.h"
#include "cost/timeline_svg.h"
#include "cost/trace_json.h"
#include "graph/graph_index.h"
#include "ops/device_profile.h"
#include "tools/commands.h"
#include "tools/run_support.h"
#include "util/file_io.h"

namespace nkigraph::tools {
namespace {

constexpr char kVerb[] = "profile";

constexpr char kUsage[] =
    R"(usage: nkigraph profile GRAPH [--target NAME] [--trace FILE.json]
                        [--svg FILE.svg] [--format text|json] [--top N]
                        [--diagnostics json]

Estimates when every instruction of a graph (.pb or .pbtxt) runs, with the
per-target cost table (engine clocks and rates, DMA engines and bandwidth,
HBM and link bandwidth; see docs/architecture.md "The cost model"). The
numbers are an estimate from public figures, not a measurement (how far
they are from hardware: docs/cost_calibration.md). Prints the estimated
latency, how many dynamic offsets depend on input data (the others are
worked out from values known before the run, so they touch exactly their
rows), per-engine busy time and utilisation, HBM/SBUF/PSUM
traffic by direction, FLOPs, the roofline bound and the estimate's ratio
to it, the critical path by scope and kernel source line, and totals per
scope instance.

options:
  --target NAME       cost table: trn1, trn2 or trn3 (default: the graph's)
  --trace FILE.json   write a Chrome Trace Event file (Perfetto UI,
                      chrome://tracing): one process per core, one thread
                      per engine and DMA engine
  --svg FILE.svg      draw the timeline
  --format FORMAT     text (default) or json (one JSON document; errors
                      then as JSON lines on stderr, as with --diagnostics
                      json)
  --top N             critical-path lines and scope instances per scope to
                      list (default 10; 0: all)
%s  -h, --help          show this help

GRAPH may also be a replay bundle: its graph is profiled.

Exit status: 0 success, 2 unreadable or invalid graph, or bad usage.
)";

}  // namespace

int RunProfile(const std::vector<std::string>& args) {
  int exit_code = kExitOk;
  // A JSON report's errors are JSON too, unless asked otherwise.
  std::optional<ParsedArgs> parsed =
      StartVerb(args, kVerb,
                {{"--target", "", true, false},
                 {"--trace", "", true, false},
                 {"--svg", "", true, false},
                 {"--format", "", true, false},
                 {"--top", "", true, false}},
                kUsage, &exit_code, /*json_with_format=*/true);
  if (!parsed) return exit_code;
  absl::StatusOr<std::string> path = OnePositional(
      *parsed, kVerb, "graph", "nkigraph profile GRAPH [--target NAME] ...");
  if (!path.ok()) return ReportError(kVerb, path.status());
  const std::string format = parsed->Get("--format", "text");
  if (format != "text" && format != "json") {
    return ReportError(kVerb, absl::StrCat("unknown --format '", format,
                                           "' (expected text or json)"));
  }
  int top = 10;
  if (parsed->Has("--top")) {
    absl::StatusOr<uint64_t> count = ParseCount(parsed->Get("--top"), "--top");
    if (!count.ok()) return ReportError(kVerb, count.status().message());
    top = static_cast<int>(std::min<uint64_t>(*count, INT32_MAX));
  }
  absl::StatusOr<ArenaGraphSource> source = LoadGraphArg(kVerb, *path);
  if (!source.ok()) return ReportError(kVerb, source.status());
  const proto::Graph* loaded = &*source->graph;
  proto::Target target = loaded->world().target();
  if (parsed->Has("--target")) {
    absl::StatusOr<proto::Target> named =
        ops::ParseTarget(parsed->Get("--target"));
    if (!named.ok()) return ReportError(kVerb, named.status());
    target = *named;
  }
  absl::StatusOr<std::unique_ptr<graph::GraphIndex>> index =
      graph::GraphIndex::Build(*loaded);
  if (!index.ok()) return ReportError(kVerb, index.status());
  absl::StatusOr<cost::Schedule> schedule =
      cost::ScheduleGraph(**index, cost::CostTableFor(target));
  if (!schedule.ok()) return ReportError(kVerb, schedule.status());
  const cost::Report report = cost::BuildReport(*schedule, top);
  if (parsed->Has("--trace")) {
    if (absl::Status status =
            cost::WriteChromeTraceFile(*schedule, parsed->Get("--trace"));
        !status.ok()) {
      return ReportError(kVerb, status);
    }
  }
  if (parsed->Has("--svg")) {
    std::ostringstream svg;
    if (absl::Status status = cost::WriteTimelineSvg(*schedule, report, svg);
        !status.ok()) {
      return ReportError(kVerb, status);
    }
    if (absl::Status status =
            WriteFileAtomically(parsed->Get("--svg"), svg.str());
        !status.ok()) {
      return ReportError(kVerb,
                         absl::StrCat("cannot write '", parsed->Get("--svg"),
                                      "': ", status.message()));
    }
  }
  if (format == "json") {
    cost::WriteReportJson(report, std::cout);
  } else {
    cost::WriteReportText(report, top, std::cout);
  }
  std::cout.flush();
  return std::cout ? kExitOk : kExitError;
}

}  // namespace nkigraph::tools
