// `nkigraph view` from the command line: the page for a traced graph,
// with and without a target and a dump, and the errors that write no
// page (missing or corrupt graph, a dump folder of another graph).
#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <limits>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "tests/cli_fixture.h"
#include "util/npy.h"

namespace nkigraph {
namespace {

using ::testing::HasSubstr;
using testing::Slurp;

nlohmann::json PageData(const std::string& html) {
  const std::string open =
      "<script type=\"application/json\" id=\"nkiview-data\">";
  const size_t begin = html.find(open);
  if (begin == std::string::npos) return nullptr;
  const size_t end = html.find("</script>", begin);
  return nlohmann::json::parse(
      html.substr(begin + open.size(), end - begin - open.size()));
}

class CliViewTest : public testing::CliFixture {
 protected:
  // tiled_matmul (16 instructions, one core, target trn2) at m = `m`.
  std::string TraceMatmul(const std::string& name, int m = 256) {
    const std::string graph = Path(name);
    const testing::CliResult r =
        RunCli(absl::StrCat("trace tiled_matmul --set m=", m, " -o ", graph));
    EXPECT_EQ(r.exit_code, 0) << r.err;
    return graph;
  }
  std::string Dump(const std::string& graph, const std::string& dir) {
    const testing::CliResult r =
        RunCli(absl::StrCat("run ", graph, " --random-inputs 3 -o ",
                            Path(dir + "_out"), " --dump ", Path(dir)));
    EXPECT_EQ(r.exit_code, 0) << r.err;
    return Path(dir);
  }
};

TEST_F(CliViewTest, PageHoldsTheGraphTimelineAndDumpedValues) {
  const std::string graph = TraceMatmul("mm.pb");
  const std::string dump = Dump(graph, "dump");
  const std::string page = Path("mm.html");
  const testing::CliResult r =
      RunCli(absl::StrCat("view ", graph, " -o ", page, " --dump ", dump));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "");
  const std::string html = Slurp(page);
  EXPECT_THAT(html, ::testing::StartsWith("<!DOCTYPE html>"));
  const nlohmann::json data = PageData(html);
  ASSERT_FALSE(data.is_null());
  EXPECT_EQ(data["instrs"].size(), 16u);
  EXPECT_EQ(data["schedule"]["target"], "trn2");
  EXPECT_EQ(data["schedule"]["slots"].size(), 16u);
  EXPECT_FALSE(data["schedule"]["critical"].empty());
  // #6's moving operand reads lhs_T_tiles (bfloat16 [128, 2, 256] in
  // SBUF) at offset 256 for 128 x 256: every partition's second half,
  // 256 elements of 2 bytes from byte 512 of its 1024.
  absl::StatusOr<proto::Graph> traced = ReadGraph(graph);
  ASSERT_TRUE(traced.ok()) << traced.status();
  const nlohmann::json& mm6 = data["instrs"][6];
  ASSERT_EQ(mm6[0], 6);
  const nlohmann::json& moving = mm6[8][2];
  ASSERT_EQ(moving[0], "moving");
  const proto::Tensor& lhs = traced->tensors(moving[1].get<int>() - 1);
  ASSERT_EQ(lhs.name(), "lhs_T_tiles");
  EXPECT_EQ(moving[3], "128x256");
  EXPECT_EQ(moving[4],
            absl::StrCat("partitions ", lhs.partition_offset(), "..",
                         lhs.partition_offset() + 127, ", bytes ",
                         lhs.address() + 512, "..", lhs.address() + 1023));
  // Instruction #5 writes rhs_tile: its values are the dump file's,
  // summarised here independently.
  const nlohmann::json& values = data["values"]["by_instr"]["5"];
  ASSERT_EQ(values.size(), 1u) << data["values"];
  EXPECT_EQ(values[0]["tensor"], "rhs_tile");
  absl::StatusOr<HostArray> array =
      ReadNpy(absl::StrCat(dump, "/000005_rhs_tile_i5.npy"));
  ASSERT_TRUE(array.ok()) << array.status();
  ASSERT_EQ(array->dtype, proto::FLOAT32);
  float lo = std::numeric_limits<float>::infinity(), hi = -lo;
  double sum = 0;
  for (float v : array->f32) {
    lo = std::min(lo, v);
    hi = std::max(hi, v);
    sum += v;
  }
  EXPECT_EQ(values[0]["shape"], nlohmann::json({128, 128}));
  EXPECT_FLOAT_EQ(values[0]["min"].get<float>(), lo);
  EXPECT_FLOAT_EQ(values[0]["max"].get<float>(), hi);
  EXPECT_NEAR(values[0]["mean"].get<double>(), sum / array->f32.size(), 1e-9);
  EXPECT_EQ(values[0]["nan"], 0);
  // 128 x 128 averaged into 32 x 32 blocks of 4 x 4: cell (0, 0).
  EXPECT_EQ(values[0]["heat"]["rows"], 32);
  double block = 0;
  for (int y = 0; y < 4; ++y) {
    for (int x = 0; x < 4; ++x) block += array->f32[y * 128 + x];
  }
  EXPECT_NEAR(values[0]["heat"]["cells"][0].get<double>(), block / 16, 1e-6);
}

TEST_F(CliViewTest, MultiRankDumpShowsTheLowestRanksValues) {
  const std::string graph = Path("fgcc.pb");
  ASSERT_EQ(RunCli("trace fgcc --set tp_degree=2 --set m=64 --set k=128 "
                   "--set n=128 -o " +
                   graph)
                .exit_code,
            0);
  const std::string dump = Dump(graph, "dump");
  const testing::CliResult r = RunCli(
      absl::StrCat("view ", graph, " -o ", Path("f.html"), " --dump ", dump));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const nlohmann::json data = PageData(Slurp(Path("f.html")));
  EXPECT_EQ(data["values"]["ranks"], 2);
  EXPECT_EQ(data["values"]["rank"], 0);
  // Every rank-0 file is summarised under its instruction; rank 1's are
  // counted only.
  int rank0 = 0, summarised = 0;
  for (const auto& entry : std::filesystem::directory_iterator(dump)) {
    const std::string name = entry.path().filename().string();
    if (name.find("_r0_") != std::string::npos) ++rank0;
  }
  for (const auto& [instr, values] : data["values"]["by_instr"].items()) {
    for (const nlohmann::json& v : values) {
      EXPECT_THAT(v["file"].get<std::string>(), HasSubstr("_r0_"));
      ++summarised;
    }
  }
  EXPECT_GT(rank0, 0);
  EXPECT_EQ(summarised, rank0);
  EXPECT_EQ(data["values"]["files"].get<int>(), 2 * rank0);
}

TEST_F(CliViewTest, GraphWithoutTargetOpensWithTheTimelineMarkedAbsent) {
  const std::string graph = TraceMatmul("mm.pbtxt");
  // The same graph with its target taken out of the text.
  std::string text = Slurp(graph);
  const size_t at = text.find("target: TARGET_TRN2");
  ASSERT_NE(at, std::string::npos);
  text.erase(at, std::string("target: TARGET_TRN2").size());
  std::ofstream(Path("bare.pbtxt")) << text;
  const testing::CliResult r =
      RunCli(absl::StrCat("view ", Path("bare.pbtxt"), " -o ", Path("b.html")));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const nlohmann::json data = PageData(Slurp(Path("b.html")));
  EXPECT_THAT(data["schedule"]["absent"].get<std::string>(),
              HasSubstr("no target"));
  EXPECT_THAT(data["values"]["absent"].get<std::string>(),
              HasSubstr("no --dump"));
  // Asking for the timeline without a target is an error; naming one
  // gives it.
  ExpectOneLineUsageError(
      RunCli(absl::StrCat("view ", Path("bare.pbtxt"), " -o ", Path("c.html"),
                          " --profile")),
      "view", {"--profile needs a target"});
  EXPECT_FALSE(std::filesystem::exists(Path("c.html")));
  ASSERT_EQ(RunCli(absl::StrCat("view ", Path("bare.pbtxt"), " -o ",
                                Path("d.html"), " --target trn1"))
                .exit_code,
            0);
  EXPECT_EQ(PageData(Slurp(Path("d.html")))["schedule"]["target"], "trn1");
}

TEST_F(CliViewTest, HelpNamesTheDeepLinkAndTheVerbIsListed) {
  const testing::CliResult help = RunCli("view --help");
  EXPECT_EQ(help.exit_code, 0);
  EXPECT_THAT(help.out, HasSubstr("#select=ID"));
  EXPECT_THAT(help.out, HasSubstr("--dump DIR"));
  EXPECT_THAT(RunCli("--help").out, HasSubstr("view"));
}

TEST_F(CliViewTest, BadInputIsAnErrorAndWritesNoPage) {
  const std::string page = Path("never.html");
  ExpectOneLineUsageError(
      RunCli(absl::StrCat("view ", Path("missing.pb"), " -o ", page)), "view",
      {"missing.pb"});
  std::ofstream(Path("corrupt.pb")) << "\x0a\xff\xff\xff garbage";
  ExpectOneLineUsageError(
      RunCli(absl::StrCat("view ", Path("corrupt.pb"), " -o ", page)), "view",
      {"corrupt.pb"});
  const std::string graph = TraceMatmul("mm.pb");
  ExpectOneLineUsageError(RunCli("view " + graph), "view", {"-o PAGE.html"});
  // The picture flags are dot's, read and checked by the same code: a core
  // the graph does not have is refused with dot's message.
  for (const auto& [verb, out] :
       {std::pair{"view", page}, std::pair{"dot", Path("never.svg")}}) {
    ExpectOneLineUsageError(
        RunCli(absl::StrCat(verb, " ", graph, " -o ", out, " --core -1")), verb,
        {"--core -1 is out of range", "1 core(s)"});
  }
  // Dumps of other graphs: another kernel (its tensors are not the ones
  // these instructions write), and this kernel at another size (the same
  // names, other shapes).
  const testing::CliResult other = RunCli(
      "trace fgcc --set tp_degree=2 --set m=64 --set k=128 --set n=128 -o " +
      Path("fgcc.pb"));
  ASSERT_EQ(other.exit_code, 0) << other.err;
  ExpectOneLineUsageError(
      RunCli(absl::StrCat("view ", graph, " -o ", page, " --dump ",
                          Dump(Path("fgcc.pb"), "fgcc_dump"))),
      "view", {"is not from this graph"});
  ExpectOneLineUsageError(
      RunCli(absl::StrCat("view ", graph, " -o ", page, " --dump ",
                          Dump(TraceMatmul("small.pb", 128), "small_dump"))),
      "view", {"is not from this graph", "elements"});
  std::filesystem::create_directory(Path("empty"));
  ExpectOneLineUsageError(RunCli(absl::StrCat("view ", graph, " -o ", page,
                                              " --dump ", Path("empty"))),
                          "view", {"holds no `nkigraph run --dump` files"});
  EXPECT_FALSE(std::filesystem::exists(page));
}

}  // namespace
}  // namespace nkigraph
