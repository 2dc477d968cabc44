#ifndef NKIGRAPH_TOOLS_COMMANDS_H_
#define NKIGRAPH_TOOLS_COMMANDS_H_

// The verbs of the `nkigraph` command. Each lives in its own cmd_<verb>.cc
// and is listed once in main.cc's command table. A verb gets its arguments
// after the verb name and returns the process exit code.

#include <map>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "kernels/registry.h"
#include "proto/nkigraph.pb.h"
#include "util/diagnostic.h"

namespace nkigraph::tools {

// Exit codes shared by every verb.
inline constexpr int kExitOk = 0;
inline constexpr int kExitFailure = 1;  // the command ran; the answer is "no"
inline constexpr int kExitError = 2;    // usage error or unusable input

int RunList(const std::vector<std::string>& args);
int RunTrace(const std::vector<std::string>& args);
int RunInfo(const std::vector<std::string>& args);
int RunDot(const std::vector<std::string>& args);
int RunDiff(const std::vector<std::string>& args);
int RunRun(const std::vector<std::string>& args);
int RunCheck(const std::vector<std::string>& args);
int RunReplay(const std::vector<std::string>& args);
int RunVerify(const std::vector<std::string>& args);
int RunProfile(const std::vector<std::string>& args);
int RunView(const std::vector<std::string>& args);

// How errors and problems are printed: text, or with `--diagnostics json`
// one JSON object per line (util/diagnostic_json.h). A process-wide
// setting: a verb sets it once, from its arguments, before it reports.
enum class DiagnosticsFormat { kText, kJson };
void SetDiagnosticsFormat(DiagnosticsFormat format);
DiagnosticsFormat CurrentDiagnosticsFormat();

// Prints `nkigraph <verb>: error: <message>` on stderr and returns
// kExitError: one line for a message without newlines (a newline in it
// becomes "; "); a status carrying a diagnostic with notes (every problem
// of an invalid graph, up to the 20 listed and a count of the rest) prints
// each note on its own indented line. With JSON diagnostics, the JSON
// lines instead (kind "usage" for an error with no diagnostic).
int ReportError(absl::string_view verb, absl::string_view message);
int ReportError(absl::string_view verb, const absl::Status& status);

// `status` with "<context>: " before its message, keeping its code and
// diagnostic (which JSON lines print without the context).
absl::Status WithContext(absl::string_view context, const absl::Status& status);

// A diagnostic the verb lists as a finding (check's problems): text
// `<prefix>: <rendered>` (each note on its own line), or its JSON lines.
void PrintDiagnostic(std::ostream& out, absl::string_view verb,
                     absl::string_view prefix, const Diagnostic& diagnostic);

// --- Argument parsing shared by the verbs --------------------------------

struct FlagSpec {
  std::string name;   // "--output"
  std::string alias;  // "-o", or empty
  bool takes_value = true;
  bool repeated = false;
};

struct ParsedArgs {
  bool help = false;  // -h or --help anywhere
  std::vector<std::string> positionals;
  // Values by FlagSpec::name, in command-line order; a flag without a value
  // records "".
  std::map<std::string, std::vector<std::string>> flags;

  bool Has(const std::string& name) const { return flags.count(name) > 0; }
  // The flag's value, or `fallback` when it was not given.
  std::string Get(const std::string& name,
                  const std::string& fallback = "") const;
  std::vector<std::string> All(const std::string& name) const;
};

// Accepts `--name value`, `--name=value`, `-o value`, `--` (the rest is
// positional) and `-` as a positional. Unknown flags, missing values and
// non-repeated flags given twice are errors.
absl::StatusOr<ParsedArgs> ParseArgs(const std::vector<std::string>& args,
                                     const std::vector<FlagSpec>& flags);

// The verb's one positional argument (a file or kernel name, `what`);
// otherwise an error: "no <what> given (usage: <usage>)", or "unexpected
// argument 'X'; <verb> takes one <what>".
absl::StatusOr<std::string> OnePositional(const ParsedArgs& parsed,
                                          absl::string_view verb,
                                          absl::string_view what,
                                          absl::string_view usage);

// The --diagnostics text|json option of every verb that reads a graph,
// and its use: sets the process's format; an error for another value.
FlagSpec DiagnosticsFlag();
absl::Status ApplyDiagnosticsFlag(const ParsedArgs& parsed);
inline constexpr char kDiagnosticsHelp[] =
    "  --diagnostics FORMAT   text (default) or json: errors and problems as\n"
    "                         JSON lines (kind, rank, core, instruction_id,\n"
    "                         opcode, file, line, scope, tensor, message)\n";

// The start every verb reading a graph shares: parses `args` with `flags`
// and --diagnostics; for --help prints `usage` (its "%s" standing for
// kDiagnosticsHelp); applies --diagnostics. With `json_with_format`,
// --format json makes the errors JSON too unless --diagnostics is given.
// nullopt once it has printed the help or reported an error: the verb
// then returns `*exit_code`.
std::optional<ParsedArgs> StartVerb(const std::vector<std::string>& args,
                                    absl::string_view verb,
                                    std::vector<FlagSpec> flags,
                                    absl::string_view usage, int* exit_code,
                                    bool json_with_format = false);

// Splits `key=value` (the value may be empty or contain '='); `what` names
// the flag in the error.
absl::StatusOr<std::pair<std::string, std::string>> SplitKeyValue(
    absl::string_view text, absl::string_view what);

// --- Shared printing -----------------------------------------------------

// A kernel's summary, parameters, inputs and outputs, as `list` shows them.
void PrintKernel(const kernels::KernelDef& def, std::ostream& out);

// A graph's summary, as `info` prints it.
void PrintInfo(const proto::Graph& graph, std::ostream& out);

}  // namespace nkigraph::tools

#endif  // NKIGRAPH_TOOLS_COMMANDS_H_
