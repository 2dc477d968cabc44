// The build's paths, compiled into this one file (tests/CMakeLists.txt) so
// that no other test file's compile command depends on where the checkout is.
#include "tests/test_paths.h"

#ifndef NKIGRAPH_SOURCE_DIR
#error "NKIGRAPH_SOURCE_DIR must name the source tree"
#endif
#ifndef NKIGRAPH_CLI_PATH
#error "NKIGRAPH_CLI_PATH must name the nkigraph binary"
#endif

namespace nkigraph::testing {

const char* SourceDir() { return NKIGRAPH_SOURCE_DIR; }
const char* CliPath() { return NKIGRAPH_CLI_PATH; }

}  // namespace nkigraph::testing
