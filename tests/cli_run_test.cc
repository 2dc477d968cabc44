// The executing verbs of the nkigraph command line (run, replay, check,
// verify), run as a separate process (testing::CliPath() is the built
// binary).
#include <dirent.h>
#include <stdlib.h>
#include <sys/wait.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "builder/isa.h"
#include "builder/tracer.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "kernels/boundary_cases.h"
#include "kernels/registry.h"
#include "proto/nkigraph.pb.h"
#include "tests/cli_fixture.h"
#include "tests/test_util.h"
#include "util/graph_io.h"
#include "util/npy.h"

namespace nkigraph {
namespace {

using builder::Buffer;
using builder::Tensor;
using builder::Tracer;
namespace isa = builder::isa;
using ::testing::ElementsAre;
using testing::Floats;
using ::testing::HasSubstr;
using testing::Ints;
using ::testing::Not;
using ::testing::StartsWith;

using Result = testing::CliResult;
using testing::Slurp;

bool Exists(const std::string& path) {
  return static_cast<bool>(std::ifstream(path));
}

// Sorted names of the files in `dir` (none if it does not exist).
std::vector<std::string> ListDir(const std::string& dir) {
  std::vector<std::string> names;
  if (DIR* d = opendir(dir.c_str())) {
    while (const dirent* entry = readdir(d)) {
      const std::string name = entry->d_name;
      if (name != "." && name != "..") names.push_back(name);
    }
    closedir(d);
  }
  std::sort(names.begin(), names.end());
  return names;
}

class CliRunTest : public testing::CliFixture {
 protected:
  Result Run(const std::string& args) { return RunCli(args); }

  // Traces tiled_matmul with `settings` into `name`; returns its path.
  std::string TraceMatmul(const std::string& settings,
                          const std::string& name = "g.pb") {
    const std::string path = Path(name);
    const Result r =
        Run(absl::StrCat("trace tiled_matmul ", settings, " -o '", path, "'"));
    EXPECT_EQ(r.exit_code, 0) << r.err;
    return path;
  }

  // The 2 x 2 x 2 float32 matmul without bias, and its inputs as files:
  // lhs = [[1, 2], [3, 4]], rhs = [[5, 6], [7, 8]].
  std::string SmallMatmul() {
    const std::string graph = TraceMatmul(
        "--set m=2 --set k=2 --set n=2 --set dtype=float32 "
        "--set bias=0");
    EXPECT_TRUE(
        WriteNpy(Path("lhs.npy"), Floats("", {2, 2}, {1, 2, 3, 4})).ok());
    EXPECT_TRUE(
        WriteNpy(Path("rhs.npy"), Floats("", {2, 2}, {5, 6, 7, 8})).ok());
    return graph;
  }

  std::string Inputs() const {
    return absl::StrCat("--input lhs='", Path("lhs.npy"), "' --input rhs='",
                        Path("rhs.npy"), "'");
  }

  // Expects exit 2, nothing on stdout and one stderr line naming `verb`
  // and containing every fragment.
  void ExpectUsageError(const Result& r, const std::string& verb,
                        const std::vector<std::string>& fragments) {
    ExpectOneLineUsageError(r, verb, fragments);
  }
};

TEST_F(CliRunTest, RunWritesOutputsMatchingAHandComputedMatmul) {
  const std::string graph = SmallMatmul();
  const Result r = Run(absl::StrCat("run '", graph, "' ", Inputs(),
                                    " --output-dir '", Path("out"), "'"));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.err, "");
  EXPECT_THAT(r.out, HasSubstr("wrote out"));
  absl::StatusOr<HostArray> out = ReadNpy(Path("out/out.npy"));
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ(out->dtype, proto::FLOAT32);
  EXPECT_THAT(out->shape, ElementsAre(2, 2));
  // [[1*5 + 2*7, 1*6 + 2*8], [3*5 + 4*7, 3*6 + 4*8]]
  EXPECT_THAT(out->f32, ElementsAre(19, 22, 43, 50));
  EXPECT_THAT(ListDir(Path("out")), ElementsAre("out.npy"));
}

TEST_F(CliRunTest, RunRoundsFloat32InputsToBfloat16) {
  TraceMatmul("--set m=1 --set k=2 --set n=1 --set bias=0");  // bfloat16
  // out = a - 1 with a = 1 + 3 * 2^-9, which bfloat16 (spacing 2^-7 at 1)
  // rounds to 1 + 2^-7: the output shows the rounded input.
  ASSERT_TRUE(
      WriteNpy(Path("lhs.npy"), Floats("", {1, 2}, {1 + 3 * 0x1p-9f, 1})).ok());
  ASSERT_TRUE(WriteNpy(Path("rhs.npy"), Floats("", {2, 1}, {1, -1})).ok());
  const Result r = Run(absl::StrCat("run '", Path("g.pb"), "' ", Inputs(),
                                    " -o '", Path("out"), "'"));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  absl::StatusOr<HostArray> out = ReadNpy(Path("out/out.npy"));
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_THAT(out->f32, ElementsAre(0x1p-7f));
}

TEST_F(CliRunTest, WrongInputShapeIsExitTwoNamingTheInputAndBothShapes) {
  const std::string graph = SmallMatmul();
  ASSERT_TRUE(
      WriteNpy(Path("lhs.npy"), Floats("", {3, 2}, {1, 2, 3, 4, 5, 6})).ok());
  const Result r = Run(absl::StrCat("run '", graph, "' ", Inputs(),
                                    " --output-dir '", Path("out"), "'"));
  ExpectUsageError(r, "run", {"'lhs'", "[3, 2]", "[2, 2]"});
  EXPECT_FALSE(Exists(Path("out/out.npy")));
}

TEST_F(CliRunTest, WrongInputDtypeIsExitTwoNamingTheInput) {
  const std::string graph = SmallMatmul();
  ASSERT_TRUE(WriteNpy(Path("rhs.npy"), Ints("", {2, 2}, {1, 2, 3, 4})).ok());
  const Result r = Run(absl::StrCat("run '", graph, "' ", Inputs(),
                                    " --output-dir '", Path("out"), "'"));
  ExpectUsageError(r, "run", {"'rhs'", "int32", "float32"});
}

TEST_F(CliRunTest, MissingInputIsExitTwoNamingIt) {
  const std::string graph = SmallMatmul();
  const Result r =
      Run(absl::StrCat("run '", graph, "' --input lhs='", Path("lhs.npy"),
                       "' --output-dir '", Path("out"), "'"));
  ExpectUsageError(r, "run", {"missing input 'rhs'"});
  EXPECT_FALSE(Exists(Path("out/out.npy")));
  // An input the graph does not have is named too.
  const Result unknown =
      Run(absl::StrCat("run '", graph, "' ", Inputs(), " --input bias='",
                       Path("lhs.npy"), "' --output-dir '", Path("out"), "'"));
  ExpectUsageError(unknown, "run", {"'bias' is not an input"});
}

TEST_F(CliRunTest, RunUsageErrorsAreExitTwo) {
  const std::string graph = SmallMatmul();
  ExpectUsageError(Run(absl::StrCat("run '", graph, "' ", Inputs())), "run",
                   {"--output-dir"});
  ExpectUsageError(
      Run(absl::StrCat("run '", Path("absent.pb"), "' --random-inputs 1 -o '",
                       Path("o"), "'")),
      "run", {"absent.pb"});
  ExpectUsageError(Run(absl::StrCat("run '", graph, "' --random-inputs x -o '",
                                    Path("o"), "'")),
                   "run", {"--random-inputs"});
  ExpectUsageError(
      Run(absl::StrCat("run '", graph, "' --random-inputs 1 -o '", Path("o"),
                       "' --dump '", Path("d"), "' --dump-filter '('")),
      "run", {"--dump-filter"});
  ExpectUsageError(Run(absl::StrCat("run '", graph, "' --random-inputs 1 -o '",
                                    Path("o"), "' --memory-limit 1000")),
                   "run", {"limit"});
}

TEST_F(CliRunTest, InvalidGraphIsExitTwoNamingTheProblem) {
  const std::string graph = SmallMatmul();
  absl::StatusOr<proto::Graph> g = ReadGraph(graph);
  ASSERT_TRUE(g.ok());
  testing::MutableOperandOf(g->mutable_streams(0)->mutable_instructions(0),
                            "src")
      ->set_tensor_id(999);
  ASSERT_TRUE(WriteGraph(*g, Path("invalid.pb")).ok());
  // The summary, then the problem on a line of its own.
  const Result r = Run(absl::StrCat("run '", Path("invalid.pb"), "' ", Inputs(),
                                    " -o '", Path("out"), "'"));
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.out, "");
  const std::vector<std::string> lines = testing::Lines(r.err);
  ASSERT_EQ(lines.size(), 2u) << r.err;
  EXPECT_THAT(lines[0], StartsWith("nkigraph run: error: "));
  EXPECT_THAT(lines[0], HasSubstr("invalid graph (1 problem)"));
  EXPECT_THAT(lines[1], StartsWith("  instruction #0"));
  EXPECT_THAT(lines[1], HasSubstr("999"));
}

TEST_F(CliRunTest, RandomInputsFillTheInputsNotGivenDeterministically) {
  const std::string graph = SmallMatmul();
  auto run = [&](const std::string& seed, const std::string& out) {
    const Result r = Run(absl::StrCat("run '", graph, "' --input lhs='",
                                      Path("lhs.npy"), "' --random-inputs ",
                                      seed, " --output-dir '", Path(out), "'"));
    EXPECT_EQ(r.exit_code, 0) << r.err;
    return Slurp(Path(out + "/out.npy"));
  };
  const std::string a = run("7", "a");
  ASSERT_FALSE(a.empty());
  EXPECT_EQ(run("7", "b"), a);
  EXPECT_NE(run("8", "c"), a);
  absl::StatusOr<HostArray> out = ReadNpy(Path("a/out.npy"));
  ASSERT_TRUE(out.ok()) << out.status();
  // rhs in [-1, 1): |out| <= |1| + |2| (row 0), |3| + |4| (row 1).
  ASSERT_EQ(out->f32.size(), 4u);
  for (int i = 0; i < 4; ++i) {
    EXPECT_LE(std::fabs(out->f32[i]), i < 2 ? 3.0f : 7.0f);
  }
  EXPECT_NE(out->f32[0], 0.0f);
}

// The MoE forward at its defaults indexes 4 experts and 64 tokens: random
// inputs draw its routing from the ranges the graph declares.
TEST_F(CliRunTest, RandomInputsRunTheMoeForwardAtItsDefaults) {
  const std::string graph = Path("moe.pb");
  Result r = Run(absl::StrCat("trace bwmm_shard_on_H -o '", graph, "'"));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  r = Run(absl::StrCat("run '", graph, "' --random-inputs 7 -o '", Path("out"),
                       "'"));
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(Exists(Path("out/output.npy")));
}

TEST_F(CliRunTest, DumpWritesEveryWriteOfTheFilteredTensorInOrder) {
  // k = 300: three k tiles, three matmuls accumulating into out_T_psum.
  const std::string graph = TraceMatmul(
      "--set m=4 --set k=300 --set n=4 --set dtype=float32 --set bias=0");
  const Result r = Run(absl::StrCat("run '", graph, "' --random-inputs 1 -o '",
                                    Path("out"), "' --dump '", Path("dump"),
                                    "' --dump-filter '^out_T_psum$'"));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("dumped 3 file(s)"));
  const std::vector<std::string> files = ListDir(Path("dump"));
  ASSERT_EQ(files.size(), 3u);
  for (const std::string& file : files) {
    EXPECT_THAT(file, HasSubstr("_out_T_psum_i"));
    EXPECT_TRUE(absl::EndsWith(file, ".npy"));
  }
  EXPECT_THAT(files[0], StartsWith("000000_"));
  EXPECT_THAT(files[2], StartsWith("000002_"));
  // The last dump is the finished accumulation: out^T.
  absl::StatusOr<HostArray> last = ReadNpy(Path("dump/" + files[2]));
  absl::StatusOr<HostArray> out = ReadNpy(Path("out/out.npy"));
  ASSERT_TRUE(last.ok() && out.ok());
  ASSERT_THAT(last->shape, ElementsAre(4, 4));
  for (int i = 0; i < 4; ++i) {
    for (int j = 0; j < 4; ++j) {
      EXPECT_EQ(last->f32[j * 4 + i], out->f32[i * 4 + j]);
    }
  }
  // Without a filter every written tensor is dumped.
  const Result all =
      Run(absl::StrCat("run '", graph, "' --random-inputs 1 -o '", Path("out"),
                       "' --dump '", Path("all"), "'"));
  ASSERT_EQ(all.exit_code, 0) << all.err;
  EXPECT_GT(ListDir(Path("all")).size(), 3u);
}

TEST_F(CliRunTest, DeviceErrorIsExitOneNamingTheInstructionAndDumpsState) {
  const std::string graph = NeverWrittenGraph();
  ASSERT_TRUE(
      WriteNpy(Path("x.npy"), Floats("", {4, 4}, std::vector<float>(16, 2.0f)))
          .ok());
  const Result r =
      Run(absl::StrCat("run '", graph, "' --input x='", Path("x.npy"), "' -o '",
                       Path("out"), "' --dump '", Path("dump"), "'"));
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_THAT(r.err, StartsWith("nkigraph run: device error: "));
  EXPECT_THAT(r.err, HasSubstr("instruction #1 dma_copy"));
  EXPECT_THAT(r.err, HasSubstr("never-written"));
  EXPECT_FALSE(Exists(Path("out/out.npy")));
  // One dump of b (written by #0), then the final state of x, o, a and b.
  const std::vector<std::string> files = ListDir(Path("dump"));
  EXPECT_THAT(files, ::testing::Contains(StartsWith("000000_b_i0")));
  std::vector<std::string> finals;
  for (const std::string& file : files) {
    if (absl::StartsWith(file, "final_")) finals.push_back(file);
  }
  EXPECT_EQ(finals.size(), 4u) << ::testing::PrintToString(files);
  const auto b = std::find_if(finals.begin(), finals.end(), [](auto& f) {
    return absl::StartsWith(f, "final_b_t");
  });
  ASSERT_NE(b, finals.end());
  absl::StatusOr<HostArray> b_state = ReadNpy(Path("dump/" + *b));
  ASSERT_TRUE(b_state.ok()) << b_state.status();
  EXPECT_EQ(b_state->f32, std::vector<float>(16, 2.0f));
  const auto a = std::find_if(finals.begin(), finals.end(), [](auto& f) {
    return absl::StartsWith(f, "final_a_t");
  });
  ASSERT_NE(a, finals.end());
  absl::StatusOr<HostArray> a_state = ReadNpy(Path("dump/" + *a));
  ASSERT_TRUE(a_state.ok()) << a_state.status();
  EXPECT_TRUE(std::isnan(a_state->f32[0]));  // never written

  // Without --dump: the same error, nothing dumped.
  const Result plain =
      Run(absl::StrCat("run '", graph, "' --input x='", Path("x.npy"), "' -o '",
                       Path("out"), "'"));
  EXPECT_EQ(plain.exit_code, 1);
  EXPECT_THAT(plain.err, HasSubstr("instruction #1 dma_copy"));
}

TEST_F(CliRunTest, SavedBundleReplaysIdentically) {
  const std::string graph =
      TraceMatmul("--set m=130 --set k=140 --set n=20 --set activation=silu");
  const Result r =
      Run(absl::StrCat("run '", graph, "' --random-inputs 3 -o '", Path("out"),
                       "' --save-bundle '", Path("b.pb"), "'"));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  proto::Bundle bundle;
  ASSERT_TRUE(ReadMessage(Path("b.pb"), &bundle).ok());
  EXPECT_EQ(bundle.graph().kernel_name(), "tiled_matmul");
  EXPECT_EQ(bundle.inputs_size(), 3);  // lhs, rhs, bias
  ASSERT_EQ(bundle.outputs_size(), 1);
  EXPECT_EQ(bundle.outputs(0).name(), "out");
  // The bundle's output is what run wrote.
  absl::StatusOr<HostArray> out = ReadNpy(Path("out/out.npy"));
  ASSERT_TRUE(out.ok());
  EXPECT_EQ(bundle.outputs(0).data(),
            std::string(reinterpret_cast<const char*>(out->f32.data()),
                        out->f32.size() * 4));

  const Result replay = Run(absl::StrCat("replay '", Path("b.pb"), "'"));
  EXPECT_EQ(replay.exit_code, 0) << replay.out << replay.err;
  EXPECT_THAT(replay.out, HasSubstr("identical"));
}

TEST_F(CliRunTest, ReplayOfATamperedOutputIsExitOneNamingOutputAndIndex) {
  const std::string graph = SmallMatmul();
  ASSERT_EQ(
      Run(absl::StrCat("run '", graph, "' ", Inputs(), " -o '", Path("out"),
                       "' --save-bundle '", Path("b.pb"), "'"))
          .exit_code,
      0);
  proto::Bundle bundle;
  ASSERT_TRUE(ReadMessage(Path("b.pb"), &bundle).ok());
  ASSERT_EQ(bundle.outputs_size(), 1);
  std::string data = bundle.outputs(0).data();
  ASSERT_EQ(data.size(), 16u);
  const float tampered = 51.0f;  // element 3 was 50
  std::memcpy(&data[12], &tampered, 4);
  bundle.mutable_outputs(0)->set_data(data);
  ASSERT_TRUE(WriteMessage(bundle, Path("t.pb")).ok());
  const Result r = Run(absl::StrCat("replay '", Path("t.pb"), "'"));
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_THAT(r.out, HasSubstr("output 'out'"));
  EXPECT_THAT(r.out, HasSubstr("flat index 3 [1, 1]"));
  EXPECT_THAT(r.out, HasSubstr("bundle 51"));
  EXPECT_THAT(r.out, HasSubstr("replay 50"));

  // A tampered input changes the replayed output just the same.
  proto::Bundle input_tampered;
  ASSERT_TRUE(ReadMessage(Path("b.pb"), &input_tampered).ok());
  std::string lhs = input_tampered.inputs(0).data();
  const float one = 0.0f;  // lhs[0, 0] was 1
  std::memcpy(&lhs[0], &one, 4);
  input_tampered.mutable_inputs(0)->set_data(lhs);
  ASSERT_TRUE(WriteMessage(input_tampered, Path("i.pb")).ok());
  const Result ri = Run(absl::StrCat("replay '", Path("i.pb"), "'"));
  EXPECT_EQ(ri.exit_code, 1);
  EXPECT_THAT(ri.out, HasSubstr("flat index 0 [0, 0]"));
}

TEST_F(CliRunTest, ReplayOfAnUnreadableBundleIsExitTwo) {
  std::ofstream(Path("junk.pb")) << "\xff\xff\xff not a bundle";
  ExpectUsageError(Run(absl::StrCat("replay '", Path("junk.pb"), "'")),
                   "replay", {"junk.pb"});
  ExpectUsageError(Run("replay"), "replay", {"no bundle"});
}

TEST_F(CliRunTest, BundleOfAFailedRunReplaysTheDeviceError) {
  const std::string graph = NeverWrittenGraph();
  const Result r =
      Run(absl::StrCat("run '", graph, "' --random-inputs 1 -o '", Path("out"),
                       "' --save-bundle '", Path("b.pb"), "'"));
  EXPECT_EQ(r.exit_code, 1);
  const Result replay = Run(absl::StrCat("replay '", Path("b.pb"), "'"));
  EXPECT_EQ(replay.exit_code, 1);
  EXPECT_THAT(replay.err, StartsWith("nkigraph replay: device error: "));
  EXPECT_THAT(replay.err, HasSubstr("instruction #1 dma_copy"));
}

TEST_F(CliRunTest, CheckAcceptsAValidGraph) {
  const std::string graph = SmallMatmul();
  const Result r = Run(absl::StrCat("check '", graph, "'"));
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  absl::StatusOr<proto::Graph> g = ReadGraph(graph);
  ASSERT_TRUE(g.ok());
  EXPECT_EQ(r.out,
            absl::StrCat(graph, ": valid (", g->streams(0).instructions_size(),
                         " instructions, ", g->tensors_size(), " tensors)\n"));
}

TEST_F(CliRunTest, CheckListsEveryProblemOfACorruptGraph) {
  const std::string graph = SmallMatmul();
  absl::StatusOr<proto::Graph> g = ReadGraph(graph);
  ASSERT_TRUE(g.ok());
  // Two independent problems: operands of instructions #0 and #4 naming
  // tensors that do not exist.
  testing::MutableOperandOf(g->mutable_streams(0)->mutable_instructions(0),
                            "src")
      ->set_tensor_id(999);
  testing::MutableOperandOf(g->mutable_streams(0)->mutable_instructions(4),
                            "dst")
      ->set_tensor_id(1000);
  ASSERT_TRUE(WriteGraph(*g, Path("corrupt.pb")).ok());
  const Result r = Run(absl::StrCat("check '", Path("corrupt.pb"), "'"));
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  std::vector<std::string> lines = absl::StrSplit(r.out, '\n');
  if (!lines.empty() && lines.back().empty()) lines.pop_back();
  ASSERT_EQ(lines.size(), 3u) << r.out;
  EXPECT_THAT(lines[0], HasSubstr("instruction #0"));
  EXPECT_THAT(lines[0], HasSubstr("999"));
  EXPECT_THAT(lines[1], HasSubstr("instruction #4"));
  EXPECT_THAT(lines[1], HasSubstr("1000"));
  EXPECT_THAT(lines[2], HasSubstr("invalid (2 problems)"));
  for (const std::string& line : lines) {
    EXPECT_THAT(line, StartsWith(Path("corrupt.pb") + ": "));
  }

  // A tensor with a huge shape is named.
  absl::StatusOr<proto::Graph> huge = ReadGraph(graph);
  ASSERT_TRUE(huge.ok());
  huge->mutable_tensors(0)->set_shape(0, int64_t{1} << 40);
  ASSERT_TRUE(WriteGraph(*huge, Path("huge.pb")).ok());
  const Result h = Run(absl::StrCat("check '", Path("huge.pb"), "'"));
  EXPECT_EQ(h.exit_code, 1) << h.out << h.err;
  EXPECT_THAT(h.out, HasSubstr("tensor 1 ('lhs')"));
  EXPECT_THAT(h.out, HasSubstr("invalid (1 problem)"));
}

TEST_F(CliRunTest, CheckOnAnUnreadableFileIsExitTwo) {
  ExpectUsageError(Run(absl::StrCat("check '", Path("absent.pb"), "'")),
                   "check", {"absent.pb"});
}

TEST_F(CliRunTest, VerifyPassesTiledMatmulForBothDtypes) {
  for (const std::string dtype : {"float32", "bfloat16"}) {
    SCOPED_TRACE(dtype);
    const Result r = Run(absl::StrCat(
        "verify tiled_matmul --set m=130 --set k=200 --set n=140 --set dtype=",
        dtype, " --set activation=gelu_tanh --seed 5"));
    EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
    EXPECT_THAT(r.out, HasSubstr("dtype=" + dtype));
    EXPECT_THAT(r.out, HasSubstr("out [130, 140]: max abs err"));
    EXPECT_THAT(r.out, HasSubstr("tiled_matmul: PASS"));
    EXPECT_THAT(r.out, Not(HasSubstr("FAIL")));
  }
}

TEST_F(CliRunTest, VerifySaysWhichMeasureItCompares) {
  Result r =
      Run("verify tiled_matmul --set m=3 --set k=5 --set n=7 --set "
          "dtype=float32");
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_THAT(r.out, HasSubstr("compared by elementwise (|err|/(1+|want|))"));
  EXPECT_THAT(r.out, HasSubstr("max |err|/(1+|want|) "));
  // The MoE gradients compare against each output's scale.
  r =
      Run("verify blockwise_mm_bwd --set num_tokens=30 --set hidden=70 --set "
          "num_experts=3 --set intermediate=50 --set block_size=20 --set "
          "num_blocks=5 --set dtype=bfloat16");
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_THAT(r.out, HasSubstr("compared by scale (|err|/max|want|)"));
  EXPECT_THAT(r.out, HasSubstr("gate_up_proj_weight_grad [3, 70, 2, 50]: "));
  EXPECT_THAT(r.out, HasSubstr("scale max|want| "));
  EXPECT_THAT(r.out, HasSubstr("max |err|/max|want| "));
  EXPECT_THAT(r.out, HasSubstr("blockwise_mm_bwd: PASS"));
}

TEST_F(CliRunTest, VerifyWritesGraphInputsOutputsAndReference) {
  const Result r = Run(absl::StrCat(
      "verify tiled_matmul --set m=3 --set k=5 --set n=7 --set dtype=float32 "
      "--out-dir '",
      Path("v"), "'"));
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_TRUE(ReadGraph(Path("v/tiled_matmul.pb")).ok());
  EXPECT_THAT(ListDir(Path("v/tiled_matmul/inputs")),
              ElementsAre("bias.npy", "lhs.npy", "rhs.npy"));
  absl::StatusOr<HostArray> out =
      ReadNpy(Path("v/tiled_matmul/outputs/out.npy"));
  absl::StatusOr<HostArray> ref =
      ReadNpy(Path("v/tiled_matmul/reference/out.npy"));
  ASSERT_TRUE(out.ok() && ref.ok());
  EXPECT_THAT(out->shape, ElementsAre(3, 7));
  EXPECT_THAT(ref->shape, ElementsAre(3, 7));
  for (size_t i = 0; i < out->f32.size(); ++i) {
    EXPECT_NEAR(out->f32[i], ref->f32[i], 1e-4 * (1 + std::fabs(ref->f32[i])));
  }
  // The written graph and inputs run to the same outputs.
  const Result rerun = Run(absl::StrCat(
      "run '", Path("v/tiled_matmul.pb"), "' --input lhs='",
      Path("v/tiled_matmul/inputs/lhs.npy"), "' --input rhs='",
      Path("v/tiled_matmul/inputs/rhs.npy"), "' --input bias='",
      Path("v/tiled_matmul/inputs/bias.npy"), "' -o '", Path("rerun"), "'"));
  ASSERT_EQ(rerun.exit_code, 0) << rerun.err;
  EXPECT_EQ(Slurp(Path("rerun/out.npy")),
            Slurp(Path("v/tiled_matmul/outputs/out.npy")));
}

TEST_F(CliRunTest, VerifyAllVerifiesEveryRegisteredKernelAtItsDefaults) {
  const Result r = Run("verify --all");
  EXPECT_THAT(r.out, HasSubstr("verify tiled_matmul (m=256, k=256, n=256, "
                               "bias=1, activation=none, dtype=bfloat16)"));
  EXPECT_THAT(r.out, HasSubstr("tiled_matmul: PASS"));
  EXPECT_THAT(r.out, HasSubstr("verified "));
  // Exit 0 exactly when no kernel failed (other kernels' correctness is
  // their own tests' business).
  EXPECT_EQ(r.exit_code, absl::StrContains(r.out, " 0 failed") ? 0 : 1)
      << r.out << r.err;
}

// --sweep: the kernel's pairwise boundary cases, every one passing, and
// the table counting as many as the covering holds.
TEST_F(CliRunTest, VerifySweepRunsTheBoundaryCasesAndPrintsTheTable) {
  const kernels::KernelRegistry& registry = kernels::KernelRegistry::Global();
  absl::StatusOr<kernels::BoundaryCases> cases =
      kernels::CoveringCases(registry, *registry.Find("sb2sb_allgather"), 2);
  ASSERT_TRUE(cases.ok()) << cases.status();
  const int64_t n = static_cast<int64_t>(cases->cases.size());
  ASSERT_GT(n, 1);
  testing::CliResult r = Run("verify sb2sb_allgather --sweep pairwise");
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_THAT(r.out, ::testing::ContainsRegex(
                         "kernel +combined +cases +passed +refused +failed "
                         "+infeasible"));
  EXPECT_THAT(r.out,
              ::testing::ContainsRegex(absl::StrCat(
                  "sb2sb_allgather +pairwise +", n, " +", n, " +0 +0 ")));
  r = Run("verify sb2sb_allgather --sweep 4");
  ExpectOneLineUsageError(r, "verify",
                          {"sweep strength '4' is not pairwise, 3-wise or "
                           "product"});
  r = Run("verify sb2sb_allgather --sweep pairwise --set rows=3");
  ExpectOneLineUsageError(r, "verify", {"takes no --set or --out-dir"});
}

TEST_F(CliRunTest, VerifyStopsAtItsStepLimitNamingTheInstruction) {
  // tiled_matmul 3x5x7: two dma_copy loads, then the third instruction.
  const std::string kernel =
      "verify tiled_matmul --set m=3 --set k=5 --set n=7 --set dtype=float32 ";
  testing::CliResult r = Run(kernel + "--max-steps 2");
  EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
  EXPECT_THAT(r.err, HasSubstr("instruction #2 "));
  EXPECT_THAT(r.err, HasSubstr("kernels/tiled_matmul.cc:"));
  EXPECT_THAT(r.err, HasSubstr("step limit of 2 instructions (--max-steps)"));
  EXPECT_THAT(r.out, Not(HasSubstr("PASS")));
  // With room for every instruction it passes.
  r = Run(kernel + "--max-steps 1000");
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_THAT(r.out, HasSubstr("tiled_matmul: PASS"));
  ExpectUsageError(Run(kernel + "--max-steps lots"), "verify", {"--max-steps"});
}

TEST_F(CliRunTest, VerifyUsageErrorsAreExitTwo) {
  ExpectUsageError(Run("verify no_such_kernel"), "verify",
                   {"unknown kernel 'no_such_kernel'"});
  ExpectUsageError(Run("verify tiled_matmul --set m=0"), "verify",
                   {"parameter 'm'"});
  ExpectUsageError(Run("verify --all --set m=3"), "verify", {"--all"});
  ExpectUsageError(Run("verify"), "verify", {"no kernel"});
}

}  // namespace
}  // namespace nkigraph
