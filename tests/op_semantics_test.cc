// Semantics of every opcode: tiny graphs traced with the DSL, run on the
// interpreter, compared with values worked out by hand in each test.
#include <cmath>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/test_util.h"

namespace nkigraph {
namespace {

using builder::Buffer;
using builder::OobMode;
using builder::Shape;
using builder::Tensor;
using builder::Tracer;
namespace isa = builder::isa;
using isa::ActFunc;
using isa::Alu;
using isa::Engine;
using ::testing::ElementsAre;
using ::testing::ElementsAreArray;
using ::testing::FloatNear;
using testing::Floats;
using ::testing::HasSubstr;
using testing::Ints;
using ::testing::Pointwise;
using testing::RunGraph;
using testing::Trace1;
using testing::TraceWorld;

using testing::TraceAndRun;
using Outputs = std::map<std::string, HostArray>;

// Loads kernel input `name` ([shape] in HBM) into a fresh SBUF tile.
Tensor Load(Tracer& t, const std::string& name, const Shape& shape,
            proto::DType dtype = proto::FLOAT32) {
  Tensor in = t.Input(name, shape, dtype);
  Tensor tile = builder::ndarray(shape, dtype, Buffer::kSbuf, name + "_sb");
  isa::dma_copy(tile, in);
  return tile;
}

// Stores an SBUF tile (or HBM view) as kernel output `name`.
void Store(Tracer& t, const std::string& name, const Tensor& tile,
           proto::DType dtype = proto::FLOAT32) {
  Tensor out = t.Allocate(tile.shape(), dtype, Buffer::kSharedHbm, name);
  isa::dma_copy(out, tile);
  t.Output(name, out);
}

// Evacuates a PSUM tile through SBUF and stores it as output `name`.
void StorePsum(Tracer& t, const std::string& name, const Tensor& psum) {
  Tensor tile = builder::ndarray(psum.shape(), proto::FLOAT32, Buffer::kSbuf,
                                 name + "_sb");
  isa::tensor_copy(tile, psum);
  Store(t, name, tile);
}

// ---------------------------------------------------------------------------
// nc_matmul

TEST(OpMatmulTest, OverwriteThenAccumulateThenOverwriteFp32) {
  absl::StatusOr<Outputs> out = TraceAndRun(
      [](Tracer& t) {
        Tensor st = Load(t, "st", {2, 2});    // [K, M]
        Tensor mv = Load(t, "mv", {2, 3});    // [K, N]
        Tensor mv2 = Load(t, "mv2", {2, 3});  // [K, N]
        Tensor acc =
            builder::ndarray({2, 3}, proto::FLOAT32, Buffer::kPsum, "acc");
        isa::nc_matmul(acc, st, mv);
        StorePsum(t, "first", acc);
        isa::nc_matmul(acc, st, mv2, /*accumulate=*/true);
        StorePsum(t, "accumulated", acc);
        isa::nc_matmul(acc, st, mv2, /*accumulate=*/false);
        StorePsum(t, "overwritten", acc);
      },
      {Floats("st", {2, 2}, {1, 2, 3, 4}),
       Floats("mv", {2, 3}, {1, 0, -1, 2, 1, 0}),
       Floats("mv2", {2, 3}, {1, 1, 1, 0, 0, 0})});
  ASSERT_TRUE(out.ok()) << out.status();
  // dst[m, n] = sum_k st[k, m] * mv[k, n]:
  //   m=0: 1*[1, 0, -1] + 3*[2, 1, 0] = [7, 3, -1]
  //   m=1: 2*[1, 0, -1] + 4*[2, 1, 0] = [10, 4, -2]
  EXPECT_THAT(out->at("first").f32, ElementsAre(7, 3, -1, 10, 4, -2));
  // st^T @ mv2 = [[1, 1, 1], [2, 2, 2]], added to the above.
  EXPECT_THAT(out->at("accumulated").f32, ElementsAre(8, 4, 0, 12, 6, 0));
  EXPECT_THAT(out->at("overwritten").f32, ElementsAre(1, 1, 1, 2, 2, 2));
}

TEST(OpMatmulTest, Bf16InputsAreRoundedAndAccumulatedInFp32) {
  absl::StatusOr<Outputs> out = TraceAndRun(
      [](Tracer& t) {
        Tensor st = Load(t, "st", {2, 1}, proto::BFLOAT16);  // [K, M]
        Tensor mv = Load(t, "mv", {2, 2}, proto::BFLOAT16);  // [K, N]
        Tensor acc =
            builder::ndarray({1, 2}, proto::FLOAT32, Buffer::kPsum, "acc");
        isa::nc_matmul(acc, st, mv);
        isa::nc_matmul(acc, st, mv, /*accumulate=*/true);
        StorePsum(t, "out", acc);
      },
      // 1 + 2^-8 is a tie between bf16 neighbours 1 and 1 + 2^-7; it rounds
      // to the even one, 1.
      {Floats("st", {2, 1}, {1.00390625f, 2}),
       Floats("mv", {2, 2}, {3, 1, 1, 0.5f})});
  ASSERT_TRUE(out.ok()) << out.status();
  // Once: [1*3 + 2*1, 1*1 + 2*0.5] = [5, 2]; accumulated twice: [10, 4].
  // (Unrounded inputs would give 10.0234375.)
  EXPECT_THAT(out->at("out").f32, ElementsAre(10, 4));
}

// ---------------------------------------------------------------------------
// nc_transpose

TEST(OpTransposeTest, TensorEngineSbufToPsum) {
  absl::StatusOr<Outputs> out = TraceAndRun(
      [](Tracer& t) {
        Tensor data = Load(t, "x", {2, 3});
        Tensor tr =
            builder::ndarray({3, 2}, proto::FLOAT32, Buffer::kPsum, "tr");
        isa::nc_transpose(tr, data);
        StorePsum(t, "out", tr);
      },
      {Floats("x", {2, 3}, {1, 2, 3, 4, 5, 6})});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_THAT(out->at("out").f32, ElementsAre(1, 4, 2, 5, 3, 6));
}

TEST(OpTransposeTest, VectorEngineSbufToSbuf) {
  absl::StatusOr<Outputs> out = TraceAndRun(
      [](Tracer& t) {
        Tensor data = Load(t, "x", {3, 2});
        Tensor tr =
            builder::ndarray({2, 3}, proto::FLOAT32, Buffer::kSbuf, "tr");
        isa::nc_transpose(tr, data, Engine::kVector);
        Store(t, "out", tr);
      },
      {Floats("x", {3, 2}, {1, 2, 3, 4, 5, 6})});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_THAT(out->at("out").f32, ElementsAre(1, 3, 5, 2, 4, 6));
}

// ---------------------------------------------------------------------------
// activation

TEST(OpActivationTest, FunctionsAtKnownPoints) {
  const std::vector<ActFunc> funcs = {ActFunc::kRelu,
                                      ActFunc::kSquare,
                                      ActFunc::kExp,
                                      ActFunc::kSigmoid,
                                      ActFunc::kTanh,
                                      ActFunc::kSiluDx,
                                      ActFunc::kGeluApprxSigmoidDx};
  const int n = static_cast<int>(funcs.size());
  absl::StatusOr<Outputs> out = TraceAndRun(
      [&](Tracer& t) {
        Tensor x = Load(t, "x", {1, 4});
        Tensor y =
            builder::ndarray({1, 4 * n}, proto::FLOAT32, Buffer::kSbuf, "y");
        for (int k = 0; k < n; ++k) {
          isa::activation(y.Slice(1, 4 * k, 4), funcs[k], x);
        }
        Store(t, "out", y);
      },
      {Floats("x", {1, 4}, {0, 1, -2, 0.5f})});
  ASSERT_TRUE(out.ok()) << out.status();
  // Worked out with a calculator from the definitions, s(x) = 1/(1+e^-x):
  //   silu_dx(x) = s(x) + x s(x) (1 - s(x))
  //   gelu_apprx_sigmoid_dx(x) = s(1.702x) + 1.702x s(1.702x)(1 - s(1.702x))
  const std::vector<float> expected = {0,           1,           0,
                                       0.5f,  // relu
                                       0,           1,           4,
                                       0.25f,  // square
                                       1,           2.7182818f,  0.13533528f,
                                       1.6487213f,  // exp
                                       0.5f,        0.73105858f, 0.11920292f,
                                       0.62245933f,  // sigmoid
                                       0,           0.76159416f, -0.96402758f,
                                       0.46211716f,  // tanh
                                       0.5f,        0.92767051f, -0.090784249f,
                                       0.73996119f,  // silu_dx
                                       0.5f,        1.0677796f,  -0.073815354f,
                                       0.87922191f};  // gelu_..._dx
  EXPECT_THAT(out->at("out").f32, Pointwise(FloatNear(2e-6f), expected));
}

TEST(OpActivationTest, ImmediateScaleAndBias) {
  absl::StatusOr<Outputs> out = TraceAndRun(
      [](Tracer& t) {
        Tensor x = Load(t, "x", {1, 3});
        Tensor y = builder::ndarray({1, 3}, proto::FLOAT32, Buffer::kSbuf, "y");
        Tensor z = builder::ndarray({1, 3}, proto::FLOAT32, Buffer::kSbuf, "z");
        isa::activation(y, ActFunc::kCopy, x, {.bias = 1.0f, .scale = 2.0f});
        isa::activation(z, ActFunc::kRelu, x, {.bias = -1.5f});
        Store(t, "y", y);
        Store(t, "z", z);
      },
      {Floats("x", {1, 3}, {1, -2, 0.5f})});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_THAT(out->at("y").f32, ElementsAre(3, -3, 2));  // 2x + 1
  EXPECT_THAT(out->at("z").f32, ElementsAre(0, 0, 0));   // relu(x - 1.5)
}

TEST(OpActivationTest, PerPartitionScaleAndBiasColumns) {
  absl::StatusOr<Outputs> out = TraceAndRun(
      [](Tracer& t) {
        Tensor x = Load(t, "x", {2, 2});
        Tensor scale = Load(t, "scale", {2, 1});
        Tensor bias = Load(t, "bias", {2, 1});
        Tensor y = builder::ndarray({2, 2}, proto::FLOAT32, Buffer::kSbuf, "y");
        Tensor z = builder::ndarray({2, 2}, proto::FLOAT32, Buffer::kSbuf, "z");
        isa::activation(y, ActFunc::kCopy, x, {.bias = bias, .scale = scale});
        isa::activation(z, ActFunc::kCopy, x, {.bias = bias, .scale = 3.0f});
        Store(t, "y", y);
        Store(t, "z", z);
      },
      {Floats("x", {2, 2}, {1, -1, 2, 3}), Floats("scale", {2, 1}, {2, -1}),
       Floats("bias", {2, 1}, {0.5f, 1})});
  ASSERT_TRUE(out.ok()) << out.status();
  // Row 0: x * 2 + 0.5; row 1: x * -1 + 1.
  EXPECT_THAT(out->at("y").f32, ElementsAre(2.5f, -1.5f, -1, -2));
  // Row 0: x * 3 + 0.5; row 1: x * 3 + 1.
  EXPECT_THAT(out->at("z").f32, ElementsAre(3.5f, -2.5f, 7, 10));
}

TEST(OpActivationTest, ReduceRegistersResetAccumulateAndReadOut) {
  absl::StatusOr<Outputs> out = TraceAndRun(
      [](Tracer& t) {
        Tensor x = Load(t, "x", {2, 3});
        Tensor w = Load(t, "w", {2, 3});
        Tensor y = builder::ndarray({2, 3}, proto::FLOAT32, Buffer::kSbuf, "y");
        Tensor r1 =
            builder::ndarray({2, 1}, proto::FLOAT32, Buffer::kSbuf, "r1");
        Tensor r2 =
            builder::ndarray({2, 1}, proto::FLOAT32, Buffer::kSbuf, "r2");
        Tensor r3 =
            builder::ndarray({2, 1}, proto::FLOAT32, Buffer::kSbuf, "r3");
        isa::activation(
            y, ActFunc::kCopy, x,
            {.reduce_cmd = isa::ReduceCmd::kResetReduce, .reduce_res = r1});
        isa::activation(
            y, ActFunc::kSquare, w,
            {.reduce_cmd = isa::ReduceCmd::kReduce, .reduce_res = r2});
        isa::activation(y, ActFunc::kCopy, x,
                        {.reduce_cmd = isa::ReduceCmd::kResetReduce});
        isa::activation(y, ActFunc::kCopy, w, {.reduce_res = r3});
        Store(t, "r1", r1);
        Store(t, "r2", r2);
        Store(t, "r3", r3);
      },
      {Floats("x", {2, 3}, {1, 2, 3, 4, 5, 6}),
       Floats("w", {2, 3}, {1, 1, 1, 2, 2, -2})});
  ASSERT_TRUE(out.ok()) << out.status();
  // reset_reduce: row sums of x = [6, 15].
  EXPECT_THAT(out->at("r1").f32, ElementsAre(6, 15));
  // reduce adds the row sums of w^2 = [3, 12].
  EXPECT_THAT(out->at("r2").f32, ElementsAre(9, 27));
  // reset_reduce restarts at [6, 15]; idle leaves the registers alone.
  EXPECT_THAT(out->at("r3").f32, ElementsAre(6, 15));
}

TEST(OpActivationTest, ResetReduceIsActivationReduceFuncThenSum) {
  // activation_reduce(dst, exp, x, reduce_op=add, reduce_res, bias, scale)
  // is activation with reduce_cmd reset_reduce and reduce_res: the sum
  // along the free axis of exp(x * scale + bias), whatever the registers
  // held, equal to exp then tensor_reduce add. reduce_res may be in PSUM.
  absl::StatusOr<Outputs> out = TraceAndRun(
      [](Tracer& t) {
        Tensor x = Load(t, "x", {2, 4});
        Tensor b = Load(t, "b", {2, 1});
        Tensor y = builder::ndarray({2, 4}, proto::FLOAT32, Buffer::kSbuf, "y");
        Tensor r = builder::ndarray({2, 1}, proto::FLOAT32, Buffer::kPsum, "r");
        // Something left in the registers first, which reset_reduce drops.
        isa::activation(y, ActFunc::kCopy, x,
                        {.reduce_cmd = isa::ReduceCmd::kResetReduce});
        isa::activation(y, ActFunc::kExp, x,
                        {.bias = b,
                         .scale = 0.5f,
                         .reduce_cmd = isa::ReduceCmd::kResetReduce,
                         .reduce_res = r});
        Tensor y2 =
            builder::ndarray({2, 4}, proto::FLOAT32, Buffer::kSbuf, "y2");
        Tensor sum =
            builder::ndarray({2, 1}, proto::FLOAT32, Buffer::kSbuf, "sum");
        isa::activation(y2, ActFunc::kExp, x, {.bias = b, .scale = 0.5f});
        isa::tensor_reduce(sum, Alu::kAdd, y2);
        StorePsum(t, "r", r);
        Store(t, "sum", sum);
        Store(t, "y", y);
      },
      {Floats("x", {2, 4}, {0, 2, -2, 4, 1, 1, 1, 1}),
       Floats("b", {2, 1}, {0, -0.5f})});
  ASSERT_TRUE(out.ok()) << out.status();
  // Row 1: four times exp(0.5 - 0.5) = 4, exactly.
  EXPECT_EQ(out->at("r").f32[1], 4.0f);
  // Row 0: exp(0) + exp(1) + exp(-1) + exp(2), to float precision.
  const double row0 = 1 + std::exp(1.0) + std::exp(-1.0) + std::exp(2.0);
  EXPECT_NEAR(out->at("r").f32[0], row0, 1e-5 * row0);
  // The same bits as the activation followed by a separate sum.
  EXPECT_EQ(out->at("r").f32, out->at("sum").f32);
}

// ---------------------------------------------------------------------------
// tensor_tensor, tensor_scalar, tensor_reduce, tensor_copy

TEST(OpTensorTensorTest, FloatOps) {
  absl::StatusOr<Outputs> out = TraceAndRun(
      [](Tracer& t) {
        Tensor a = Load(t, "a", {2, 2});
        Tensor b = Load(t, "b", {2, 2});
        Tensor d = builder::ndarray({2, 2}, proto::FLOAT32, Buffer::kSbuf, "d");
        Tensor m = builder::ndarray({2, 2}, proto::FLOAT32, Buffer::kSbuf, "m");
        Tensor g = builder::ndarray({2, 2}, proto::FLOAT32, Buffer::kSbuf, "g");
        isa::tensor_tensor(d, a, b, Alu::kSubtract);
        isa::tensor_tensor(m, a, b, Alu::kMultiply);
        isa::tensor_tensor(g, a, b, Alu::kGreater);
        Store(t, "d", d);
        Store(t, "m", m);
        Store(t, "g", g);
      },
      {Floats("a", {2, 2}, {1, 2.5f, 3, -4}),
       Floats("b", {2, 2}, {4, 3, 2, -1})});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_THAT(out->at("d").f32, ElementsAre(-3, -0.5f, 1, -3));
  EXPECT_THAT(out->at("m").f32, ElementsAre(4, 7.5f, 6, 4));
  EXPECT_THAT(out->at("g").f32, ElementsAre(0, 0, 1, 0));
}

TEST(OpTensorTensorTest, Int32OpsAreExact) {
  absl::StatusOr<Outputs> out = TraceAndRun(
      [](Tracer& t) {
        Tensor a = Load(t, "a", {1, 3}, proto::INT32);
        Tensor b = Load(t, "b", {1, 3}, proto::INT32);
        Tensor s = builder::ndarray({1, 3}, proto::INT32, Buffer::kSbuf, "s");
        Tensor n = builder::ndarray({1, 3}, proto::INT32, Buffer::kSbuf, "n");
        isa::tensor_tensor(s, a, b, Alu::kAdd);
        isa::tensor_tensor(n, a, b, Alu::kBitwiseAnd);
        Store(t, "s", s, proto::INT32);
        Store(t, "n", n, proto::INT32);
      },
      {Ints("a", {1, 3}, {16777217, -7, 0x0F0F}),
       Ints("b", {1, 3}, {1, 2, 0x00FF})});
  ASSERT_TRUE(out.ok()) << out.status();
  // 2^24 + 2 is not reachable in fp32 arithmetic from 2^24 + 1 (which fp32
  // cannot even hold); the integer path is exact.
  EXPECT_THAT(out->at("s").i32, ElementsAre(16777218, -5, 0x100E));
  EXPECT_THAT(out->at("n").i32, ElementsAre(1, 0, 0x000F));  // -7 & 2 = 0
}

TEST(OpTensorScalarTest, TwoImmediateOps) {
  absl::StatusOr<Outputs> out = TraceAndRun(
      [](Tracer& t) {
        Tensor x = Load(t, "x", {1, 3});
        Tensor y = builder::ndarray({1, 3}, proto::FLOAT32, Buffer::kSbuf, "y");
        isa::tensor_scalar(y, x, Alu::kMultiply, 2.0f,
                           {.op1 = Alu::kAdd, .operand1 = 1.0f});
        Store(t, "out", y);
      },
      {Floats("x", {1, 3}, {1, 2, -3})});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_THAT(out->at("out").f32, ElementsAre(3, 5, -5));  // 2x + 1
}

TEST(OpTensorScalarTest, ReversedOperands) {
  absl::StatusOr<Outputs> out = TraceAndRun(
      [](Tracer& t) {
        Tensor x = Load(t, "x", {1, 3});
        Tensor y = builder::ndarray({1, 3}, proto::FLOAT32, Buffer::kSbuf, "y");
        isa::tensor_scalar(y, x, Alu::kSubtract, 10.0f,
                           {.reverse0 = true,
                            .op1 = Alu::kDivide,
                            .operand1 = 72.0f,
                            .reverse1 = true});
        Store(t, "out", y);
      },
      {Floats("x", {1, 3}, {1, 2, 4})});
  ASSERT_TRUE(out.ok()) << out.status();
  // 72 / (10 - x) = 72 / [9, 8, 6].
  EXPECT_THAT(out->at("out").f32, ElementsAre(8, 9, 12));
}

TEST(OpTensorScalarTest, ColumnOperandBroadcastsAlongTheFreeDim) {
  absl::StatusOr<Outputs> out = TraceAndRun(
      [](Tracer& t) {
        Tensor x = Load(t, "x", {2, 2});
        Tensor c = Load(t, "c", {2, 1});
        Tensor y = builder::ndarray({2, 2}, proto::FLOAT32, Buffer::kSbuf, "y");
        isa::tensor_scalar(y, x, Alu::kMultiply, c,
                           {.op1 = Alu::kSubtract, .operand1 = c});
        Store(t, "out", y);
      },
      {Floats("x", {2, 2}, {1, 2, 3, 4}), Floats("c", {2, 1}, {2, -1})});
  ASSERT_TRUE(out.ok()) << out.status();
  // Row 0: 2x - 2; row 1: -x + 1.
  EXPECT_THAT(out->at("out").f32, ElementsAre(0, 2, -2, -3));
}

TEST(OpTensorReduceTest, AddMaxAndNegateOverTheLastAxis) {
  absl::StatusOr<Outputs> out = TraceAndRun(
      [](Tracer& t) {
        Tensor x = Load(t, "x", {2, 3});
        Tensor s = builder::ndarray({2, 1}, proto::FLOAT32, Buffer::kSbuf, "s");
        Tensor m = builder::ndarray({2, 1}, proto::FLOAT32, Buffer::kSbuf, "m");
        Tensor n = builder::ndarray({2, 1}, proto::FLOAT32, Buffer::kSbuf, "n");
        isa::tensor_reduce(s, Alu::kAdd, x);
        isa::tensor_reduce(m, Alu::kMaximum, x);
        isa::tensor_reduce(n, Alu::kAdd, x, 1, /*negate=*/true);
        Store(t, "s", s);
        Store(t, "m", m);
        Store(t, "n", n);
      },
      {Floats("x", {2, 3}, {1, 5, 3, -2, -8, 4})});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_THAT(out->at("s").f32, ElementsAre(9, -6));
  EXPECT_THAT(out->at("m").f32, ElementsAre(5, 4));
  EXPECT_THAT(out->at("n").f32, ElementsAre(-9, 6));
}

TEST(OpTensorReduceTest, TwoAxesOfAThreeDimView) {
  absl::StatusOr<Outputs> out = TraceAndRun(
      [](Tracer& t) {
        Tensor x = Load(t, "x", {2, 4});
        Tensor s = builder::ndarray({2, 1}, proto::FLOAT32, Buffer::kSbuf, "s");
        isa::tensor_reduce(s, Alu::kMaximum, x.Reshape({2, 2, 2}), 2);
        Store(t, "s", s);
      },
      {Floats("x", {2, 4}, {1, 7, 3, -2, -8, -4, -6, -5})});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_THAT(out->at("s").f32, ElementsAre(7, -4));
}

TEST(OpTensorCopyTest, CastToBf16RoundsToNearestEven) {
  absl::StatusOr<Outputs> out = TraceAndRun(
      [](Tracer& t) {
        Tensor x = Load(t, "x", {1, 5});
        Tensor b =
            builder::ndarray({1, 5}, proto::BFLOAT16, Buffer::kSbuf, "b");
        isa::tensor_copy(b, x);
        Store(t, "out", b);
      },
      {Floats("x", {1, 5},
              {1.00390625f,   // 1 + 2^-8: tie, to even 1
               1.01171875f,   // 1 + 3*2^-8: tie, to even 1 + 2^-6
               1.00390637f,   // just above the tie: up to 1 + 2^-7
               -1.00390625f,  // -(1 + 2^-8): to -1
               3.0f})});      // exact
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_THAT(out->at("out").f32,
              ElementsAre(1.0f, 1.015625f, 1.0078125f, -1.0f, 3.0f));
}

// ---------------------------------------------------------------------------
// iota, memset, affine_select

TEST(OpIotaTest, OffsetChannelMultiplierAndTwoDimPattern) {
  absl::StatusOr<Outputs> out = TraceAndRun(
      [](Tracer& t) {
        Tensor a = builder::ndarray({2, 4}, proto::INT32, Buffer::kSbuf, "a");
        isa::iota(a, {{10, 2}, {1, 2}}, /*offset=*/5,
                  /*channel_multiplier=*/100);
        Tensor f = builder::ndarray({3, 2}, proto::FLOAT32, Buffer::kSbuf, "f");
        isa::iota(f, {{-3, 2}}, 0, 1);
        Store(t, "a", a, proto::INT32);
        Store(t, "f", f);
      },
      {});
  ASSERT_TRUE(out.ok()) << out.status();
  // 5 + 100p + [0, 1, 10, 11].
  EXPECT_THAT(out->at("a").i32, ElementsAre(5, 6, 15, 16, 105, 106, 115, 116));
  // p + [0, -3].
  EXPECT_THAT(out->at("f").f32, ElementsAre(0, -3, 1, -2, 2, -1));
}

TEST(OpMemsetTest, FillsFloatAndIntTiles) {
  absl::StatusOr<Outputs> out = TraceAndRun(
      [](Tracer& t) {
        Tensor f = builder::ndarray({2, 3}, proto::FLOAT32, Buffer::kSbuf, "f");
        Tensor i = builder::ndarray({2, 2}, proto::INT32, Buffer::kSbuf, "i");
        Tensor b =
            builder::ndarray({1, 2}, proto::BFLOAT16, Buffer::kSbuf, "b");
        isa::memset(f, 2.5f);
        isa::memset(i, -3.0f, Engine::kGpSimd);
        isa::memset(b, 1.00390625f);  // rounds to bf16 1.0
        Store(t, "f", f);
        Store(t, "i", i, proto::INT32);
        Store(t, "b", b);
      },
      {});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_THAT(out->at("f").f32,
              ElementsAre(2.5f, 2.5f, 2.5f, 2.5f, 2.5f, 2.5f));
  EXPECT_THAT(out->at("i").i32, ElementsAre(-3, -3, -3, -3));
  EXPECT_THAT(out->at("b").f32, ElementsAre(1.0f, 1.0f));
}

TEST(OpAffineSelectTest, CausalMaskKeepsTheLowerTriangle) {
  absl::StatusOr<Outputs> out = TraceAndRun(
      [](Tracer& t) {
        Tensor x = Load(t, "x", {4, 4});
        Tensor y = builder::ndarray({4, 4}, proto::FLOAT32, Buffer::kSbuf, "y");
        // affine = p - j; keep where p - j >= 0.
        isa::affine_select(y, {{-1, 4}}, /*channel_multiplier=*/1, x, -9984.0f,
                           Alu::kGreaterEqual);
        Store(t, "out", y);
      },
      {Floats("x", {4, 4},
              {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16})});
  ASSERT_TRUE(out.ok()) << out.status();
  constexpr float F = -9984.0f;
  EXPECT_THAT(out->at("out").f32, ElementsAre(1, F, F, F,    //
                                              5, 6, F, F,    //
                                              9, 10, 11, F,  //
                                              13, 14, 15, 16));
}

// ---------------------------------------------------------------------------
// dma_copy

TEST(OpDmaCopyTest, TransposedAndStridedHbmViews) {
  absl::StatusOr<Outputs> out = TraceAndRun(
      [](Tracer& t) {
        Tensor x = t.Input("x", {2, 4}, proto::FLOAT32);
        Tensor tr = t.Allocate({4, 2}, proto::FLOAT32, Buffer::kSharedHbm, "t");
        isa::dma_copy(tr, x.Permute({1, 0}));
        t.Output("transposed", tr);
        Tensor st = t.Allocate({2, 2}, proto::FLOAT32, Buffer::kSharedHbm, "s");
        isa::dma_copy(st, x.Slice(1, 1, 2, /*step=*/2));  // columns 1 and 3
        t.Output("strided", st);
      },
      {Floats("x", {2, 4}, {0, 1, 2, 3, 10, 11, 12, 13})});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_THAT(out->at("transposed").f32,
              ElementsAre(0, 10, 1, 11, 2, 12, 3, 13));
  EXPECT_THAT(out->at("strided").f32, ElementsAre(1, 3, 11, 13));
}

TEST(OpDmaCopyTest, ScalarDynamicOffsetGathersRowE) {
  absl::StatusOr<Outputs> out = TraceAndRun(
      [](Tracer& t) {
        Tensor table = t.Input("table", {4, 3}, proto::FLOAT32);
        Tensor e = Load(t, "e", {1, 1}, proto::INT32);
        Tensor row =
            builder::ndarray({1, 3}, proto::FLOAT32, Buffer::kSbuf, "r");
        isa::dma_copy(row, table.Slice(0, 0, 1).WithScalarOffset(e, 0));
        Store(t, "out", row);
      },
      {Floats("table", {4, 3}, {0, 1, 2, 10, 11, 12, 20, 21, 22, 30, 31, 32}),
       Ints("e", {1, 1}, {2})});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_THAT(out->at("out").f32, ElementsAre(20, 21, 22));
}

// Gathers rows idx[i] of a [5, 3] table into a [3, 3] tile whose rows were
// set to -1 first.
std::function<void(Tracer&)> VectorGather(OobMode oob) {
  return [oob](Tracer& t) {
    Tensor table = t.Input("table", {5, 3}, proto::FLOAT32);
    Tensor idx = Load(t, "idx", {3, 1}, proto::INT32);
    Tensor rows = builder::ndarray({3, 3}, proto::FLOAT32, Buffer::kSbuf, "r");
    isa::memset(rows, -1.0f);
    isa::dma_copy(rows, table.Slice(0, 0, 3).WithVectorOffset(idx, 0, oob));
    Store(t, "out", rows);
  };
}

HostArray Table5x3() {
  return Floats("table", {5, 3},
                {0, 1, 2, 10, 11, 12, 20, 21, 22, 30, 31, 32, 40, 41, 42});
}

TEST(OpDmaCopyTest, VectorDynamicOffsetGathersOneRowPerPartition) {
  absl::StatusOr<Outputs> out =
      TraceAndRun(VectorGather(OobMode::kError),
                  {Table5x3(), Ints("idx", {3, 1}, {4, 0, 2})});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_THAT(out->at("out").f32, ElementsAre(40, 41, 42, 0, 1, 2, 20, 21, 22));
}

TEST(OpDmaCopyTest, OobSkipLeavesSkippedRowsUntouched) {
  absl::StatusOr<Outputs> out =
      TraceAndRun(VectorGather(OobMode::kSkip),
                  {Table5x3(), Ints("idx", {3, 1}, {1, 7, -1})});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_THAT(out->at("out").f32,
              ElementsAre(10, 11, 12, -1, -1, -1, -1, -1, -1));
}

TEST(OpDmaCopyTest, OobErrorFailsTheRun) {
  absl::StatusOr<Outputs> out =
      TraceAndRun(VectorGather(OobMode::kError),
                  {Table5x3(), Ints("idx", {3, 1}, {1, 5, 0})});
  ASSERT_FALSE(out.ok());
  EXPECT_EQ(out.status().code(), interp::kDeviceErrorCode);
  EXPECT_THAT(out.status().message(),
              HasSubstr("out-of-bounds dynamic offset: row 1 has index 5 "
                        "along dim 0 of 'table' (size 5)"));
}

// Scatters the rows of a [3, 3] tile into rows idx[i] of a [5, 3] table.
std::function<void(Tracer&)> VectorScatter(OobMode oob) {
  return [oob](Tracer& t) {
    Tensor table = t.Input("table", {5, 3}, proto::FLOAT32);
    Tensor idx = Load(t, "idx", {3, 1}, proto::INT32);
    Tensor rows = Load(t, "rows", {3, 3});
    isa::dma_copy(table.Slice(0, 0, 3).WithVectorOffset(idx, 0, oob), rows);
    t.Output("table_out", table);
  };
}

TEST(OpDmaCopyTest, VectorDynamicOffsetOnTheDestinationScatters) {
  absl::StatusOr<Outputs> out = TraceAndRun(
      VectorScatter(OobMode::kError),
      {Table5x3(), Ints("idx", {3, 1}, {3, 0, 4}),
       Floats("rows", {3, 3}, {-1, -2, -3, -4, -5, -6, -7, -8, -9})});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_THAT(
      out->at("table_out").f32,
      ElementsAre(-4, -5, -6, 10, 11, 12, 20, 21, 22, -1, -2, -3, -7, -8, -9));
}

TEST(OpDmaCopyTest, OobSkipScatterWritesOnlyTheInBoundsRows) {
  absl::StatusOr<Outputs> out = TraceAndRun(
      VectorScatter(OobMode::kSkip),
      {Table5x3(), Ints("idx", {3, 1}, {5, 2, -3}),
       Floats("rows", {3, 3}, {-1, -2, -3, -4, -5, -6, -7, -8, -9})});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_THAT(
      out->at("table_out").f32,
      ElementsAre(0, 1, 2, 10, 11, 12, -4, -5, -6, 30, 31, 32, 40, 41, 42));
}

TEST(OpDmaCopyTest, CastsThroughFp32WhenDtypesDiffer) {
  absl::StatusOr<Outputs> out = TraceAndRun(
      [](Tracer& t) {
        Tensor x = t.Input("x", {1, 3}, proto::FLOAT32);
        Tensor i = builder::ndarray({1, 3}, proto::INT32, Buffer::kSbuf, "i");
        isa::dma_copy(i, x);
        Store(t, "out", i, proto::INT32);
      },
      {Floats("x", {1, 3}, {2.5f, -3.7f, 7})});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_THAT(out->at("out").i32, ElementsAre(2, -4, 7));  // nearest even
}

// ---------------------------------------------------------------------------
// dma_transpose, dma_compute

TEST(OpDmaTransposeTest, Bf16TwoDim) {
  absl::StatusOr<Outputs> out = TraceAndRun(
      [](Tracer& t) {
        Tensor x = t.Input("x", {2, 3}, proto::BFLOAT16);
        Tensor y =
            builder::ndarray({3, 2}, proto::BFLOAT16, Buffer::kSbuf, "y");
        isa::dma_transpose(y, x);
        Store(t, "out", y, proto::BFLOAT16);
      },
      {Floats("x", {2, 3}, {1, 2, 3, -4, 0.5f, 6})});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_THAT(out->at("out").f32, ElementsAre(1, -4, 2, 0.5f, 3, 6));
}

// x[i] = i in row-major order, for a dtype that holds these integers.
std::vector<float> Counting(int64_t n) {
  std::vector<float> v(n);
  for (int64_t i = 0; i < n; ++i) v[i] = static_cast<float>(i);
  return v;
}

// Past the 8 x 8 blocks a vector transpose moves at once, with strips of
// 3 rows and 5 columns: every element lands where the index says.
TEST(OpDmaTransposeTest, Fp16TwoDimPastWholeBlocks) {
  constexpr int64_t kRows = 19, kCols = 21;
  absl::StatusOr<Outputs> out = TraceAndRun(
      [](Tracer& t) {
        Tensor x = t.Input("x", {kRows, kCols}, proto::FLOAT16);
        Tensor y = builder::ndarray({kCols, kRows}, proto::FLOAT16,
                                    Buffer::kSbuf, "y");
        isa::dma_transpose(y, x);
        Store(t, "out", y, proto::FLOAT16);
      },
      {Floats("x", {kRows, kCols}, Counting(kRows * kCols))});
  ASSERT_TRUE(out.ok()) << out.status();
  std::vector<float> want;
  for (int64_t c = 0; c < kCols; ++c) {
    for (int64_t r = 0; r < kRows; ++r) want.push_back(r * kCols + c);
  }
  EXPECT_THAT(out->at("out").f32, ElementsAreArray(want));
}

// y[c][b][a] = x[a][b][c] for axes (2, 1, 0), and
// y[d][b][c][a] = x[a][b][c][d] for (3, 1, 2, 0).
TEST(OpDmaTransposeTest, Bf16ThreeAndFourDims) {
  absl::StatusOr<Outputs> out = TraceAndRun(
      [](Tracer& t) {
        Tensor x3 = t.Input("x3", {2, 3, 4}, proto::BFLOAT16);
        Tensor y3 =
            builder::ndarray({4, 3, 2}, proto::BFLOAT16, Buffer::kSbuf, "y3");
        isa::dma_transpose(y3, x3, {2, 1, 0});
        Store(t, "out3", y3, proto::BFLOAT16);
        Tensor x4 = t.Input("x4", {2, 3, 2, 4}, proto::BFLOAT16);
        Tensor y4 = builder::ndarray({4, 3, 2, 2}, proto::BFLOAT16,
                                     Buffer::kSbuf, "y4");
        isa::dma_transpose(y4, x4, {3, 1, 2, 0});
        Store(t, "out4", y4, proto::BFLOAT16);
      },
      {Floats("x3", {2, 3, 4}, Counting(24)),
       Floats("x4", {2, 3, 2, 4}, Counting(48))});
  ASSERT_TRUE(out.ok()) << out.status();
  std::vector<float> want3, want4;
  for (int c = 0; c < 4; ++c) {
    for (int b = 0; b < 3; ++b) {
      for (int a = 0; a < 2; ++a) want3.push_back(a * 12 + b * 4 + c);
    }
  }
  for (int d = 0; d < 4; ++d) {
    for (int b = 0; b < 3; ++b) {
      for (int c = 0; c < 2; ++c) {
        for (int a = 0; a < 2; ++a) want4.push_back(a * 24 + b * 8 + c * 4 + d);
      }
    }
  }
  EXPECT_THAT(out->at("out3").f32, ElementsAreArray(want3));
  EXPECT_THAT(out->at("out4").f32, ElementsAreArray(want4));
}

TEST(OpDmaComputeTest, AccumulatesIntoTheHbmRowSelectedByAScalarOffset) {
  absl::StatusOr<Outputs> out = TraceAndRun(
      [](Tracer& t) {
        Tensor acc = t.Input("acc", {4, 2}, proto::FLOAT32);
        Tensor e = Load(t, "e", {1, 1}, proto::INT32);
        Tensor a = Load(t, "a", {1, 2});
        Tensor b = Load(t, "b", {1, 2});
        isa::dma_compute(acc.Slice(0, 0, 1).WithScalarOffset(e, 0), {a, b});
        // Without accumulate: row 0 = a + b.
        isa::dma_compute(acc.Slice(0, 0, 1), {a, b}, /*accumulate=*/false);
        t.Output("acc_out", acc);
      },
      {Floats("acc", {4, 2}, {1, 1, 2, 2, 3, 3, 4, 4}), Ints("e", {1, 1}, {2}),
       Floats("a", {1, 2}, {10, 20}), Floats("b", {1, 2}, {0.5f, -1})});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_THAT(out->at("acc_out").f32,
              ElementsAre(10.5f, 19, 2, 2, 13.5f, 22, 4, 4));
}

TEST(OpDmaComputeTest, AMismatchedLaterSourceIsRefusedAtTraceTime) {
  absl::StatusOr<proto::Graph> graph = Trace1([](Tracer& t) {
    Tensor acc = t.Input("acc", {1, 4}, proto::FLOAT32);
    Tensor a = builder::ndarray({1, 4}, proto::FLOAT32, Buffer::kSbuf, "a");
    Tensor b = builder::ndarray({1, 3}, proto::FLOAT32, Buffer::kSbuf, "b");
    isa::memset(a, 1.0f);
    isa::memset(b, 1.0f);
    isa::dma_compute(acc, {a, a, b});
  });
  ASSERT_FALSE(graph.ok());
  EXPECT_THAT(graph.status().message(),
              HasSubstr("dma_compute: 'dst' has 4 elements but 'src' has 3"));
}

// ---------------------------------------------------------------------------
// nc_find_index8, max8, nc_stream_shuffle

TEST(OpFindIndex8Test, FirstOccurrenceAndNotFound) {
  absl::StatusOr<Outputs> out = TraceAndRun(
      [](Tracer& t) {
        Tensor data = Load(t, "data", {1, 10});
        Tensor vals = Load(t, "vals", {1, 8});
        Tensor i = builder::ndarray({1, 8}, proto::INT32, Buffer::kSbuf, "i");
        Tensor u = builder::ndarray({1, 8}, proto::UINT32, Buffer::kSbuf, "u");
        isa::nc_find_index8(i, data, vals);
        isa::nc_find_index8(u, data, vals);
        Store(t, "i", i, proto::INT32);
        Store(t, "u", u, proto::UINT32);
      },
      {Floats("data", {1, 10}, {5, 3, 5, 7, 1, 3, 9, 0, 2, 8}),
       Floats("vals", {1, 8}, {5, 3, 8, 4, 0, 9, 7, 1})});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_THAT(out->at("i").i32, ElementsAre(0, 1, 9, -1, 7, 6, 3, 4));
  const std::vector<int32_t>& u = out->at("u").i32;
  ASSERT_EQ(u.size(), 8u);
  EXPECT_EQ(static_cast<uint32_t>(u[3]), 0xFFFFFFFFu);
  EXPECT_EQ(u[0], 0);
  EXPECT_EQ(u[2], 9);
}

TEST(OpFindIndex8Test, RepeatedValuesTakeSuccessiveOccurrences) {
  absl::StatusOr<Outputs> out = TraceAndRun(
      [](Tracer& t) {
        Tensor data = Load(t, "data", {2, 10});
        Tensor vals = Load(t, "vals", {2, 8});
        Tensor i = builder::ndarray({2, 8}, proto::INT32, Buffer::kSbuf, "i");
        isa::nc_find_index8(i, data, vals);
        Store(t, "i", i, proto::INT32);
      },
      {Floats("data", {2, 10}, {5, 3, 5, 7, 5, 3, 9, 0, 2, 5,  //
                                1, 1, 1, 1, 1, 1, 1, 1, 1, 1}),
       Floats("vals", {2, 8},
              {5, 5, 3, 5, 3, 3, 5, 5,  //
               1, 1, 1, 1, 1, 1, 1, 1})});
  ASSERT_TRUE(out.ok()) << out.status();
  // Row 0: the 5s are at 0, 2, 4, 9; the 3s at 1, 5. Row 1: eight copies
  // of 1 find its first eight occurrences.
  EXPECT_THAT(out->at("i").i32, ElementsAre(0, 2, 1, 4, 5, -1, 9, -1,  //
                                            0, 1, 2, 3, 4, 5, 6, 7));
}

TEST(OpMax8Test, EightLargestDescendingPerPartition) {
  absl::StatusOr<Outputs> out = TraceAndRun(
      [](Tracer& t) {
        Tensor x = Load(t, "x", {2, 10});
        Tensor m = builder::ndarray({2, 8}, proto::FLOAT32, Buffer::kSbuf, "m");
        isa::max8(m, x);
        Store(t, "out", m);
      },
      {Floats("x", {2, 10}, {3,  9,  -1, 7,  7,  0,  12, 5,  2,  4,  //
                             -1, -2, -3, -4, -5, -6, -7, -8, -9, -10})});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_THAT(out->at("out").f32, ElementsAre(12, 9, 7, 7, 5, 4, 3, 2,  //
                                              -1, -2, -3, -4, -5, -6, -7, -8));
}

TEST(OpStreamShuffleTest, MaskMovesPartitionsAnd255KeepsThem) {
  absl::StatusOr<Outputs> out = TraceAndRun(
      [](Tracer& t) {
        Tensor x = Load(t, "x", {4, 2});
        Tensor y = builder::ndarray({4, 2}, proto::FLOAT32, Buffer::kSbuf, "y");
        isa::memset(y, 9.0f);
        std::vector<int64_t> mask(32, 255);
        mask[0] = 3;
        mask[2] = 0;
        mask[3] = 1;
        isa::nc_stream_shuffle(y, x, mask);
        Store(t, "out", y);
      },
      {Floats("x", {4, 2}, {0, 1, 10, 11, 20, 21, 30, 31})});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_THAT(out->at("out").f32, ElementsAre(30, 31, 9, 9, 0, 1, 10, 11));
}

// ---------------------------------------------------------------------------
// sendrecv, core_barrier

TEST(OpSendRecvTest, TwoCoresExchangeTiles) {
  absl::StatusOr<proto::Graph> graph = TraceWorld(1, 2, [](Tracer& t) {
    const int c = t.program_id();
    Tensor x = t.Input("x", {2, 2, 3}, proto::FLOAT32);
    Tensor out = t.Allocate({2, 2, 3}, proto::FLOAT32, Buffer::kSharedHbm, "o");
    Tensor src = builder::ndarray({2, 3}, proto::FLOAT32, Buffer::kSbuf, "src");
    Tensor dst = builder::ndarray({2, 3}, proto::FLOAT32, Buffer::kSbuf, "dst");
    isa::dma_copy(src, x.Select(0, c));
    isa::sendrecv(dst, src, /*send_to=*/1 - c, /*recv_from=*/1 - c);
    isa::dma_copy(out.Select(0, c), dst);
    t.Output("out", out);
  });
  ASSERT_TRUE(graph.ok()) << graph.status();
  absl::StatusOr<Outputs> out = RunGraph(
      *graph,
      {Floats("x", {2, 2, 3}, {0, 1, 2, 3, 4, 5, 10, 11, 12, 13, 14, 15})});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_THAT(out->at("out").f32,
              ElementsAre(10, 11, 12, 13, 14, 15, 0, 1, 2, 3, 4, 5));
}

TEST(OpCoreBarrierTest, ReadAfterTheBarrierSeesTheOtherCoresWrite) {
  // Core 1 writes buf, then both cores meet at the barrier, then core 0
  // copies buf out. The interpreter runs core 0 first, so without the wait
  // core 0 would read buf before anything wrote it.
  absl::StatusOr<proto::Graph> graph = TraceWorld(1, 2, [](Tracer& t) {
    Tensor x = t.Input("x", {3}, proto::FLOAT32);
    Tensor buf = t.Allocate({3}, proto::FLOAT32, Buffer::kSharedHbm, "buf");
    Tensor flag = t.Allocate({1}, proto::INT32, Buffer::kSharedHbm, "flag");
    Tensor out = t.Allocate({3}, proto::FLOAT32, Buffer::kSharedHbm, "o");
    if (t.program_id() == 1) isa::dma_copy(buf, x);
    isa::core_barrier(flag);
    if (t.program_id() == 0) isa::dma_copy(out, buf);
    t.Output("out", out);
  });
  ASSERT_TRUE(graph.ok()) << graph.status();
  absl::StatusOr<Outputs> out =
      RunGraph(*graph, {Floats("x", {3}, {1.5f, -2, 4})});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_THAT(out->at("out").f32, ElementsAre(1.5f, -2, 4));
}

// ---------------------------------------------------------------------------
// Collectives. Per-rank inputs and outputs carry a leading [num_ranks] axis.

TEST(OpAllGatherTest, Dim0InHbmOverFourRanks) {
  absl::StatusOr<proto::Graph> graph = TraceWorld(4, 1, [](Tracer& t) {
    Tensor x = t.Input("x", {2}, proto::FLOAT32);
    Tensor g = t.Allocate({8}, proto::FLOAT32, Buffer::kSharedHbm, "g");
    isa::all_gather(g, x, 0);
    t.Output("out", g);
  });
  ASSERT_TRUE(graph.ok()) << graph.status();
  absl::StatusOr<Outputs> out =
      RunGraph(*graph, {Floats("x", {4, 2}, {0, 1, 10, 11, 20, 21, 30, 31})});
  ASSERT_TRUE(out.ok()) << out.status();
  const HostArray& g = out->at("out");
  EXPECT_THAT(g.shape, ElementsAre(4, 8));
  const std::vector<float> row = {0, 1, 10, 11, 20, 21, 30, 31};
  std::vector<float> expected;
  for (int r = 0; r < 4; ++r)
    expected.insert(expected.end(), row.begin(), row.end());
  EXPECT_THAT(g.f32, ElementsAreArray(expected));
}

TEST(OpAllGatherTest, Dim1InSbufOverFourRanks) {
  absl::StatusOr<proto::Graph> graph = TraceWorld(4, 1, [](Tracer& t) {
    Tensor x = Load(t, "x", {2, 2});
    Tensor g = builder::ndarray({2, 8}, proto::FLOAT32, Buffer::kSbuf, "g");
    isa::all_gather(g, x, 1);
    Store(t, "out", g);
  });
  ASSERT_TRUE(graph.ok()) << graph.status();
  // Rank r's tile is [[r, r + 0.5], [-r, -r - 0.5]].
  absl::StatusOr<Outputs> out =
      RunGraph(*graph, {Floats("x", {4, 2, 2},
                               {0, 0.5f, 0, -0.5f, 1, 1.5f, -1, -1.5f,  //
                                2, 2.5f, -2, -2.5f, 3, 3.5f, -3, -3.5f})});
  ASSERT_TRUE(out.ok()) << out.status();
  const std::vector<float> tile = {0, 0.5f,  1,  1.5f,  2,  2.5f,  3,  3.5f,
                                   0, -0.5f, -1, -1.5f, -2, -2.5f, -3, -3.5f};
  std::vector<float> expected;
  for (int r = 0; r < 4; ++r)
    expected.insert(expected.end(), tile.begin(), tile.end());
  EXPECT_THAT(out->at("out").f32, ElementsAreArray(expected));
}

TEST(OpAllReduceTest, AddOverFourRanks) {
  absl::StatusOr<proto::Graph> graph = TraceWorld(4, 1, [](Tracer& t) {
    Tensor x = t.Input("x", {3}, proto::FLOAT32);
    Tensor s = t.Allocate({3}, proto::FLOAT32, Buffer::kSharedHbm, "s");
    isa::all_reduce(s, x, Alu::kAdd);
    t.Output("out", s);
  });
  ASSERT_TRUE(graph.ok()) << graph.status();
  // Rank r holds [r, 10r, 1].
  absl::StatusOr<Outputs> out = RunGraph(
      *graph, {Floats("x", {4, 3}, {0, 0, 1, 1, 10, 1, 2, 20, 1, 3, 30, 1})});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_THAT(out->at("out").f32,
              ElementsAre(6, 60, 4, 6, 60, 4, 6, 60, 4, 6, 60, 4));
}

TEST(OpCollectivePermuteTest, OneRingStepOverEightRanks) {
  absl::StatusOr<proto::Graph> graph = TraceWorld(8, 1, [](Tracer& t) {
    Tensor x = t.Input("x", {2}, proto::FLOAT32);
    Tensor y = t.Allocate({2}, proto::FLOAT32, Buffer::kSharedHbm, "y");
    isa::collective_permute_implicit(y, x);
    t.Output("out", y);
  });
  ASSERT_TRUE(graph.ok()) << graph.status();
  std::vector<float> x;
  for (int r = 0; r < 8; ++r) {
    x.push_back(static_cast<float>(r));
    x.push_back(static_cast<float>(-10 * r));
  }
  absl::StatusOr<Outputs> out = RunGraph(*graph, {Floats("x", {8, 2}, x)});
  ASSERT_TRUE(out.ok()) << out.status();
  // Rank r now holds rank r-1's data (rank 0 holds rank 7's).
  EXPECT_THAT(out->at("out").f32, ElementsAre(7, -70, 0, 0, 1, -10, 2, -20, 3,
                                              -30, 4, -40, 5, -50, 6, -60));
}

TEST(OpCollectivePermuteRankIdTest, TwoReplicaGroupsOfFour) {
  builder::WorldConfig world;
  world.num_ranks = 8;
  world.replica_groups = {{0, 1, 2, 3}, {4, 5, 6, 7}};
  builder::Tracer tracer(builder::TraceConfig{"rank_id", {}, world});
  absl::StatusOr<proto::Graph> graph = tracer.Trace([](Tracer& t) {
    Tensor ids = t.Allocate({3}, proto::INT32, Buffer::kSharedHbm, "ids");
    const int iterations[] = {0, 1, 6};
    for (int k = 0; k < 3; ++k) {
      isa::collective_permute_implicit_current_processing_rank_id(
          ids.Slice(0, k, 1), iterations[k]);
    }
    t.Output("ids", ids);
  });
  ASSERT_TRUE(graph.ok()) << graph.status();
  absl::StatusOr<Outputs> out = RunGraph(*graph, {});
  ASSERT_TRUE(out.ok()) << out.status();
  // On rank r at iteration i: (r - i) mod 4, for i = 0, 1, 6.
  EXPECT_THAT(out->at("ids").i32, ElementsAre(0, 3, 2,    // rank 0
                                              1, 0, 3,    // rank 1
                                              2, 1, 0,    // rank 2
                                              3, 2, 1,    // rank 3
                                              0, 3, 2,    // rank 4
                                              1, 0, 3,    // rank 5
                                              2, 1, 0,    // rank 6
                                              3, 2, 1));  // rank 7
}

}  // namespace
}  // namespace nkigraph
