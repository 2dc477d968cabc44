#include <cmath>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/test_util.h"

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
