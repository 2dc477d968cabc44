// Argument parsing and error reporting shared by the verbs.
#include <algorithm>
#include <iostream>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/cord.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "absl/strings/str_split.h"
#include "tools/commands.h"
#include "util/diagnostic_json.h"

namespace nkigraph::tools {

namespace {

DiagnosticsFormat diagnostics_format = DiagnosticsFormat::kText;

std::string OneLine(absl::string_view text) {
  return absl::StrReplaceAll(text,
                             {{"\r\n", "; "}, {"\n", "; "}, {"\r", "; "}});
}

std::string ErrorPrefix(absl::string_view verb) {
  return absl::StrCat("nkigraph", verb.empty() ? "" : " ", verb, ": error: ");
}

}  // namespace

void SetDiagnosticsFormat(DiagnosticsFormat format) {
  diagnostics_format = format;
}

DiagnosticsFormat CurrentDiagnosticsFormat() { return diagnostics_format; }

int ReportError(absl::string_view verb, absl::string_view message) {
  if (diagnostics_format == DiagnosticsFormat::kJson) {
    std::cerr << UsageErrorJsonLine(message, verb) << std::flush;
    return kExitError;
  }
  std::cerr << ErrorPrefix(verb) << OneLine(message) << std::endl;
  return kExitError;
}

int ReportError(absl::string_view verb, const absl::Status& status) {
  const std::optional<Diagnostic> diagnostic = DiagnosticOf(status);
  if (!diagnostic.has_value()) return ReportError(verb, status.message());
  if (diagnostics_format == DiagnosticsFormat::kJson) {
    std::cerr << DiagnosticJsonLines(*diagnostic, verb) << std::flush;
    return kExitError;
  }
  if (diagnostic->notes.empty()) return ReportError(verb, status.message());
  // The message is Render's: the diagnostic's line (after any context),
  // then one line per note.
  const std::vector<absl::string_view> lines =
      absl::StrSplit(status.message(), '\n');
  std::cerr << ErrorPrefix(verb) << lines[0] << "\n";
  for (size_t i = 1; i < lines.size(); ++i) std::cerr << lines[i] << "\n";
  std::cerr << std::flush;
  return kExitError;
}

absl::Status WithContext(absl::string_view context,
                         const absl::Status& status) {
  absl::Status wrapped(status.code(),
                       absl::StrCat(context, ": ", status.message()));
  status.ForEachPayload([&](absl::string_view url, const absl::Cord& payload) {
    wrapped.SetPayload(url, payload);
  });
  return wrapped;
}

void PrintDiagnostic(std::ostream& out, absl::string_view verb,
                     absl::string_view prefix, const Diagnostic& diagnostic) {
  if (diagnostics_format == DiagnosticsFormat::kJson) {
    out << DiagnosticJsonLines(diagnostic, verb);
    return;
  }
  out << prefix << ": " << Render(diagnostic) << "\n";
}

FlagSpec DiagnosticsFlag() {
  return {"--diagnostics", "", /*takes_value=*/true, /*repeated=*/false};
}

std::optional<ParsedArgs> StartVerb(const std::vector<std::string>& args,
                                    absl::string_view verb,
                                    std::vector<FlagSpec> flags,
                                    absl::string_view usage, int* exit_code,
                                    bool json_with_format) {
  flags.push_back(DiagnosticsFlag());
  absl::StatusOr<ParsedArgs> parsed = ParseArgs(args, flags);
  if (!parsed.ok()) {
    *exit_code = ReportError(verb, parsed.status());
    return std::nullopt;
  }
  if (parsed->help) {
    std::cout << absl::StrReplaceAll(usage, {{"%s", kDiagnosticsHelp}});
    *exit_code = kExitOk;
    return std::nullopt;
  }
  if (json_with_format && parsed->Get("--format") == "json" &&
      !parsed->Has("--diagnostics")) {
    SetDiagnosticsFormat(DiagnosticsFormat::kJson);
  } else if (absl::Status status = ApplyDiagnosticsFlag(*parsed);
             !status.ok()) {
    *exit_code = ReportError(verb, status);
    return std::nullopt;
  }
  return *std::move(parsed);
}

absl::Status ApplyDiagnosticsFlag(const ParsedArgs& parsed) {
  const std::string format = parsed.Get("--diagnostics", "text");
  if (format == "json") {
    SetDiagnosticsFormat(DiagnosticsFormat::kJson);
  } else if (format == "text") {
    SetDiagnosticsFormat(DiagnosticsFormat::kText);
  } else {
    return absl::InvalidArgumentError(
        absl::StrCat("--diagnostics is 'text' or 'json', not '", format, "'"));
  }
  return absl::OkStatus();
}

std::string ParsedArgs::Get(const std::string& name,
                            const std::string& fallback) const {
  auto it = flags.find(name);
  if (it == flags.end() || it->second.empty()) return fallback;
  return it->second.back();
}

std::vector<std::string> ParsedArgs::All(const std::string& name) const {
  auto it = flags.find(name);
  return it == flags.end() ? std::vector<std::string>{} : it->second;
}

absl::StatusOr<ParsedArgs> ParseArgs(const std::vector<std::string>& args,
                                     const std::vector<FlagSpec>& flags) {
  ParsedArgs parsed;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& arg = args[i];
    if (arg == "--") {
      parsed.positionals.insert(parsed.positionals.end(), args.begin() + i + 1,
                                args.end());
      break;
    }
    if (arg == "-h" || arg == "--help") {
      parsed.help = true;
      continue;
    }
    if (arg.size() < 2 || arg[0] != '-') {
      parsed.positionals.push_back(arg);
      continue;
    }
    // --name=value
    std::string name = arg;
    std::string value;
    bool inline_value = false;
    if (arg.rfind("--", 0) == 0) {
      const size_t eq = arg.find('=');
      if (eq != std::string::npos) {
        name = arg.substr(0, eq);
        value = arg.substr(eq + 1);
        inline_value = true;
      }
    }
    auto spec =
        std::find_if(flags.begin(), flags.end(), [&](const FlagSpec& f) {
          return f.name == name || (!f.alias.empty() && f.alias == name);
        });
    if (spec == flags.end()) {
      return absl::InvalidArgumentError(
          absl::StrCat("unknown option '", name, "' (see --help)"));
    }
    if (spec->takes_value) {
      if (!inline_value) {
        if (i + 1 >= args.size()) {
          return absl::InvalidArgumentError(
              absl::StrCat("option '", name, "' needs a value"));
        }
        value = args[++i];
      }
    } else if (inline_value) {
      return absl::InvalidArgumentError(
          absl::StrCat("option '", name, "' takes no value"));
    }
    std::vector<std::string>& values = parsed.flags[spec->name];
    if (!values.empty() && !spec->repeated) {
      return absl::InvalidArgumentError(
          absl::StrCat("option '", spec->name, "' is given more than once"));
    }
    values.push_back(value);
  }
  return parsed;
}

absl::StatusOr<std::string> OnePositional(const ParsedArgs& parsed,
                                          absl::string_view verb,
                                          absl::string_view what,
                                          absl::string_view usage) {
  if (parsed.positionals.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat("no ", what, " given (usage: ", usage, ")"));
  }
  if (parsed.positionals.size() > 1) {
    return absl::InvalidArgumentError(absl::StrCat("unexpected argument '",
                                                   parsed.positionals[1], "'; ",
                                                   verb, " takes one ", what));
  }
  return parsed.positionals[0];
}

absl::StatusOr<std::pair<std::string, std::string>> SplitKeyValue(
    absl::string_view text, absl::string_view what) {
  const size_t eq = text.find('=');
  if (eq == absl::string_view::npos || eq == 0) {
    return absl::InvalidArgumentError(
        absl::StrCat(what, " expects NAME=VALUE, not '", text, "'"));
  }
  return std::make_pair(std::string(text.substr(0, eq)),
                        std::string(text.substr(eq + 1)));
}

}  // namespace nkigraph::tools
