// tensor_scalar_reduce: dst = data op0 operand0 and reduce_res = reduce_op
// over each partition's results, checked against values worked by hand,
// against tensor_scalar followed by tensor_reduce (the two instructions it
// fuses), and for the checks it refuses.
#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/test_util.h"

namespace nkigraph {
namespace {

using builder::Buffer;
using builder::Tensor;
using builder::Tracer;
namespace isa = builder::isa;
using isa::Alu;
using ::testing::ElementsAre;
using testing::Floats;
using ::testing::HasSubstr;
using testing::LoadTile;
using testing::StoreTile;

using testing::TraceAndRun;
using Outputs = std::map<std::string, HostArray>;

TEST(TensorScalarReduceTest, ColumnAndImmediateWorkedByHand) {
  absl::StatusOr<Outputs> out = TraceAndRun(
      [](Tracer& t) {
        const Tensor x = LoadTile(t, "x", {2, 3});
        const Tensor s = LoadTile(t, "s", {2, 1});
        Tensor y = builder::ndarray({2, 3}, proto::FLOAT32, Buffer::kSbuf, "y");
        Tensor z = builder::ndarray({2, 3}, proto::FLOAT32, Buffer::kSbuf, "z");
        Tensor sum =
            builder::ndarray({2, 1}, proto::FLOAT32, Buffer::kSbuf, "sum");
        Tensor max =
            builder::ndarray({2, 1}, proto::FLOAT32, Buffer::kSbuf, "max");
        isa::tensor_scalar_reduce(y, x, Alu::kMultiply, s, Alu::kAdd, sum);
        // 10 - x, reduced by maximum.
        isa::tensor_scalar_reduce(z, x, Alu::kSubtract, 10.0f, Alu::kMaximum,
                                  max, /*reverse0=*/true);
        StoreTile(t, "y", y);
        StoreTile(t, "sum", sum);
        StoreTile(t, "z", z);
        StoreTile(t, "max", max);
      },
      {Floats("x", {2, 3}, {1, 2, 3, 4, -5, 6}), Floats("s", {2, 1}, {2, -1})});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_THAT(out->at("y").f32, ElementsAre(2, 4, 6, -4, 5, -6));
  EXPECT_THAT(out->at("sum").f32, ElementsAre(12, -5));
  EXPECT_THAT(out->at("z").f32, ElementsAre(9, 8, 7, 6, 15, 4));
  EXPECT_THAT(out->at("max").f32, ElementsAre(9, 15));
}

TEST(TensorScalarReduceTest, SubtractAndMultiplyReduceFromTheirIdentities) {
  // subtract folds from 0 in element order: 0 - 1 - 2 - 3 = -6;
  // multiply from 1: 1 * 2 * 3 = 6 (op0 add 0 leaves the data).
  absl::StatusOr<Outputs> out = TraceAndRun(
      [](Tracer& t) {
        const Tensor x = LoadTile(t, "x", {1, 3});
        Tensor y = builder::ndarray({1, 3}, proto::FLOAT32, Buffer::kSbuf, "y");
        Tensor r1 =
            builder::ndarray({1, 1}, proto::FLOAT32, Buffer::kSbuf, "a");
        Tensor r2 =
            builder::ndarray({1, 1}, proto::FLOAT32, Buffer::kSbuf, "b");
        isa::tensor_scalar_reduce(y, x, Alu::kAdd, 0.0f, Alu::kSubtract, r1);
        isa::tensor_scalar_reduce(y, x, Alu::kAdd, 0.0f, Alu::kMultiply, r2);
        StoreTile(t, "r1", r1);
        StoreTile(t, "r2", r2);
      },
      {Floats("x", {1, 3}, {1, 2, 3})});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_THAT(out->at("r1").f32, ElementsAre(-6));
  EXPECT_THAT(out->at("r2").f32, ElementsAre(6));
}

TEST(TensorScalarReduceTest, EqualsTensorScalarThenTensorReduce) {
  const std::vector<float> x = {0.75f, -1.5f, 2.125f, 3.0f,  -0.3f, 7.25f,
                                -4.0f, 0.1f,  5.5f,   -2.2f, 1.0f,  0.6f,
                                1.1f,  -0.7f, 2.0f,   -3.3f, 0.9f,  4.4f};
  const std::vector<float> column = {1.25f, -0.8f, 3.5f};
  for (Alu op0 : {Alu::kAdd, Alu::kSubtract, Alu::kMultiply, Alu::kDivide,
                  Alu::kMaximum}) {
    for (Alu reduce_op : {Alu::kAdd, Alu::kSubtract, Alu::kMultiply,
                          Alu::kMaximum, Alu::kMinimum}) {
      for (int flags = 0; flags < 4; ++flags) {
        const bool reverse0 = (flags & 1) != 0;
        const bool use_column = (flags & 2) != 0;
        absl::StatusOr<Outputs> out = TraceAndRun(
            [&](Tracer& t) {
              const Tensor data = LoadTile(t, "x", {3, 6});
              const Tensor c = LoadTile(t, "c", {3, 1});
              const isa::Scalar operand0 =
                  use_column ? isa::Scalar(c) : isa::Scalar(-0.625f);
              auto tile = [](std::vector<int64_t> shape, const char* name) {
                return builder::ndarray(shape, proto::FLOAT32, Buffer::kSbuf,
                                        name);
              };
              Tensor fused = tile({3, 6}, "fused");
              Tensor fused_r = tile({3, 1}, "fused_r");
              isa::tensor_scalar_reduce(fused, data, op0, operand0, reduce_op,
                                        fused_r, reverse0);
              Tensor apart = tile({3, 6}, "apart");
              Tensor apart_r = tile({3, 1}, "apart_r");
              isa::TensorScalarArgs args;
              args.reverse0 = reverse0;
              isa::tensor_scalar(apart, data, op0, operand0, args);
              isa::tensor_reduce(apart_r, reduce_op, apart);
              StoreTile(t, "fused", fused);
              StoreTile(t, "fused_r", fused_r);
              StoreTile(t, "apart", apart);
              StoreTile(t, "apart_r", apart_r);
            },
            {Floats("x", {3, 6}, x), Floats("c", {3, 1}, column)});
        SCOPED_TRACE(absl::StrCat(ops::AluName(op0), " ",
                                  ops::AluName(reduce_op), " flags ", flags));
        ASSERT_TRUE(out.ok()) << out.status();
        EXPECT_EQ(out->at("fused").f32, out->at("apart").f32);
        EXPECT_EQ(out->at("fused_r").f32, out->at("apart_r").f32);
      }
    }
  }
}

TEST(TensorScalarReduceTest, ChecksRefuseShapesBitwiseAndNonReducingOps) {
  const auto refused = &testing::TraceError;
  const auto tile = [](std::vector<int64_t> shape, const char* name) {
    return builder::ndarray(shape, proto::FLOAT32, Buffer::kSbuf, name);
  };
  EXPECT_THAT(refused([&](Tracer&) {
                Tensor d = tile({2, 4}, "d");
                isa::tensor_scalar_reduce(d, d, Alu::kAdd, 1.0f, Alu::kAdd,
                                          tile({2, 2}, "r"));
              }),
              HasSubstr("tensor_scalar_reduce: 'reduce_res' must be [2, 1], "
                        "not [2, 2]"));
  EXPECT_THAT(refused([&](Tracer&) {
                Tensor d = tile({2, 4}, "d");
                isa::tensor_scalar_reduce(tile({2, 3}, "y"), d, Alu::kAdd, 1.0f,
                                          Alu::kAdd, tile({2, 1}, "r"));
              }),
              HasSubstr("'dst' is [2, 3] but 'data' is [2, 4]"));
  EXPECT_THAT(refused([&](Tracer&) {
                Tensor d = tile({2, 4}, "d");
                isa::tensor_scalar_reduce(d, d, Alu::kBitwiseAnd, 1.0f,
                                          Alu::kAdd, tile({2, 1}, "r"));
              }),
              HasSubstr("op0 'bitwise_and' is bitwise"));
  EXPECT_THAT(refused([&](Tracer&) {
                Tensor d = tile({2, 4}, "d");
                isa::tensor_scalar_reduce(d, d, Alu::kAdd, 1.0f, Alu::kEqual,
                                          tile({2, 1}, "r"));
              }),
              HasSubstr("reduce_op"));
}

}  // namespace
}  // namespace nkigraph
