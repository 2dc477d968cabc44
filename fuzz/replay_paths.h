#ifndef NKIGRAPH_FUZZ_REPLAY_PATHS_H_
#define NKIGRAPH_FUZZ_REPLAY_PATHS_H_

namespace nkigraph::fuzz {

// The source tree's root: tests/fuzz_regressions and tests/golden are
// under it.
const char* SourceDir();

}  // namespace nkigraph::fuzz

#endif  // NKIGRAPH_FUZZ_REPLAY_PATHS_H_
