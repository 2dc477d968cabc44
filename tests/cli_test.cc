// The nkigraph command line, run as a separate process (testing::CliPath()
// is the built binary).
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "proto/nkigraph.pb.h"
#include "tests/cli_fixture.h"
#include "tests/test_util.h"
#include "util/graph_io.h"

namespace nkigraph {
namespace {

using ::testing::HasSubstr;
using ::testing::StartsWith;

using Result = testing::CliResult;
using testing::Lines;
using testing::Slurp;

class CliTest : public testing::CliFixture {
 protected:
  Result Run(const std::string& args) { return RunCli(args); }

  void ExpectUsageError(const std::string& args, const std::string& verb,
                        const std::string& fragment) {
    SCOPED_TRACE(args);
    ExpectOneLineUsageError(Run(args), verb, {fragment});
  }
};

TEST_F(CliTest, EveryOneArgumentVerbNamesAMissingOrExtraArgument) {
  const std::vector<std::pair<std::string, std::string>> verbs = {
      {"check", "graph"},        {"replay", "bundle"},
      {"run", "graph"},          {"trace", "kernel name"},
      {"verify", "kernel name"}, {"info", "graph file"},
      {"dot", "graph file"}};
  for (const auto& [verb, what] : verbs) {
    ExpectUsageError(
        verb, verb,
        absl::StrCat("no ", what, " given (usage: nkigraph ", verb, " "));
    ExpectUsageError(
        absl::StrCat(verb, " a b"), verb,
        absl::StrCat("unexpected argument 'b'; ", verb, " takes one ", what));
  }
}

TEST_F(CliTest, HelpGoesToStdoutWithExitZeroEverywhere) {
  for (const std::string args :
       {"--help", "-h", "help", "list --help", "trace --help", "trace -h",
        "info --help", "help trace"}) {
    SCOPED_TRACE(args);
    const Result r = Run(args);
    EXPECT_EQ(r.exit_code, 0);
    EXPECT_THAT(r.out, HasSubstr("usage: nkigraph"));
    EXPECT_EQ(r.err, "");
  }
}

TEST_F(CliTest, TraceHelpWithAKernelShowsItsParameters) {
  const Result r = Run("trace tiled_matmul --help");
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_THAT(r.out, HasSubstr("activation"));
  EXPECT_THAT(r.out, HasSubstr("gelu_tanh"));
}

TEST_F(CliTest, NoCommandOrUnknownCommandIsAOneLineErrorWithExitTwo) {
  const Result none = Run("");
  EXPECT_EQ(none.exit_code, 2);
  EXPECT_EQ(Lines(none.err).size(), 1u);
  EXPECT_THAT(none.err, StartsWith("nkigraph: error: "));
  ExpectUsageError("frobnicate", "frobnicate", "unknown command 'frobnicate'");
}

TEST_F(CliTest, ListShowsTiledMatmulParametersAndInterface) {
  const Result r = Run("list");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("tiled_matmul"));
  for (const char* fragment :
       {"default: 256", "default: bfloat16", "{none, relu, silu, gelu_tanh}",
        "{float32, bfloat16}", "lhs", "[m, k]", "rhs", "[k, n]", "out",
        "[m, n]"}) {
    EXPECT_THAT(r.out, HasSubstr(fragment));
  }
  const Result one = Run("list tiled_matmul");
  EXPECT_EQ(one.exit_code, 0);
  EXPECT_THAT(one.out, HasSubstr("[m, k]"));
  EXPECT_THAT(one.out, ::testing::Not(HasSubstr("conv1d")));  // only the named
  EXPECT_LT(one.out.size(), r.out.size());
  const Result names = Run("list --names");
  EXPECT_EQ(names.exit_code, 0);
  EXPECT_THAT(names.out, HasSubstr("tiled_matmul\n"));
  EXPECT_THAT(names.out, HasSubstr("\nconv1d\n"));
  ExpectUsageError("list no_such_kernel", "list", "'no_such_kernel'");
}

TEST_F(CliTest, TraceWritesBinaryAndTextGraphs) {
  const std::string pb = Path("g.pb");
  const Result r = Run(absl::StrCat(
      "trace tiled_matmul --set m=600 --set k=300 --set n=200 -o '", pb, "'"));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.err, "");
  ASSERT_EQ(Lines(r.out).size(), 1u) << r.out;
  EXPECT_THAT(r.out, HasSubstr("42 instructions"));
  EXPECT_THAT(r.out, HasSubstr(pb));
  absl::StatusOr<proto::Graph> graph = ReadGraph(pb);
  ASSERT_TRUE(graph.ok()) << graph.status();
  EXPECT_EQ(graph->kernel_name(), "tiled_matmul");

  const std::string pbtxt = Path("g.pbtxt");
  ASSERT_EQ(Run(absl::StrCat("trace tiled_matmul --set=m=600 -s k=300 "
                             "--set n=200 --output '",
                             pbtxt, "'"))
                .exit_code,
            0);
  EXPECT_THAT(Slurp(pbtxt), HasSubstr("kernel_name: \"tiled_matmul\""));
  absl::StatusOr<proto::Graph> text = ReadGraph(pbtxt);
  ASSERT_TRUE(text.ok()) << text.status();
  EXPECT_EQ(SerializeDeterministic(*text), SerializeDeterministic(*graph));
}

TEST_F(CliTest, TracingTwiceWritesIdenticalBytes) {
  const std::string a = Path("a.pb"), b = Path("b.pb");
  ASSERT_EQ(
      Run(absl::StrCat("trace tiled_matmul --set activation=silu -o '", a, "'"))
          .exit_code,
      0);
  ASSERT_EQ(
      Run(absl::StrCat("trace tiled_matmul --set activation=silu -o '", b, "'"))
          .exit_code,
      0);
  EXPECT_FALSE(Slurp(a).empty());
  EXPECT_EQ(Slurp(a), Slurp(b));
}

TEST_F(CliTest, TraceUsageErrorsAreOneLineWithExitTwo) {
  const std::string out = absl::StrCat("-o '", Path("x.pb"), "'");
  ExpectUsageError(absl::StrCat("trace no_such_kernel ", out), "trace",
                   "unknown kernel 'no_such_kernel' (registered: ");
  ExpectUsageError(absl::StrCat("trace tiled_matmul --set q=1 ", out), "trace",
                   "unknown parameter 'q' for kernel 'tiled_matmul'");
  ExpectUsageError(absl::StrCat("trace tiled_matmul --set m=abc ", out),
                   "trace", "parameter 'm': 'abc' is not an integer");
  ExpectUsageError(absl::StrCat("trace tiled_matmul --set n=0 ", out), "trace",
                   "parameter 'n'");
  ExpectUsageError(absl::StrCat("trace tiled_matmul --set dtype=fp8 ", out),
                   "trace", "parameter 'dtype'");
  ExpectUsageError(absl::StrCat("trace tiled_matmul --set m ", out), "trace",
                   "NAME=VALUE");
  ExpectUsageError("trace tiled_matmul", "trace", "-o");
  ExpectUsageError("trace tiled_matmul -o", "trace", "needs a value");
  ExpectUsageError(absl::StrCat("trace ", out), "trace", "no kernel");
  ExpectUsageError(absl::StrCat("trace tiled_matmul --frob ", out), "trace",
                   "unknown option '--frob'");
  ExpectUsageError(absl::StrCat("trace tiled_matmul -o '", Path("x.json"), "'"),
                   "trace", ".pbtxt");
  ExpectUsageError(
      absl::StrCat("trace tiled_matmul -o '", Path("no/such/dir/x.pb"), "'"),
      "trace", "cannot write");
  // Nothing was written by the failed traces.
  EXPECT_EQ(Slurp(Path("x.pb")), "");
}

TEST_F(CliTest, InfoCheckAndRunTakeTheScanStatisticsAndSelectOps) {
  absl::StatusOr<proto::Graph> graph = testing::Trace1([](builder::Tracer& t) {
    namespace isa = builder::isa;
    const builder::Tensor x = testing::LoadTile(t, "x", {4, 8});
    auto tile = [](std::vector<int64_t> shape, proto::DType dtype,
                   const char* name) {
      return builder::ndarray(shape, dtype, builder::Buffer::kSbuf, name);
    };
    builder::Tensor y = tile({4, 8}, proto::FLOAT32, "y");
    builder::Tensor p = tile({4, 8}, proto::UINT8, "p");
    builder::Tensor st = tile({4, 6}, proto::FLOAT32, "st");
    builder::Tensor mv = tile({4, 2}, proto::FLOAT32, "mv");
    builder::Tensor r = tile({4, 1}, proto::FLOAT32, "r");
    isa::tensor_tensor_scan(y, x, x, 1.0f, isa::Alu::kAdd, isa::Alu::kAdd);
    isa::tensor_scalar(p, x, isa::Alu::kGreater, 0.0f);
    isa::tensor_copy_predicated(y, x, p, /*reverse_pred=*/true);
    isa::tensor_scalar_reduce(y, y, isa::Alu::kMultiply, 2.0f, isa::Alu::kAdd,
                              r);
    isa::bn_stats(st, y);
    isa::bn_aggr(mv, st);
    testing::StoreTile(t, "mv", mv);
    testing::StoreTile(t, "r", r);
  });
  ASSERT_TRUE(graph.ok()) << graph.status();
  const std::string pb = Path("ops.pb");
  ASSERT_TRUE(WriteGraph(*graph, pb).ok());
  const Result info = Run(absl::StrCat("info '", pb, "'"));
  ASSERT_EQ(info.exit_code, 0) << info.err;
  for (const char* op : {"tensor_tensor_scan", "tensor_copy_predicated",
                         "tensor_scalar_reduce", "bn_stats", "bn_aggr"}) {
    EXPECT_THAT(info.out, HasSubstr(op));
  }
  const Result check = Run(absl::StrCat("check '", pb, "'"));
  EXPECT_EQ(check.exit_code, 0) << check.out << check.err;
  const Result run = Run(absl::StrCat("run '", pb,
                                      "' --random-inputs 3 "
                                      "--output-dir '",
                                      Path("out"), "'"));
  EXPECT_EQ(run.exit_code, 0) << run.out << run.err;
}

TEST_F(CliTest, InfoSummarizesATracedGraph) {
  const std::string pb = Path("g.pb");
  ASSERT_EQ(Run(absl::StrCat("trace tiled_matmul --set m=600 --set k=300 "
                             "--set n=200 --set dtype=float32 -o '",
                             pb, "'"))
                .exit_code,
            0);
  const Result r = Run(absl::StrCat("info '", pb, "'"));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("kernel: tiled_matmul"));
  EXPECT_THAT(r.out, HasSubstr("m=600 k=300 n=200 bias=1 activation=none "
                               "dtype=float32"));
  EXPECT_THAT(r.out, HasSubstr("1 rank(s), 1 core(s)"));
  EXPECT_THAT(r.out, HasSubstr("instructions: 42"));
  EXPECT_THAT(r.out, HasSubstr("core 0: 42 instructions"));
  // Count lines are "  <name>  <count>".
  auto count_of = [&](const std::string& name) -> std::string {
    for (const std::string& line : Lines(r.out)) {
      std::vector<std::string> words =
          absl::StrSplit(line, ' ', absl::SkipEmpty());
      if (words.size() == 2 && words[0] == name) return words[1];
    }
    return "absent";
  };
  EXPECT_EQ(count_of("nc_matmul"), "12");
  EXPECT_EQ(count_of("activation"), "4");
  EXPECT_EQ(count_of("dma_copy"), "26");
  EXPECT_EQ(count_of("tensor"), "12");
  EXPECT_EQ(count_of("scalar"), "4");
  EXPECT_EQ(count_of("psum"), "16");  // 12 matmul dsts + 4 evacuation reads
  // fp32: lhs^T tiles [128, 3, 512] at 0 (6144 B), bias column at 6144
  // (64 B aligned), then the rhs or output tile (at most 2048 B).
  EXPECT_THAT(r.out, HasSubstr("core 0: sbuf 8256, psum 2048"));
  EXPECT_THAT(r.out, HasSubstr("lhs"));
  EXPECT_THAT(r.out, HasSubstr("[600, 300]"));
  // Deterministic: the same file gives the same text.
  EXPECT_EQ(Run(absl::StrCat("info '", pb, "'")).out, r.out);
}

TEST_F(CliTest, InfoOnMissingOrCorruptFilesIsAOneLineError) {
  ExpectUsageError(absl::StrCat("info '", Path("absent.pb"), "'"), "info",
                   "absent.pb");
  const std::string junk = Path("junk.pb");
  std::ofstream(junk) << "\xff\xff\xff not a graph";
  ExpectUsageError(absl::StrCat("info '", junk, "'"), "info", "junk.pb");
  ExpectUsageError("info", "info", "no graph file");
}

}  // namespace
}  // namespace nkigraph
