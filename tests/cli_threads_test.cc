// --threads and --quiet on the verbs that run graphs (run, replay,
// verify): every thread count writes the same bytes, bad counts are usage
// errors, and without a terminal nothing but errors reaches stderr (the
// fixture's stderr is a file, never a terminal).
#include <string>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/cli_fixture.h"

namespace nkigraph {
namespace {

using testing::CliResult;
using ::testing::HasSubstr;
using testing::Slurp;

class CliThreadsTest : public testing::CliFixture {
 protected:
  // fgcc over 2 ranks x 2 cores, traced once per test.
  std::string TraceRing() {
    const std::string graph = Path("fgcc.pb");
    const CliResult r = RunCli(absl::StrCat(
        "trace fgcc --set tp_degree=2 --set m=128 --set k=128 --set n=128 "
        "-o '",
        graph, "'"));
    EXPECT_EQ(r.exit_code, 0) << r.err;
    return graph;
  }
};

TEST_F(CliThreadsTest, RunWritesTheSameBytesOnEveryThreadCountAndIsSilent) {
  const std::string graph = TraceRing();
  std::string first;
  for (const char* threads : {"1", "2", "8"}) {
    const std::string dir = Path(absl::StrCat("out", threads));
    const CliResult r = RunCli(
        absl::StrCat("run '", graph, "' --random-inputs 5 -o '", dir,
                     "' --threads ", threads, " --save-bundle '", dir, ".pb'"));
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_EQ(r.err, "");  // no progress line without a terminal
    const std::string out = Slurp(dir + "/out.npy");
    ASSERT_FALSE(out.empty());
    if (first.empty()) first = out;
    EXPECT_TRUE(out == first) << threads << " threads";
    // Replayed on another thread count, bit for bit.
    const CliResult replay =
        RunCli(absl::StrCat("replay '", dir, ".pb' --threads 3 --quiet"));
    EXPECT_EQ(replay.exit_code, 0) << replay.out << replay.err;
    EXPECT_THAT(replay.out, HasSubstr("identical bit for bit"));
    EXPECT_EQ(replay.err, "");
  }
}

TEST_F(CliThreadsTest, VerifyTakesThreadsAndQuiet) {
  const CliResult r = RunCli(
      "verify fgcc --set tp_degree=2 --set m=128 --set k=128 --set n=128 "
      "--threads 2 -q");
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_THAT(r.out, HasSubstr("fgcc: PASS"));
  EXPECT_EQ(r.err, "");
}

TEST_F(CliThreadsTest, AThreadCountOutsideItsRangeIsAUsageError) {
  const std::string graph = TraceRing();
  ExpectOneLineUsageError(
      RunCli(absl::StrCat("run '", graph, "' --random-inputs 1 -o '", Path("o"),
                          "' --threads 0")),
      "run", {"--threads is 0", "between 1 and 1024"});
  ExpectOneLineUsageError(
      RunCli(absl::StrCat("run '", graph, "' --random-inputs 1 -o '", Path("o"),
                          "' --threads two")),
      "run", {"--threads expects a non-negative integer, not 'two'"});
  ExpectOneLineUsageError(RunCli("verify fgcc --threads 5000"), "verify",
                          {"--threads is 5000"});
}

}  // namespace
}  // namespace nkigraph
