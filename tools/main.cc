// nkigraph: trace, inspect and check NKI-style kernel graphs.
//
// `nkigraph <command> [args...]`; each command lives in tools/cmd_<name>.cc
// and is listed once in kCommands below. main() is tools/nkigraph_main.cc
// (or a user's own, through tools/cli.h).
#include <iostream>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "tools/cli.h"
#include "tools/commands.h"

namespace nkigraph::tools {
namespace {

struct Command {
  const char* name;
  const char* summary;
  int (*run)(const std::vector<std::string>& args);
};

constexpr Command kCommands[] = {
    {"list",
     "list the registered kernels, their parameters, inputs and "
     "outputs",
     RunList},
    {"trace", "trace a registered kernel into a graph file (.pb or .pbtxt)",
     RunTrace},
    {"info", "summarize a graph file", RunInfo},
    {"dot", "draw a graph with Graphviz (DOT, SVG or PNG)", RunDot},
    {"diff", "semantic diff of two graph files (exit 1 if they differ)",
     RunDiff},
    {"check", "validate a graph file and list every problem", RunCheck},
    {"run", "execute a graph on the interpreter (.npy inputs and outputs)",
     RunRun},
    {"replay", "re-execute a replay bundle and compare its outputs", RunReplay},
    {"verify", "run a registered kernel against its reference", RunVerify},
    {"profile",
     "estimate per-engine timing with the cost model (report, trace, SVG)",
     RunProfile},
    {"view",
     "write one self-contained HTML page to explore a graph (pictures, "
     "timeline, values)",
     RunView},
};

void PrintUsage(std::ostream& out) {
  out << "usage: nkigraph <command> [args...]\n\n"
         "Traces NKI-style kernels into instruction graphs and inspects "
         "them.\n\ncommands:\n";
  for (const Command& command : kCommands) {
    out << absl::StrFormat("  %-7s %s\n", command.name, command.summary);
  }
  out << "\nRun 'nkigraph <command> --help' for a command's arguments.\n";
}

std::string CommandNames() {
  std::vector<std::string> names;
  for (const Command& command : kCommands) names.push_back(command.name);
  return absl::StrJoin(names, ", ");
}

const Command* FindCommand(const std::string& name) {
  for (const Command& command : kCommands) {
    if (name == command.name) return &command;
  }
  return nullptr;
}

}  // namespace

int Main(const std::vector<std::string>& args) {
  if (args.empty()) {
    return ReportError("", "no command given (commands: " + CommandNames() +
                               "; see nkigraph --help)");
  }
  const std::string& verb = args[0];
  if (verb == "-h" || verb == "--help") {
    PrintUsage(std::cout);
    return kExitOk;
  }
  std::vector<std::string> rest(args.begin() + 1, args.end());
  if (verb == "help") {
    if (rest.empty()) {
      PrintUsage(std::cout);
      return kExitOk;
    }
    const Command* command = FindCommand(rest[0]);
    if (command == nullptr) {
      return ReportError("help",
                         absl::StrCat("unknown command '", rest[0],
                                      "' (commands: ", CommandNames(), ")"));
    }
    return command->run({"--help"});
  }
  const Command* command = FindCommand(verb);
  if (command == nullptr) {
    return ReportError(verb, absl::StrCat("unknown command '", verb,
                                          "' (commands: ", CommandNames(),
                                          "; see nkigraph --help)"));
  }
  return command->run(rest);
}

}  // namespace nkigraph::tools
