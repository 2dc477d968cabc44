#ifndef NKIGRAPH_TESTS_CLI_FIXTURE_H_
#define NKIGRAPH_TESTS_CLI_FIXTURE_H_

// What every test of the nkigraph command line needs: a fresh temporary
// directory per test and a way to run the built binary (testing::CliPath(),
// set by CMake) as a separate process, capturing its exit code, stdout and
// stderr.

#include <stdlib.h>
#include <sys/wait.h>

#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/scoped_temp_dir.h"
#include "tests/test_paths.h"
#include "tests/test_util.h"
#include "util/graph_io.h"
#include "util/npy.h"

namespace nkigraph::testing {

struct CliResult {
  int exit_code = -1;
  std::string out;
  std::string err;
};

// The whole file; empty if it cannot be read.
inline std::string Slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream buffer;
  buffer << in.rdbuf();
  return buffer.str();
}

// `text` split at newlines, without a trailing empty line.
inline std::vector<std::string> Lines(const std::string& text) {
  std::vector<std::string> lines = absl::StrSplit(text, '\n');
  if (!lines.empty() && lines.back().empty()) lines.pop_back();
  return lines;
}

class CliFixture : public ::testing::Test {
 protected:
  std::string Path(const std::string& name) const { return dir_.Path(name); }

  // Writes never.pb, whose second instruction (#1, traced at line `*line`
  // of this file) copies never-written SBUF tensor 'a' to the output (a
  // device error), and an input x.npy for it; returns the graph's path.
  std::string NeverWrittenGraph(int* line = nullptr) const {
    absl::StatusOr<proto::Graph> graph = Trace1([&](builder::Tracer& t) {
      using builder::Buffer;
      builder::Tensor x = t.Input("x", {4, 4}, proto::FLOAT32);
      builder::Tensor out =
          t.Allocate({4, 4}, proto::FLOAT32, Buffer::kSharedHbm, "o");
      builder::Tensor a =
          builder::ndarray({4, 4}, proto::FLOAT32, Buffer::kSbuf, "a");
      builder::Tensor b =
          builder::ndarray({4, 4}, proto::FLOAT32, Buffer::kSbuf, "b");
      builder::isa::dma_copy(b, x);
      if (line != nullptr) *line = __LINE__ + 1;
      builder::isa::dma_copy(out, a);
      t.Output("out", out);
    });
    EXPECT_TRUE(graph.ok()) << graph.status();
    EXPECT_TRUE(WriteGraph(*graph, Path("never.pb")).ok());
    EXPECT_TRUE(
        WriteNpy(Path("x.npy"), Floats("", {4, 4}, std::vector<float>(16, 2)))
            .ok());
    return Path("never.pb");
  }

  // Runs `nkigraph <args>` (args are shell words, already quoted as needed).
  CliResult RunCli(const std::string& args) {
    const std::string out = Path("stdout.txt");
    const std::string err = Path("stderr.txt");
    const std::string command = absl::StrCat("'", CliPath(), "' ", args, " >'",
                                             out, "' 2>'", err, "' </dev/null");
    const int status = std::system(command.c_str());
    CliResult result;
    if (status != -1 && WIFEXITED(status)) {
      result.exit_code = WEXITSTATUS(status);
    }
    result.out = Slurp(out);
    result.err = Slurp(err);
    return result;
  }

  // Exit code 2, nothing on stdout, and exactly one stderr line starting
  // with "nkigraph <verb>: error: " and containing every fragment.
  static void ExpectOneLineUsageError(
      const CliResult& r, const std::string& verb,
      const std::vector<std::string>& fragments) {
    EXPECT_EQ(r.exit_code, 2);
    EXPECT_EQ(r.out, "");
    const std::vector<std::string> lines = Lines(r.err);
    ASSERT_EQ(lines.size(), 1u) << r.err;
    EXPECT_THAT(lines[0], ::testing::StartsWith(
                              absl::StrCat("nkigraph ", verb, ": error: ")));
    for (const std::string& fragment : fragments) {
      EXPECT_THAT(lines[0], ::testing::HasSubstr(fragment));
    }
  }

  const ScopedTempDir dir_{"nkigraph_cli"};
};

}  // namespace nkigraph::testing

#endif  // NKIGRAPH_TESTS_CLI_FIXTURE_H_
