// my_nkigraph: the nkigraph command with this project's kernels added to
// the built-in ones. `my_nkigraph list`, `trace row_softmax`, `verify`,
// `run`, `dot`, `diff`, `profile`, ... work as `nkigraph` does.
#include "row_softmax.h"
#include "tools/cli.h"

int main(int argc, char** argv) {
  return nkigraph::tools::CliMain(
      argc, argv, [](nkigraph::kernels::KernelRegistry& registry) {
        registry.Register(my_kernels::RowSoftmaxSpec());
      });
}
