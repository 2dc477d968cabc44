// Errors at scale and hostile input on the command line: problems one per
// line, --diagnostics json, replay bundles given where a graph is expected,
// protobuf's own log kept off the terminal, the --max-steps limit and
// --memory-limit counting host arrays.
#include <algorithm>
#include <filesystem>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "builder/isa.h"
#include "builder/tracer.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "interp/device_memory.h"
#include "nlohmann/json.hpp"
#include "ops/instr_facts.h"
#include "proto/nkigraph.pb.h"
#include "tests/cli_fixture.h"
#include "tests/test_util.h"
#include "util/file_io.h"
#include "util/graph_io.h"
#include "util/npy.h"

namespace nkigraph {
namespace {

using builder::Buffer;
using builder::Tensor;
using builder::Tracer;
namespace isa = builder::isa;
using testing::CliResult;
using testing::Floats;
using ::testing::HasSubstr;
using testing::Lines;
using ::testing::Not;
using ::testing::StartsWith;
using Json = nlohmann::json;

int64_t FileSize(const std::string& path) {
  return static_cast<int64_t>(std::filesystem::file_size(path));
}

// Every line of `text` parsed as JSON; a line that does not parse fails.
std::vector<Json> JsonLines(const std::string& text) {
  std::vector<Json> parsed;
  for (const std::string& line : Lines(text)) {
    Json value = Json::parse(line, nullptr, /*allow_exceptions=*/false);
    EXPECT_FALSE(value.is_discarded()) << "not JSON: " << line;
    parsed.push_back(std::move(value));
  }
  return parsed;
}

class RobustCliTest : public testing::CliFixture {
 protected:
  // The 2 x 2 x 2 float32 matmul without bias, and its inputs as files.
  std::string SmallMatmul() {
    const std::string path = Path("g.pb");
    const CliResult r = RunCli(absl::StrCat(
        "trace tiled_matmul --set m=2 --set k=2 --set n=2 --set dtype=float32 "
        "--set bias=0 -o '",
        path, "'"));
    EXPECT_EQ(r.exit_code, 0) << r.err;
    EXPECT_TRUE(
        WriteNpy(Path("lhs.npy"), Floats("", {2, 2}, {1, 2, 3, 4})).ok());
    EXPECT_TRUE(
        WriteNpy(Path("rhs.npy"), Floats("", {2, 2}, {5, 6, 7, 8})).ok());
    return path;
  }
  std::string Inputs() const {
    return absl::StrCat("--input lhs='", Path("lhs.npy"), "' --input rhs='",
                        Path("rhs.npy"), "'");
  }

  // SmallMatmul with `count` instructions' first operand naming tensor
  // 999, written to corrupt.pb.
  std::string CorruptMatmul(int count, proto::Graph* graph_out = nullptr) {
    const CliResult r = RunCli(absl::StrCat(
        "trace tiled_matmul --set m=512 --set k=512 --set n=512 -o '",
        Path("big.pb"), "'"));
    EXPECT_EQ(r.exit_code, 0) << r.err;
    absl::StatusOr<proto::Graph> g = ReadGraph(Path("big.pb"));
    EXPECT_TRUE(g.ok());
    proto::Stream* stream = g->mutable_streams(0);
    EXPECT_GE(stream->instructions_size(), count);
    for (int i = 0; i < count; ++i) {
      stream->mutable_instructions(i)->mutable_operands(0)->set_tensor_id(999);
    }
    EXPECT_TRUE(WriteGraph(*g, Path("corrupt.pb")).ok());
    if (graph_out != nullptr) *graph_out = *g;
    return Path("corrupt.pb");
  }
};

// --- Problems one per line ----------------------------------------------

TEST_F(RobustCliTest,
       RunListsTheFirstTwentyProblemsOnePerLineAndCountsTheRest) {
  const std::string corrupt = CorruptMatmul(30);
  // check lists every problem.
  const CliResult all = RunCli(absl::StrCat("check '", corrupt, "'"));
  EXPECT_EQ(all.exit_code, 1);
  const std::vector<std::string> listed = Lines(all.out);
  ASSERT_GE(listed.size(), 31u) << all.out;
  const size_t problems = listed.size() - 1;
  EXPECT_THAT(listed.back(),
              HasSubstr(absl::StrCat("invalid (", problems, " problems)")));

  const CliResult r = RunCli(absl::StrCat(
      "run '", corrupt, "' --random-inputs 1 -o '", Path("out"), "'"));
  EXPECT_EQ(r.exit_code, 2);
  const std::vector<std::string> lines = Lines(r.err);
  ASSERT_EQ(lines.size(), 22u) << r.err;
  EXPECT_THAT(lines[0], StartsWith("nkigraph run: error: '" + corrupt + "'"));
  EXPECT_THAT(lines[0], HasSubstr(absl::StrCat("invalid graph (", problems,
                                               " problems)")));
  for (int i = 1; i <= 20; ++i) {
    EXPECT_THAT(lines[i], StartsWith("  instruction #")) << lines[i];
    EXPECT_LT(lines[i].size(), 400u);
  }
  EXPECT_EQ(lines[21], absl::StrCat("  … and ", problems - 20, " more"));
}

// --- JSON diagnostics ---------------------------------------------------

TEST_F(RobustCliTest, CheckJsonDiagnosticsNameEachBrokenInstruction) {
  proto::Graph graph;
  const std::string corrupt = CorruptMatmul(2, &graph);
  const CliResult r =
      RunCli(absl::StrCat("check '", corrupt, "' --diagnostics json"));
  EXPECT_EQ(r.exit_code, 1);
  const std::vector<Json> lines = JsonLines(r.out);
  ASSERT_EQ(lines.size(), 2u) << r.out;
  for (int i = 0; i < 2; ++i) {
    const Json& d = lines[i];
    const proto::Instruction& instr = graph.streams(0).instructions(i);
    EXPECT_EQ(d["verb"], "check");
    EXPECT_EQ(d["kind"], "validation");
    EXPECT_EQ(d["instruction_id"], instr.id());
    EXPECT_EQ(d["opcode"], ops::OpcodeName(instr.opcode()));
    EXPECT_EQ(d["file"], graph.files(instr.file()));
    EXPECT_EQ(d["line"], instr.line());
    EXPECT_THAT(d["message"].get<std::string>(), HasSubstr("999"));
    EXPECT_TRUE(d["rank"].is_null());
    EXPECT_EQ(d["note"], false);
  }
  EXPECT_EQ(r.err, "");
}

TEST_F(RobustCliTest,
       RunJsonDiagnosticsOfADeviceErrorNameInstructionAndTensor) {
  int line = 0;
  const std::string graph = NeverWrittenGraph(&line);
  const CliResult r =
      RunCli(absl::StrCat("run '", graph, "' --input x='", Path("x.npy"),
                          "' -o '", Path("out"), "' --diagnostics json"));
  EXPECT_EQ(r.exit_code, 1);
  const std::vector<Json> lines = JsonLines(r.err);
  ASSERT_EQ(lines.size(), 1u) << r.err;
  const Json& d = lines[0];
  EXPECT_EQ(d["verb"], "run");
  EXPECT_EQ(d["kind"], "device");
  EXPECT_EQ(d["instruction_id"], 1);
  EXPECT_EQ(d["opcode"], "dma_copy");
  EXPECT_THAT(d["file"].get<std::string>(), HasSubstr("cli_fixture.h"));
  EXPECT_EQ(d["line"], line);
  EXPECT_EQ(d["tensor"], "a");
  EXPECT_THAT(d["message"].get<std::string>(), HasSubstr("never-written"));
}

TEST_F(RobustCliTest, InvalidGraphAsJsonIsOneLinePerProblemUnderItsSummary) {
  const std::string corrupt = CorruptMatmul(3);
  const CliResult r =
      RunCli(absl::StrCat("run '", corrupt, "' --random-inputs 1 -o '",
                          Path("out"), "' --diagnostics json"));
  EXPECT_EQ(r.exit_code, 2);
  const std::vector<Json> lines = JsonLines(r.err);
  ASSERT_GE(lines.size(), 4u) << r.err;
  EXPECT_EQ(lines[0]["kind"], "validation");
  EXPECT_EQ(lines[0]["notes"], lines.size() - 1);
  for (size_t i = 1; i < lines.size(); ++i) EXPECT_EQ(lines[i]["note"], true);
  EXPECT_EQ(lines[1]["instruction_id"], 0);
}

TEST_F(RobustCliTest, UsageErrorsAndProfileJsonErrorsAreJsonToo) {
  const CliResult usage =
      RunCli("info --diagnostics json '" + Path("missing.pb") + "'");
  EXPECT_EQ(usage.exit_code, 2);
  std::vector<Json> lines = JsonLines(usage.err);
  ASSERT_EQ(lines.size(), 1u) << usage.err;
  EXPECT_EQ(lines[0]["kind"], "load");
  EXPECT_THAT(lines[0]["message"].get<std::string>(), HasSubstr("missing.pb"));

  // profile --format json reports its errors as JSON lines as well.
  const CliResult profile =
      RunCli("profile --format json '" + Path("missing.pb") + "'");
  EXPECT_EQ(profile.exit_code, 2);
  EXPECT_EQ(profile.out, "");
  lines = JsonLines(profile.err);
  ASSERT_EQ(lines.size(), 1u) << profile.err;
  EXPECT_EQ(lines[0]["verb"], "profile");

  const CliResult bad = RunCli("check --diagnostics xml x.pb");
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_THAT(bad.err, HasSubstr("'text' or 'json'"));
}

// --- Replay bundles where a graph is expected ---------------------------

TEST_F(RobustCliTest, EveryVerbThatReadsAGraphAcceptsAReplayBundle) {
  const std::string graph = SmallMatmul();
  const std::string bundle = Path("bundle.pb");
  CliResult r =
      RunCli(absl::StrCat("run '", graph, "' ", Inputs(), " -o '", Path("out"),
                          "' --save-bundle '", bundle, "'"));
  ASSERT_EQ(r.exit_code, 0) << r.err;

  r = RunCli(absl::StrCat("info '", bundle, "'"));
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("replay bundle"));
  EXPECT_THAT(r.out, HasSubstr("tiled_matmul"));
  EXPECT_EQ(r.err, "");  // no "[libprotobuf ERROR ...]"

  r = RunCli(absl::StrCat("check '", bundle, "'"));
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("valid"));
  EXPECT_THAT(r.err, HasSubstr("is a replay bundle; using its graph"));

  r = RunCli(absl::StrCat("dot '", bundle, "'"));
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.out, StartsWith("digraph"));

  r = RunCli(absl::StrCat("profile '", bundle, "'"));
  EXPECT_EQ(r.exit_code, 0) << r.err;

  r = RunCli(absl::StrCat("diff '", graph, "' '", bundle, "'"));
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;

  r = RunCli(absl::StrCat("run '", bundle, "' ", Inputs(), " -o '",
                          Path("out2"), "'"));
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.err, HasSubstr("is a replay bundle; running its graph"));

  // And replay, given a graph, says what it is.
  r = RunCli(absl::StrCat("replay '", graph, "'"));
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(r.err, HasSubstr("is a graph, not a replay bundle"));
}

TEST_F(RobustCliTest, ProtobufsOwnLogNeverReachesTheUser) {
  // A binary Graph whose kernel_name (field 2) is not UTF-8: protobuf logs
  // "[libprotobuf ERROR ...] invalid UTF-8" when it parses one.
  const std::string bytes = std::string("\x08\x01\x12\x02\xff\xfe", 6);
  ASSERT_TRUE(WriteFileAtomically(Path("bad.pb"), bytes).ok());
  for (const char* verb :
       {"info", "check", "dot", "profile", "diff", "run", "replay"}) {
    SCOPED_TRACE(verb);
    const std::string args =
        std::string(verb) == "run"    ? absl::StrCat(" -o '", Path("o"), "'")
        : std::string(verb) == "diff" ? absl::StrCat(" '", Path("bad.pb"), "'")
                                      : "";
    const CliResult r =
        RunCli(absl::StrCat(verb, " '", Path("bad.pb"), "'", args));
    EXPECT_EQ(r.exit_code, 2);
    EXPECT_THAT(r.err, HasSubstr("bad.pb"));
    EXPECT_THAT(r.err, Not(HasSubstr("libprotobuf")));
  }
  const CliResult info = RunCli(absl::StrCat("info '", Path("bad.pb"), "'"));
  testing::CliFixture::ExpectOneLineUsageError(info, "info",
                                               {"bad.pb", "not a valid"});
}

// --- Limits -------------------------------------------------------------

TEST_F(RobustCliTest, MaxStepsStopsTheRunNamingWhereItStopped) {
  const std::string graph = SmallMatmul();
  const CliResult r = RunCli(absl::StrCat(
      "run '", graph, "' ", Inputs(), " -o '", Path("out"), "' --max-steps 2"));
  EXPECT_EQ(r.exit_code, 2);
  const std::vector<std::string> lines = Lines(r.err);
  ASSERT_EQ(lines.size(), 1u) << r.err;
  EXPECT_THAT(lines[0], HasSubstr("instruction #2 "));
  EXPECT_THAT(lines[0], HasSubstr("step limit of 2 instructions"));
  // Enough steps: the run finishes.
  const CliResult ok =
      RunCli(absl::StrCat("run '", graph, "' ", Inputs(), " -o '", Path("out"),
                          "' --max-steps 1000"));
  EXPECT_EQ(ok.exit_code, 0) << ok.err;
}

TEST_F(RobustCliTest, MemoryLimitCountsTheHostArraysOfARun) {
  const std::string graph = SmallMatmul();
  absl::StatusOr<proto::Graph> g = ReadGraph(graph);
  ASSERT_TRUE(g.ok());
  absl::StatusOr<int64_t> device = interp::DeviceMemory::BytesNeeded(*g);
  ASSERT_TRUE(device.ok());
  // What the plan counts: the graph as read, the device, and the [2, 2]
  // float32 output read back: 16 bytes. The two float32 input files go
  // into device memory as they are (mapped, or copied page by page and
  // let go): nothing beside it. Running needs room beside the device for
  // the largest instruction's operand buffers too: 48 bytes (nc_matmul's
  // three [2, 2] float32 operands), the output's 16 and 32 more.
  const int64_t needed = FileSize(graph) + *device + 16;
  const CliResult fits =
      RunCli(absl::StrCat("run '", graph, "' ", Inputs(), " -o '", Path("out"),
                          "' --memory-limit ", needed + 32));
  EXPECT_EQ(fits.exit_code, 0) << fits.err;
  const CliResult over =
      RunCli(absl::StrCat("run '", graph, "' ", Inputs(), " -o '", Path("out2"),
                          "' --memory-limit ", needed - 1));
  testing::CliFixture::ExpectOneLineUsageError(
      over, "run",
      {"outputs on the host 16", absl::StrCat("limit of ", needed - 1),
       absl::StrCat("device memory and its shadow state ", *device)});
  EXPECT_FALSE(std::filesystem::exists(Path("out2/out.npy")));
}

// A per-rank output is written a rank's rows at a time: the run needs
// room for one rank's rows beside the device, not for the stacked output.
TEST_F(RobustCliTest, PerRankOutputsAreWrittenARankAtATime) {
  // Four ranks, each filling its [128, 512] float32 output (256 KiB; 1 MiB
  // stacked) with 2.5.
  absl::StatusOr<proto::Graph> g =
      testing::TraceWorld(4, 1, [](builder::Tracer& t) {
        builder::Tensor out = t.Allocate({128, 512}, proto::FLOAT32,
                                         builder::Buffer::kSharedHbm, "out");
        builder::Tensor tile = builder::ndarray({128, 512}, proto::FLOAT32,
                                                builder::Buffer::kSbuf, "tile");
        builder::isa::memset(tile, 2.5f);
        // In two halves: an instruction's operand buffers count too.
        for (int64_t col : {0, 256}) {
          builder::isa::dma_copy(out.Slice(1, col, 256),
                                 tile.Slice(1, col, 256));
        }
        t.Output("out", out);
      });
  ASSERT_TRUE(g.ok()) << g.status();
  ASSERT_TRUE(WriteGraph(*g, Path("g.pb")).ok());
  absl::StatusOr<int64_t> device = interp::DeviceMemory::BytesNeeded(*g);
  ASSERT_TRUE(device.ok());
  constexpr int64_t kRankRows = 128 * 512 * 4;
  const int64_t needed = FileSize(Path("g.pb")) + *device + kRankRows;
  CliResult r = RunCli(absl::StrCat("run '", Path("g.pb"), "' -o '",
                                    Path("out"), "' --memory-limit ", needed));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  absl::StatusOr<HostArray> out = ReadNpy(Path("out/out.npy"));
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ(out->shape, (std::vector<int64_t>{4, 128, 512}));
  EXPECT_EQ(std::count(out->f32.begin(), out->f32.end(), 2.5f), 4 * 128 * 512);
  // A byte less, and the plan refuses the run up front.
  r = RunCli(absl::StrCat("run '", Path("g.pb"), "' -o '", Path("short"),
                          "' --memory-limit ", needed - 1));
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(r.err,
              HasSubstr(absl::StrCat("outputs on the host ", kRankRows)));
  EXPECT_FALSE(std::filesystem::exists(Path("short/out.npy")));
}

TEST_F(RobustCliTest, VerifyRefusesWhatTheDeviceFitsButTheHostArraysDoNot) {
  // tiled_matmul 256^3 float32: 256 KiB per input and output on the host.
  const std::string settings =
      "--set m=256 --set k=256 --set n=256 --set dtype=float32 --set bias=0";
  CliResult r = RunCli(absl::StrCat("trace tiled_matmul ", settings, " -o '",
                                    Path("t.pb"), "'"));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  absl::StatusOr<proto::Graph> g = ReadGraph(Path("t.pb"));
  ASSERT_TRUE(g.ok());
  absl::StatusOr<int64_t> device = interp::DeviceMemory::BytesNeeded(*g);
  ASSERT_TRUE(device.ok());
  // Room for the device and the graph, not for the 4 host arrays of 256 KiB
  // (a copy of each input for the reference, the output, the reference's).
  const int64_t limit = *device + (1 << 20);
  r = RunCli(absl::StrCat("verify tiled_matmul ", settings, " --memory-limit ",
                          limit));
  EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
  EXPECT_THAT(r.err, HasSubstr("the reference's outputs 262144"));
  EXPECT_THAT(r.err, HasSubstr("outputs on the host 262144"));
  EXPECT_THAT(r.err, HasSubstr(absl::StrCat("limit of ", limit)));
  // With room for them too it passes.
  r = RunCli(absl::StrCat("verify tiled_matmul ", settings, " --memory-limit ",
                          *device + (4 << 20)));
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
}

}  // namespace
}  // namespace nkigraph
