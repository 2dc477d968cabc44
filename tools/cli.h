#ifndef NKIGRAPH_TOOLS_CLI_H_
#define NKIGRAPH_TOOLS_CLI_H_

// The nkigraph command line, as a library. The `nkigraph` command is
//
//   int main(int argc, char** argv) { return nkigraph::tools::CliMain(argc,
//   argv); }
//
// and a project with kernels of its own makes its own command the same
// way, registering them first: every verb (list, trace, run, verify, dot,
// diff, profile, ...) then knows them beside the built-in kernels.
//
//   int main(int argc, char** argv) {
//     return nkigraph::tools::CliMain(
//         argc, argv, [](nkigraph::kernels::KernelRegistry& registry) {
//           registry.Register(my_project::RowSoftmaxSpec());
//         });
//   }
//
// Link the nkigraph::cli target (find_package(nkigraph)).

#include <string>
#include <vector>

#include "absl/functional/function_ref.h"
#include "kernels/registry.h"

namespace nkigraph::tools {

// Runs `nkigraph ARGS...`: `args` are the words after the program name
// ("trace", "conv1d", "-o", "conv.pb"). Returns the exit code: 0 success,
// 1 a device error or a difference, 2 bad usage or unusable input.
int Main(const std::vector<std::string>& args);

// main() of an nkigraph command: adds the kernels `add_kernels` registers
// to the global registry (KernelRegistry::AddToGlobal), then runs Main on
// argv[1..]. A kernel that cannot be added (its name is taken) is
// reported like a usage error, exit code 2.
int CliMain(int argc, char** argv,
            absl::FunctionRef<void(kernels::KernelRegistry&)> add_kernels);
// The command with the built-in kernels only.
int CliMain(int argc, char** argv);

}  // namespace nkigraph::tools

#endif  // NKIGRAPH_TOOLS_CLI_H_
