#include "tools/cli.h"

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "tools/commands.h"

namespace nkigraph::tools {

int CliMain(int argc, char** argv,
            absl::FunctionRef<void(kernels::KernelRegistry&)> add_kernels) {
  if (absl::Status status = kernels::KernelRegistry::AddToGlobal(add_kernels);
      !status.ok()) {
    return ReportError("", status);
  }
  return CliMain(argc, argv);
}

int CliMain(int argc, char** argv) {
  return Main(std::vector<std::string>(argv + 1, argv + argc));
}

}  // namespace nkigraph::tools
