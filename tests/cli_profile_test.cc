// `nkigraph profile` and `nkigraph run --timeline` from the command line:
// the report in both formats, the trace and picture files, and errors.
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "tests/cli_fixture.h"

namespace nkigraph {
namespace {

using ::testing::HasSubstr;
using testing::Slurp;
using ::testing::StartsWith;

class CliProfileTest : public testing::CliFixture {
 protected:
  // fgcc at tp 4, traced into the fixture's directory.
  std::string TraceFgcc() {
    const std::string graph = Path("fgcc.pb");
    const testing::CliResult r = RunCli(
        "trace fgcc --set tp_degree=4 --set m=64 --set k=256 --set n=256 -o " +
        graph);
    EXPECT_EQ(r.exit_code, 0) << r.err;
    return graph;
  }
};

TEST_F(CliProfileTest, TextReportNamesLatencyRooflineEnginesAndCriticalPath) {
  const std::string graph = TraceFgcc();
  const testing::CliResult r = RunCli("profile " + graph + " --top 3");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.err, "");
  for (const char* part :
       {"kernel fgcc on trn2",
        "estimated latency: ", "roofline bound: ", "estimate / bound = ",
        "FLOPs: ", "traffic (bytes):", "engines:", "tensor", "collective",
        "dma (16 engines)", "critical path by scope and source line",
        "kernels/", "scope instances", "fgcc/ring_step"}) {
    EXPECT_THAT(r.out, HasSubstr(part));
  }
  // tp 4 steps x 2 cores x 2 chunks, each chunk's output store at the slot
  // the ring's rank id names: 16 dynamic offsets, all known before the run.
  EXPECT_THAT(r.out, HasSubstr("dynamic offsets: 16 operands, 16 resolved "
                               "from values known before the run, 0 "
                               "data-dependent"));
}

TEST_F(CliProfileTest, JsonReportTraceAndSvgAreWritten) {
  const std::string graph = TraceFgcc();
  const std::string trace = Path("t.json"), svg = Path("t.svg");
  const testing::CliResult r =
      RunCli("profile " + graph + " --format json --target trn1 --trace " +
             trace + " --svg " + svg);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const nlohmann::json doc = nlohmann::json::parse(r.out);
  EXPECT_EQ(doc["kernel"], "fgcc");
  EXPECT_EQ(doc["target"], "trn1");
  EXPECT_GT(doc["latency_ns"].get<double>(), 0);
  EXPECT_GE(doc["roofline"]["ratio"].get<double>(), 1.0);
  EXPECT_FALSE(doc["critical_path"].empty());
  EXPECT_EQ(doc["dynamic_offsets"]["operands"], 16);
  EXPECT_EQ(doc["dynamic_offsets"]["data_dependent"], 0);
  const nlohmann::json events = nlohmann::json::parse(Slurp(trace));
  EXPECT_FALSE(events["traceEvents"].empty());
  EXPECT_THAT(Slurp(svg), StartsWith("<svg"));
  // The scope bar says whose instances it shows, and names them.
  EXPECT_THAT(Slurp(svg), HasSubstr("scope bar: instances of fgcc/ring_step"));
  EXPECT_THAT(Slurp(svg), HasSubstr(">ring_step #0<"));
}

TEST_F(CliProfileTest, BadUsageAndUnreadableGraphsAreOneLineErrors) {
  const std::string graph = TraceFgcc();
  ExpectOneLineUsageError(RunCli("profile " + graph + " --format xml"),
                          "profile", {"unknown --format 'xml'"});
  ExpectOneLineUsageError(RunCli("profile " + graph + " --target trn9"),
                          "profile", {"unknown target 'trn9'"});
  ExpectOneLineUsageError(RunCli("profile " + graph + " --top -1"), "profile",
                          {"--top"});
  ExpectOneLineUsageError(RunCli("profile " + Path("missing.pb")), "profile",
                          {"missing.pb"});
  ExpectOneLineUsageError(RunCli("profile"), "profile", {"no graph given"});
}

TEST_F(CliProfileTest, RunTimelineWritesTheRunsTrace) {
  const std::string graph = TraceFgcc();
  const std::string timeline = Path("run.json");
  const testing::CliResult r =
      RunCli("run " + graph + " --random-inputs 1 -o " + Path("out") +
             " --timeline " + timeline);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("timeline " + timeline + " (estimated "));
  const nlohmann::json events = nlohmann::json::parse(Slurp(timeline));
  int complete = 0;
  for (const nlohmann::json& e : events["traceEvents"]) {
    complete += e["ph"] == "X";
  }
  EXPECT_GT(complete, 0);
}

}  // namespace
}  // namespace nkigraph
