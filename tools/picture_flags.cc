// Reads and checks the picture flags `dot` and `view` share.
#include "tools/picture_flags.h"

#include <string>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "util/status_macros.h"

namespace nkigraph::tools {

std::vector<FlagSpec> PictureFlags() {
  return {{"--scope", "", true, false},
          {"--instance", "", true, false},
          {"--core", "", true, false},
          {"--rank", "", true, false},
          {"--max-nodes", "", true, false}};
}

absl::StatusOr<int64_t> IntFlag(const ParsedArgs& args,
                                const std::string& flag) {
  int64_t value = 0;
  const std::string text = args.Get(flag);
  if (!absl::SimpleAtoi(text, &value)) {
    return absl::InvalidArgumentError(
        absl::StrCat(flag, " takes an integer, not '", text, "'"));
  }
  return value;
}

absl::Status ReadPictureFlags(const ParsedArgs& args, viz::Filters* filters,
                              int64_t* max_nodes) {
  for (const std::string flag : {"--instance", "--core", "--rank"}) {
    if (!args.Has(flag)) continue;
    NKI_ASSIGN_OR_RETURN(const int64_t value, IntFlag(args, flag));
    if (flag == "--instance") filters->instance = value;
    if (flag == "--core") filters->core = value;
    if (flag == "--rank") filters->rank = value;
  }
  if (args.Has("--max-nodes")) {
    NKI_ASSIGN_OR_RETURN(*max_nodes, IntFlag(args, "--max-nodes"));
  }
  filters->scope = args.Get("--scope");
  if (args.Has("--scope") && filters->scope.empty()) {
    return absl::InvalidArgumentError("--scope needs a scope path");
  }
  if (args.Has("--instance") && !args.Has("--scope")) {
    return absl::InvalidArgumentError("--instance needs --scope PATH");
  }
  return absl::OkStatus();
}

}  // namespace nkigraph::tools
