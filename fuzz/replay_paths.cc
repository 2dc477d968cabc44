// The path is compiled into this one file (fuzz/CMakeLists.txt), so that no
// other compile command depends on where the checkout is.
#include "fuzz/replay_paths.h"

#ifndef NKIGRAPH_SOURCE_DIR
#error "NKIGRAPH_SOURCE_DIR must name the source tree"
#endif

namespace nkigraph::fuzz {

const char* SourceDir() { return NKIGRAPH_SOURCE_DIR; }

}  // namespace nkigraph::fuzz
