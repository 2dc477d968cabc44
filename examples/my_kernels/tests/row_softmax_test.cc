// row_softmax through the interpreter's C++ API, against hand-worked
// values and the plain C++ reference; its tiling as the graph shows it;
// its golden graph, compared with the diff library.
#include "row_softmax.h"

#include <cmath>
#include <cstdint>
#include <limits>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "diff/diff.h"
#include "diff/format.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "interp/interpreter.h"
#include "kernels/compare.h"
#include "kernels/registry.h"
#include "ops/instr_facts.h"
#include "proto/nkigraph.pb.h"
#include "util/graph_io.h"
#include "util/host_array.h"

namespace my_kernels {
namespace {

using nkigraph::HostArray;
using ::testing::HasSubstr;

// Traces `p`, runs it on `x` and returns `out`.
HostArray RunSoftmax(const RowSoftmaxParams& p, const HostArray& x) {
  absl::StatusOr<nkigraph::proto::Graph> graph = RowSoftmaxSpec().Trace(p);
  EXPECT_TRUE(graph.ok()) << graph.status();
  auto interp = nkigraph::interp::Interpreter::Create(*std::move(graph));
  EXPECT_TRUE(interp.ok()) << interp.status();
  EXPECT_TRUE((*interp)->SetInput(x).ok());
  const absl::Status run = (*interp)->Run();
  EXPECT_TRUE(run.ok()) << run;
  absl::StatusOr<HostArray> out = (*interp)->GetOutput("out");
  EXPECT_TRUE(out.ok()) << out.status();
  return *std::move(out);
}

// x [rows, cols]: row r holds sin(r + c / 7) * 4, with +60 on every fifth
// row (exp would overflow without the running max), exactly representable
// in bfloat16 after rounding by the device either way.
HostArray MakeX(const RowSoftmaxParams& p) {
  HostArray x;
  x.name = "x";
  x.shape = {p.rows, p.cols};
  for (int64_t r = 0; r < p.rows; ++r) {
    for (int64_t c = 0; c < p.cols; ++c) {
      x.f32.push_back(static_cast<float>(4 * std::sin(r + c / 7.0) +
                                         (r % 5 == 0 ? 60 : 0)));
    }
  }
  return x;
}

TEST(RowSoftmax, HandWorkedRows) {
  // Three chunks per row; row 0 is uniform, row 1 has e^0 : e^(ln 3) in
  // its first two columns and -inf (exp 0) elsewhere.
  const RowSoftmaxParams p{
      .rows = 2, .cols = 5, .chunk = 2, .dtype = nkigraph::proto::FLOAT32};
  const float inf = std::numeric_limits<float>::infinity();
  HostArray x;
  x.name = "x";
  x.shape = {2, 5};
  x.f32 = {7, 7, 7, 7, 7, 0, std::log(3.0f), -inf, -inf, -inf};
  const HostArray out = RunSoftmax(p, x);
  for (int c = 0; c < 5; ++c) EXPECT_NEAR(out.f32[c], 0.2f, 1e-7);
  EXPECT_NEAR(out.f32[5], 0.25f, 1e-7);
  EXPECT_NEAR(out.f32[6], 0.75f, 1e-7);
  for (int c = 7; c < 10; ++c) EXPECT_EQ(out.f32[c], 0.0f);
}

// Two row tiles (128 + 72 rows) and chunks with a tail (256, 256, 188), in
// both dtypes, against the reference computed from the same inputs as the
// device holds them.
class RowSoftmaxVsReference
    : public ::testing::TestWithParam<nkigraph::proto::DType> {};

TEST_P(RowSoftmaxVsReference, MatchesReference) {
  const RowSoftmaxParams p{
      .rows = 200, .cols = 700, .chunk = 256, .dtype = GetParam()};
  absl::StatusOr<nkigraph::proto::Graph> graph = RowSoftmaxSpec().Trace(p);
  ASSERT_TRUE(graph.ok()) << graph.status();
  auto interp = nkigraph::interp::Interpreter::Create(*std::move(graph));
  ASSERT_TRUE(interp.ok()) << interp.status();
  ASSERT_TRUE((*interp)->SetInput(MakeX(p)).ok());
  // The reference sees x rounded to the dtype, as the device holds it.
  absl::StatusOr<HostArray> x_held =
      (*interp)->ReadTensor((*interp)->FindInput("x")->id(), 0, 0);
  ASSERT_TRUE(x_held.ok()) << x_held.status();
  x_held->name = "x";
  x_held->shape = {p.rows, p.cols};
  ASSERT_TRUE((*interp)->Run().ok());
  absl::StatusOr<HostArray> got = (*interp)->GetOutput("out");
  ASSERT_TRUE(got.ok()) << got.status();

  nkigraph::HostOutputs want = RowSoftmaxReference(p, {*x_held});
  ASSERT_TRUE(want.ok()) << want.status();
  const double tol = RowSoftmaxSpec().tolerance(p);
  absl::StatusOr<nkigraph::kernels::OutputComparison> compared =
      nkigraph::kernels::CompareOutput(
          *got, (*want)[0], nkigraph::kernels::Comparison::kElementwise, tol);
  ASSERT_TRUE(compared.ok()) << compared.status();
  EXPECT_TRUE(compared->ok())
      << "max error " << compared->error << " at " << compared->first_failure;
  // Independently of the reference: every row sums to 1.
  for (int64_t r = 0; r < p.rows; ++r) {
    double sum = 0;
    for (int64_t c = 0; c < p.cols; ++c) sum += got->f32[r * p.cols + c];
    EXPECT_NEAR(sum, 1.0, p.dtype == nkigraph::proto::FLOAT32 ? 1e-5 : 2e-2)
        << "row " << r;
  }
}

INSTANTIATE_TEST_SUITE_P(Dtypes, RowSoftmaxVsReference,
                         ::testing::Values(nkigraph::proto::FLOAT32,
                                           nkigraph::proto::BFLOAT16));

TEST(RowSoftmax, StreamsEachRowTileTwiceChunkByChunk) {
  // 2 row tiles x 3 chunks: two loads (one per pass) and one store each.
  const RowSoftmaxParams p{.rows = 130, .cols = 300, .chunk = 128};
  absl::StatusOr<nkigraph::proto::Graph> graph = RowSoftmaxSpec().Trace(p);
  ASSERT_TRUE(graph.ok()) << graph.status();
  int dmas = 0, exps = 0;
  for (const auto& instr : graph->streams(0).instructions()) {
    if (instr.opcode() == nkigraph::proto::DMA_COPY) ++dmas;
    if (instr.opcode() == nkigraph::proto::ACTIVATION) ++exps;
  }
  EXPECT_EQ(dmas, 2 * 3 * 3);
  // Pass 1: the correction and the chunk's exp; pass 2: the exp; plus one
  // reciprocal per row tile.
  EXPECT_EQ(exps, 2 * (3 * 2 + 3 + 1));
}

TEST(RowSoftmax, RefusesAChunkTooWideForSbuf) {
  const RowSoftmaxParams p{.chunk = 20000};
  absl::StatusOr<nkigraph::proto::Graph> graph = RowSoftmaxSpec().Trace(p);
  ASSERT_FALSE(graph.ok());
  EXPECT_THAT(graph.status().message(), HasSubstr("parameter 'chunk'"));
  EXPECT_THAT(graph.status().message(), HasSubstr("16384"));
}

TEST(RowSoftmax, TracesThroughARegistryByParameterText) {
  nkigraph::kernels::KernelRegistry registry;
  registry.Register(RowSoftmaxSpec());
  absl::StatusOr<nkigraph::proto::Graph> graph = registry.Trace(
      "row_softmax", {{"rows", "130"}, {"cols", "300"}, {"chunk", "128"}});
  ASSERT_TRUE(graph.ok()) << graph.status();
  EXPECT_EQ(graph->kernel_name(), "row_softmax");
  absl::StatusOr<nkigraph::proto::Graph> bad =
      registry.Trace("row_softmax", {{"rows", "0"}});
  ASSERT_FALSE(bad.ok());
  EXPECT_THAT(bad.status().message(), HasSubstr("parameter 'rows' is 0"));
}

// The golden graph. After an intended change to the kernel, regenerate it
// with `my_nkigraph trace` (README.md, "Tests").
TEST(RowSoftmax, MatchesGoldenGraph) {
  absl::StatusOr<nkigraph::proto::Graph> golden = nkigraph::ReadGraph(
      std::string(MY_KERNELS_GOLDEN_DIR) + "/row_softmax_small.pbtxt");
  ASSERT_TRUE(golden.ok()) << golden.status();
  const RowSoftmaxParams p{.rows = 130,
                           .cols = 300,
                           .chunk = 128,
                           .dtype = nkigraph::proto::FLOAT32};
  absl::StatusOr<nkigraph::proto::Graph> traced = RowSoftmaxSpec().Trace(p);
  ASSERT_TRUE(traced.ok()) << traced.status();
  absl::StatusOr<nkigraph::diff::DiffResult> result =
      nkigraph::diff::Diff(*golden, *traced, {});
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_TRUE(result->same()) << nkigraph::diff::FormatText(
      *result, {.label_a = "golden", .label_b = "traced"});
}

}  // namespace
}  // namespace my_kernels
