#ifndef NKIGRAPH_TESTS_TEST_PATHS_H_
#define NKIGRAPH_TESTS_TEST_PATHS_H_

namespace nkigraph::testing {

// The source tree's root (goldens live under it).
const char* SourceDir();

// The built nkigraph binary, run by the CLI tests.
const char* CliPath();

}  // namespace nkigraph::testing

#endif  // NKIGRAPH_TESTS_TEST_PATHS_H_
