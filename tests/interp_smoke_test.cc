#include <cmath>
#include <memory>
#include <set>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/test_util.h"
#include "util/graph_io.h"

namespace nkigraph {
namespace {

using builder::Buffer;
using builder::Tensor;
using builder::Tracer;
namespace isa = builder::isa;
using testing::Floats;
using ::testing::HasSubstr;
using testing::RunGraph;
using testing::Trace1;

// out[n, m] = relu(sum_k rhs[k, n] * lhsT[k, m] + bias[n]) for one tile.
TEST(InterpSmokeTest, MatmulBiasReluMatchesHandComputedValues) {
  absl::StatusOr<proto::Graph> graph = Trace1([](Tracer& t) {
    Tensor lhs_t = t.Input("lhs_t", {2, 3}, proto::FLOAT32);  // [K, M]
    Tensor rhs = t.Input("rhs", {2, 2}, proto::FLOAT32);      // [K, N]
    Tensor bias = t.Input("bias", {2, 1}, proto::FLOAT32);
    Tensor out = t.Allocate({2, 3}, proto::FLOAT32, Buffer::kSharedHbm, "o");
    builder::Scope scope("tile");
    Tensor a = builder::ndarray({2, 3}, proto::FLOAT32, Buffer::kSbuf, "a");
    Tensor b = builder::ndarray({2, 2}, proto::FLOAT32, Buffer::kSbuf, "b");
    Tensor c = builder::ndarray({2, 1}, proto::FLOAT32, Buffer::kSbuf, "c");
    Tensor acc = builder::ndarray({2, 3}, proto::FLOAT32, Buffer::kPsum, "acc");
    Tensor res = builder::ndarray({2, 3}, proto::FLOAT32, Buffer::kSbuf, "res");
    isa::dma_copy(a, lhs_t);
    isa::dma_copy(b, rhs);
    isa::dma_copy(c, bias);
    isa::nc_matmul(acc, b, a);
    isa::activation(res, isa::ActFunc::kRelu, acc, {.bias = c});
    isa::dma_copy(out, res);
    t.Output("out", out);
  });
  ASSERT_TRUE(graph.ok()) << graph.status();
  // lhs_t = [[1, 2, 3], [4, 5, 6]], rhs = [[1, -1], [0, 1]], bias = [0.5, -10]
  // out[0, m] = 1*lhs_t[0, m] + 0*lhs_t[1, m] + 0.5 = [1.5, 2.5, 3.5]
  // out[1, m] = relu(-lhs_t[0, m] + lhs_t[1, m] - 10) = relu(-7) = 0
  absl::StatusOr<std::map<std::string, HostArray>> out =
      RunGraph(*graph, {Floats("lhs_t", {2, 3}, {1, 2, 3, 4, 5, 6}),
                        Floats("rhs", {2, 2}, {1, -1, 0, 1}),
                        Floats("bias", {2, 1}, {0.5f, -10})});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_THAT(out->at("out").f32,
              ::testing::ElementsAre(1.5f, 2.5f, 3.5f, 0.0f, 0.0f, 0.0f));
}

TEST(InterpSmokeTest, RunsAGraphOnItsArenaWhereItLies) {
  absl::StatusOr<proto::Graph> traced = Trace1([](Tracer& t) {
    Tensor x = t.Input("x", {2, 3}, proto::FLOAT32);
    Tensor out = t.Allocate({2, 3}, proto::FLOAT32, Buffer::kSharedHbm, "o");
    Tensor a = builder::ndarray({2, 3}, proto::FLOAT32, Buffer::kSbuf, "a");
    isa::dma_copy(a, x);
    isa::tensor_tensor(a, a, a, isa::Alu::kAdd);
    isa::dma_copy(out, a);
    t.Output("out", out);
  });
  ASSERT_TRUE(traced.ok()) << traced.status();
  absl::StatusOr<ArenaGraph> parsed =
      ParseGraph(SerializeDeterministic(*traced), "smoke");
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  const proto::Graph* on_arena = &parsed->graph();
  absl::StatusOr<std::unique_ptr<interp::Interpreter>> interp =
      interp::Interpreter::Create(*std::move(parsed));
  ASSERT_TRUE(interp.ok()) << interp.status();
  // The interpreter holds the arena's graph itself, not a copy.
  EXPECT_EQ(&(*interp)->graph(), on_arena);
  ASSERT_TRUE(
      (*interp)->SetInput(Floats("x", {2, 3}, {1, 2, 3, 4, 5, -6})).ok());
  ASSERT_TRUE((*interp)->Run().ok());
  absl::StatusOr<HostArray> out = (*interp)->GetOutput("out");
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_THAT(out->f32, ::testing::ElementsAre(2, 4, 6, 8, 10, -12));
}

TEST(InterpSmokeTest,
     ReadingNeverWrittenSbufIsADeviceErrorNamingTheInstruction) {
  absl::StatusOr<proto::Graph> graph = Trace1([](Tracer& t) {
    Tensor out = t.Allocate({4, 4}, proto::FLOAT32, Buffer::kSharedHbm, "o");
    Tensor a = builder::ndarray({4, 4}, proto::FLOAT32, Buffer::kSbuf, "a");
    isa::dma_copy(out, a);
    t.Output("out", out);
  });
  ASSERT_TRUE(graph.ok()) << graph.status();
  absl::StatusOr<std::map<std::string, HostArray>> out = RunGraph(*graph, {});
  ASSERT_FALSE(out.ok());
  EXPECT_EQ(out.status().code(), interp::kDeviceErrorCode);
  EXPECT_THAT(out.status().message(), HasSubstr("instruction #0 dma_copy"));
  EXPECT_THAT(out.status().message(), HasSubstr("interp_smoke_test.cc:"));
  EXPECT_THAT(out.status().message(),
              HasSubstr("reads never-written sbuf tensor 'a' element [0, 0]"));
}

}  // namespace
}  // namespace nkigraph

namespace nkigraph {
namespace {

// Random inputs respect declared value ranges (whole numbers in [lo, hi],
// in any dtype) and keep the old draws for the others.
TEST(InterpRandomInputsTest, DeclaredValueRangesAreRespected) {
  absl::StatusOr<proto::Graph> graph = testing::Trace1([](builder::Tracer& t) {
    t.Input("index", {64}, proto::INT32, true, builder::ValueRange{3, 5});
    t.Input("mask", {64}, proto::BFLOAT16, true, builder::ValueRange{0, 1});
    t.Input("x", {64}, proto::FLOAT32);
    t.Input("n", {64}, proto::INT32);
  });
  ASSERT_TRUE(graph.ok()) << graph.status();
  absl::StatusOr<std::unique_ptr<interp::Interpreter>> interp =
      interp::Interpreter::Create(*graph);
  ASSERT_TRUE(interp.ok()) << interp.status();
  ASSERT_TRUE((*interp)->FillRandomInputs(7).ok());
  EXPECT_TRUE((*interp)->MissingInputs().empty());
  const auto read = [&](uint32_t id) {
    absl::StatusOr<HostArray> a = (*interp)->ReadTensor(id, 0, 0);
    EXPECT_TRUE(a.ok()) << a.status();
    return a.ok() ? *a : HostArray();
  };
  const HostArray index = read(1), mask = read(2), x = read(3), n = read(4);
  EXPECT_EQ(std::set<int32_t>(index.i32.begin(), index.i32.end()),
            (std::set<int32_t>{3, 4, 5}));
  EXPECT_EQ(std::set<float>(mask.f32.begin(), mask.f32.end()),
            (std::set<float>{0.0f, 1.0f}));
  ASSERT_EQ(x.f32.size(), 64u);
  for (float v : x.f32) {
    EXPECT_GE(v, -1.0f);
    EXPECT_LT(v, 1.0f);
  }
  ASSERT_EQ(n.i32.size(), 64u);
  for (int32_t v : n.i32) {
    EXPECT_GE(v, 0);
    EXPECT_LT(v, 8);
  }
}

TEST(InterpRandomInputsTest, AnEmptyValueRangeIsATraceError) {
  absl::StatusOr<proto::Graph> graph = testing::Trace1([](builder::Tracer& t) {
    t.Input("index", {4}, proto::INT32, true, builder::ValueRange{2, 1});
  });
  ASSERT_FALSE(graph.ok());
  EXPECT_THAT(graph.status().message(),
              ::testing::HasSubstr("input 'index': its value range [2, 1] is "
                                   "empty"));
}

}  // namespace
}  // namespace nkigraph
