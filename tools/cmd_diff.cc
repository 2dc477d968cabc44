// nkigraph diff A B: a semantic diff of two graph files.
#include <algorithm>
#include <cstdint>
#include <iostream>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "diff/diff.h"
#include "diff/format.h"
#include "tools/commands.h"
#include "tools/run_support.h"
#include "util/file_io.h"
#include "util/graph_io.h"

namespace nkigraph::tools {
namespace {

constexpr char kUsage[] =
    R"(usage: nkigraph diff A B [--strict] [--format text|json] [--limit N]

Compares two graphs (.pb or .pbtxt) by meaning, not by bytes:
  - kernel name, parameters and world, field by field;
  - tensors matched by name (repeated names, such as per-iteration tiles,
    by their order of allocation): added, removed, renamed, or changed
    space, dtype, shape, address, role;
  - each core's instruction stream, aligned on (opcode, operands,
    attributes) so that one inserted instruction is one insertion.
    Operands compare by tensor name, type and access pattern, never by
    id; a changed instruction lists the operands and attributes that
    differ.
Source locations and scope paths are ignored unless --strict.

Output: '+' added (b:<index in B>), '-' removed (a:<index in A>), '~'
changed, then a one-line summary. Exit status: 0 same, 1 different,
2 error.

options:
  --strict            also compare source file:line and scope paths
  --format FORMAT     text (default) or json
  --limit N           detail at most N tensor changes and N instruction
                      changes per core (default 1000; 0: all); the
                      summary always counts everything
%s  -h, --help          show this help

Either file may be a replay bundle: its graph is compared.
)";

constexpr int64_t kDefaultLimit = 1000;

}  // namespace

int RunDiff(const std::vector<std::string>& args) {
  int exit_code = kExitOk;
  // A JSON diff's errors are JSON too, unless asked otherwise.
  std::optional<ParsedArgs> parsed =
      StartVerb(args, "diff",
                {{"--strict", "", /*takes_value=*/false, /*repeated=*/false},
                 {"--format", "", /*takes_value=*/true, /*repeated=*/false},
                 {"--limit", "", /*takes_value=*/true, /*repeated=*/false}},
                kUsage, &exit_code, /*json_with_format=*/true);
  if (!parsed) return exit_code;
  if (parsed->positionals.size() != 2) {
    return ReportError("diff",
                       absl::StrCat("expected two graph files, got ",
                                    parsed->positionals.size(),
                                    " (usage: nkigraph diff A B [--strict] "
                                    "[--format text|json])"));
  }
  const std::string format = parsed->Get("--format", "text");
  if (format != "text" && format != "json") {
    return ReportError("diff", absl::StrCat("unknown --format '", format,
                                            "' (expected text or json)"));
  }
  int64_t limit = kDefaultLimit;
  if (parsed->Has("--limit")) {
    absl::StatusOr<uint64_t> count =
        ParseCount(parsed->Get("--limit"), "--limit");
    if (!count.ok()) return ReportError("diff", count.status().message());
    limit = static_cast<int64_t>(std::min<uint64_t>(*count, INT64_MAX));
  }

  const std::string& path_a = parsed->positionals[0];
  const std::string& path_b = parsed->positionals[1];
  // The two files load in parallel (each on its own arena).
  // Either may be a replay bundle, standing for its graph.
  absl::StatusOr<ArenaGraphSource> b = absl::UnknownError("not loaded");
  std::thread load_b([&] { b = LoadGraphArg("diff", path_b); });
  absl::StatusOr<ArenaGraphSource> a = LoadGraphArg("diff", path_a);
  load_b.join();
  if (!a.ok()) return ReportError("diff", a.status());
  if (!b.ok()) return ReportError("diff", b.status());

  diff::DiffOptions options;
  options.strict = parsed->Has("--strict");
  options.max_changes = limit;
  absl::StatusOr<diff::DiffResult> result =
      diff::Diff(*a->graph, *b->graph, options);
  if (!result.ok()) return ReportError("diff", result.status());

  diff::FormatOptions format_options;
  format_options.label_a = path_a;
  format_options.label_b = path_b;
  format_options.strict = options.strict;
  std::cout << (format == "json" ? diff::FormatJson(*result, format_options)
                                 : diff::FormatText(*result, format_options));
  std::cout.flush();
  return result->same() ? kExitOk : kExitFailure;
}

}  // namespace nkigraph::tools
