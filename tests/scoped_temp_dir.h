#ifndef NKIGRAPH_TESTS_SCOPED_TEMP_DIR_H_
#define NKIGRAPH_TESTS_SCOPED_TEMP_DIR_H_

#include <errno.h>
#include <stdlib.h>

#include <cstdio>
#include <cstring>
#include <filesystem>
#include <string>
#include <system_error>

#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "gtest/gtest.h"

namespace nkigraph::testing {

// A fresh directory under the test temp dir, removed with all it holds when
// this object goes. ctest runs each test case of a binary as its own process,
// in parallel with the others, so a fixed name directly under
// ::testing::TempDir() is shared between test cases (and with any other run of
// the suite): one test reads what another just wrote. Every test that writes
// a file takes one of these.
class ScopedTempDir {
 public:
  explicit ScopedTempDir(absl::string_view prefix = "nkigraph_test") {
    std::string pattern =
        absl::StrCat(::testing::TempDir(), "/", prefix, "_XXXXXX");
    if (mkdtemp(pattern.data()) == nullptr) {
      // No test can go on: with no directory its files would be written
      // wherever an empty path leads.
      std::fprintf(stderr, "cannot create a temporary directory %s: %s\n",
                   pattern.c_str(), std::strerror(errno));
      std::abort();
    }
    path_ = pattern;
  }
  ~ScopedTempDir() {
    std::error_code ignored;
    std::filesystem::remove_all(path_, ignored);
  }
  ScopedTempDir(const ScopedTempDir&) = delete;
  ScopedTempDir& operator=(const ScopedTempDir&) = delete;

  // The directory itself.
  const std::string& path() const { return path_; }
  // `name` inside the directory.
  std::string Path(absl::string_view name) const {
    return absl::StrCat(path_, "/", name);
  }

 private:
  std::string path_;
};

}  // namespace nkigraph::testing

#endif  // NKIGRAPH_TESTS_SCOPED_TEMP_DIR_H_
