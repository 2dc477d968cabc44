// The `nkigraph` command: the CLI with the project's own kernels.
#include "tools/cli.h"

int main(int argc, char** argv) { return nkigraph::tools::CliMain(argc, argv); }
