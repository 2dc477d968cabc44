// scalar_tensor_tensor: dst = (data op0 operand0) op1 operand1, checked
// against values worked by hand, against a reference loop over op and
// reverse combinations, for bf16 rounding, and for the checks it refuses.
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
using ::testing::ElementsAreArray;
using testing::Floats;
using ::testing::HasSubstr;

// One scalar_tensor_tensor over data [P, F] from the kernel input "data",
// operand1 from "operand1" (same shape) and, with a column, operand0 from
// "column" ([P, 1]); the result, of `dst_dtype`, comes back as float32
// output "out".
struct Case {
  int64_t p = 2;
  int64_t f = 3;
  Alu op0 = Alu::kMultiply;
  bool column = false;  // operand0: the "column" input, else `scalar`
  float scalar = 0.0f;
  Alu op1 = Alu::kAdd;
  bool reverse0 = false;
  bool reverse1 = false;
  proto::DType dst_dtype = proto::FLOAT32;
};

absl::StatusOr<proto::Graph> TraceCase(const Case& c) {
  return testing::Trace1([&](Tracer& t) {
    auto load = [&](const std::string& name, int64_t free) {
      Tensor in = t.Input(name, {c.p, free}, proto::FLOAT32);
      Tensor tile = builder::ndarray({c.p, free}, proto::FLOAT32, Buffer::kSbuf,
                                     name + "_sb");
      isa::dma_copy(tile, in);
      return tile;
    };
    const Tensor data = load("data", c.f);
    const Tensor operand1 = load("operand1", c.f);
    const isa::Scalar operand0 =
        c.column ? isa::Scalar(load("column", 1)) : isa::Scalar(c.scalar);
    Tensor dst =
        builder::ndarray({c.p, c.f}, c.dst_dtype, Buffer::kSbuf, "dst");
    isa::scalar_tensor_tensor(dst, data, c.op0, operand0, c.op1, operand1,
                              c.reverse0, c.reverse1);
    Tensor out =
        t.Allocate({c.p, c.f}, proto::FLOAT32, Buffer::kSharedHbm, "out");
    isa::dma_copy(out, dst);
    t.Output("out", out);
  });
}

std::vector<float> RunCase(const Case& c, const std::vector<float>& data,
                           const std::vector<float>& operand1,
                           const std::vector<float>& column = {}) {
  absl::StatusOr<proto::Graph> graph = TraceCase(c);
  EXPECT_TRUE(graph.ok()) << graph.status();
  if (!graph.ok()) return {};
  std::vector<HostArray> inputs = {Floats("data", {c.p, c.f}, data),
                                   Floats("operand1", {c.p, c.f}, operand1)};
  if (c.column) inputs.push_back(Floats("column", {c.p, 1}, column));
  absl::StatusOr<std::map<std::string, HostArray>> out =
      testing::RunGraph(*graph, inputs);
  EXPECT_TRUE(out.ok()) << out.status();
  return out.ok() ? out->at("out").f32 : std::vector<float>{};
}

const std::vector<float> kData = {1, 2, 3, 4, 5, 6};
const std::vector<float> kOther = {10, 20, 30, 40, 50, 60};

TEST(ScalarTensorTensorTest, ColumnTimesDataMinusTensorWorkedByHand) {
  // Row 0 scaled by 2, row 1 by -1: [2, 4, 6; -4, -5, -6].
  Case c{.op0 = Alu::kMultiply, .column = true, .op1 = Alu::kSubtract};
  EXPECT_THAT(RunCase(c, kData, kOther, {2, -1}),
              ElementsAre(-8, -16, -24, -44, -55, -66));
  c.reverse1 = true;  // operand1 - (data * column)
  EXPECT_THAT(RunCase(c, kData, kOther, {2, -1}),
              ElementsAre(8, 16, 24, 44, 55, 66));
}

TEST(ScalarTensorTensorTest, ImmediateWithReversedFirstOpWorkedByHand) {
  // (3 - data) * operand1 = [2, 1, 0, -1, -2, -3] * [10 ... 60].
  const Case c{.op0 = Alu::kSubtract,
               .scalar = 3.0f,
               .op1 = Alu::kMultiply,
               .reverse0 = true};
  EXPECT_THAT(RunCase(c, kData, kOther),
              ElementsAre(20, 20, 0, -40, -100, -180));
  // The immediate is written even at 0: data * 0 + operand1.
  const Case zero{.op0 = Alu::kMultiply, .scalar = 0.0f, .op1 = Alu::kAdd};
  EXPECT_THAT(RunCase(zero, kData, kOther), ElementsAreArray(kOther));
}

TEST(ScalarTensorTensorTest, MatchesAReferenceLoopOverOpsAndReverses) {
  // Each step rounds to fp32, in the order the ISA states.
  const std::map<Alu, std::function<float(float, float)>> apply = {
      {Alu::kAdd, [](float a, float b) { return a + b; }},
      {Alu::kSubtract, [](float a, float b) { return a - b; }},
      {Alu::kMultiply, [](float a, float b) { return a * b; }},
      {Alu::kDivide, [](float a, float b) { return a / b; }},
      {Alu::kMaximum, [](float a, float b) { return a > b ? a : b; }},
  };
  const std::vector<float> data = {0.75f, -1.5f, 2.125f, 3.0f,  -0.3f, 7.25f,
                                   -4.0f, 0.1f,  5.5f,   -2.2f, 1.0f,  0.6f};
  const std::vector<float> other = {1.1f,  -0.7f, 2.0f,  -3.3f, 0.9f, 4.4f,
                                    -1.2f, 0.5f,  3.75f, -2.5f, 1.6f, 0.05f};
  const std::vector<float> column = {1.25f, -0.8f, 3.5f};
  for (const auto& [op0, f0] : apply) {
    for (const auto& [op1, f1] : apply) {
      for (int flags = 0; flags < 8; ++flags) {
        const Case c{.p = 3,
                     .f = 4,
                     .op0 = op0,
                     .column = (flags & 4) != 0,
                     .scalar = -0.625f,
                     .op1 = op1,
                     .reverse0 = (flags & 1) != 0,
                     .reverse1 = (flags & 2) != 0};
        std::vector<float> want;
        for (int64_t row = 0; row < c.p; ++row) {
          const float s = c.column ? column[row] : c.scalar;
          for (int64_t col = 0; col < c.f; ++col) {
            const float x = data[row * c.f + col];
            const float y = other[row * c.f + col];
            const float t = c.reverse0 ? f0(s, x) : f0(x, s);
            want.push_back(c.reverse1 ? f1(y, t) : f1(t, y));
          }
        }
        SCOPED_TRACE(absl::StrCat(ops::AluName(op0), " ", ops::AluName(op1),
                                  " flags ", flags));
        EXPECT_THAT(RunCase(c, data, other, column), ElementsAreArray(want));
      }
    }
  }
}

TEST(ScalarTensorTensorTest, RoundsOnceToABf16Destination) {
  // 1 + column, then + operand1, in fp32, rounded to bf16 (7 mantissa
  // bits, ties to even) only at the end.
  const Case c{.p = 5,
               .f = 1,
               .op0 = Alu::kAdd,
               .column = true,
               .op1 = Alu::kAdd,
               .dst_dtype = proto::BFLOAT16};
  const float k9 = 1.0f / 512;  // 2^-9
  const std::vector<float> got = RunCase(c, {1, 1, 1, 1, 1}, {0, 0, 0, 0, k9},
                                         {k9, 3 * k9, 2 * k9, 6 * k9, 2 * k9});
  EXPECT_THAT(got, ElementsAre(1.0f,        // 1 + 2^-9: down to 1
                               1.0078125f,  // 1 + 3 * 2^-9: up to 1 + 2^-7
                               1.0f,        // 1 + 2^-8: tie, to even 1
                               1.015625f,   // 1 + 3 * 2^-8: tie, to even
                               // 1 + 2^-8 + 2^-9 = 1 + 3 * 2^-9: up, which a
                               // bf16 rounding after op0 (to 1) would lose
                               1.0078125f));
}

TEST(ScalarTensorTensorTest, ChecksRefuseMismatchedShapesAndBitwiseOps) {
  const auto refused = &testing::TraceError;
  const auto tile = [](std::vector<int64_t> shape, Buffer buffer,
                       const char* name) {
    return builder::ndarray(shape, proto::FLOAT32, buffer, name);
  };
  EXPECT_THAT(refused([&](Tracer&) {
                Tensor d = tile({2, 2}, Buffer::kSbuf, "d");
                isa::scalar_tensor_tensor(d, d, Alu::kAdd, 1.0f, Alu::kAdd,
                                          tile({2, 3}, Buffer::kSbuf, "o"));
              }),
              HasSubstr("scalar_tensor_tensor: 'operand1' is [2, 3] but "
                        "'data' is [2, 2]"));
  EXPECT_THAT(refused([&](Tracer&) {
                Tensor d = tile({2, 2}, Buffer::kSbuf, "d");
                isa::scalar_tensor_tensor(d, d, Alu::kAdd,
                                          tile({2, 2}, Buffer::kSbuf, "c"),
                                          Alu::kAdd, d);
              }),
              HasSubstr("'operand0' must be [2, 1], not [2, 2]"));
  EXPECT_THAT(refused([&](Tracer&) {
                Tensor d = tile({2, 2}, Buffer::kSbuf, "d");
                isa::scalar_tensor_tensor(d, d, Alu::kAdd, 1.0f,
                                          Alu::kBitwiseAnd, d);
              }),
              HasSubstr("op1 'bitwise_and' is bitwise; only arithmetic "
                        "operations allowed"));
  EXPECT_THAT(refused([&](Tracer&) {
                Tensor d = tile({2, 2}, Buffer::kSbuf, "d");
                Tensor p = tile({2, 2}, Buffer::kPsum, "p");
                isa::scalar_tensor_tensor(d, p, Alu::kAdd, 1.0f, Alu::kAdd, p);
              }),
              HasSubstr("'data' and 'operand1' cannot both be in psum"));
}

TEST(ScalarTensorTensorTest, AGraphWithoutOp1IsRefusedNamingIt) {
  absl::StatusOr<proto::Graph> graph =
      TraceCase(Case{.op0 = Alu::kMultiply, .scalar = 2.0f, .op1 = Alu::kAdd});
  ASSERT_TRUE(graph.ok()) << graph.status();
  proto::Instruction* stt = nullptr;
  for (proto::Instruction& instr :
       *graph->mutable_streams(0)->mutable_instructions()) {
    if (instr.opcode() == proto::SCALAR_TENSOR_TENSOR) stt = &instr;
  }
  ASSERT_NE(stt, nullptr);
  // What the definition says of it, with no table anywhere to extend.
  EXPECT_EQ(ops::EngineOf(*stt), ops::Engine::kVector);
  EXPECT_EQ(ops::InstrDetail(*stt), "multiply,add");
  auto* attrs = stt->mutable_attrs();
  for (int i = 0; i < attrs->size(); ++i) {
    if (attrs->Get(i).name() == "op1") attrs->DeleteSubrange(i, 1);
  }
  absl::StatusOr<std::unique_ptr<interp::Interpreter>> interp =
      interp::Interpreter::Create(*graph);
  ASSERT_FALSE(interp.ok());
  EXPECT_THAT(interp.status().message(),
              HasSubstr(absl::StrCat("instruction #", stt->id(),
                                     " scalar_tensor_tensor")));
  EXPECT_THAT(interp.status().message(),
              HasSubstr("attribute 'op1' is missing"));
}

}  // namespace
}  // namespace nkigraph
