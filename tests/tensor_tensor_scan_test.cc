// tensor_tensor_scan: the inclusive scan r = (data0[i] op0 r) op1
// data1[i], checked against values worked by hand, against a recursive
// reference over op and reverse combinations, for the fp32 carry into a
// bf16 destination, and for the checks it refuses.
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
using testing::LoadTile;
using testing::StoreTile;

struct Case {
  int64_t p = 2;
  int64_t f = 4;
  Alu op0 = Alu::kMultiply;
  Alu op1 = Alu::kAdd;
  bool column = false;  // initial: the "initial" input [P, 1], else `scalar`
  float scalar = 0.0f;
  bool reverse0 = false;
  bool reverse1 = false;
  proto::DType dst_dtype = proto::FLOAT32;
};

absl::StatusOr<proto::Graph> TraceCase(const Case& c) {
  return testing::Trace1([&](Tracer& t) {
    const Tensor data0 = LoadTile(t, "data0", {c.p, c.f});
    const Tensor data1 = LoadTile(t, "data1", {c.p, c.f});
    const isa::Scalar initial =
        c.column ? isa::Scalar(LoadTile(t, "initial", {c.p, 1}))
                 : isa::Scalar(c.scalar);
    Tensor dst =
        builder::ndarray({c.p, c.f}, c.dst_dtype, Buffer::kSbuf, "dst");
    isa::tensor_tensor_scan(dst, data0, data1, initial, c.op0, c.op1,
                            c.reverse0, c.reverse1);
    StoreTile(t, "out", dst);
  });
}

std::vector<float> RunCase(const Case& c, const std::vector<float>& data0,
                           const std::vector<float>& data1,
                           const std::vector<float>& initial = {}) {
  absl::StatusOr<proto::Graph> graph = TraceCase(c);
  EXPECT_TRUE(graph.ok()) << graph.status();
  if (!graph.ok()) return {};
  std::vector<HostArray> inputs = {Floats("data0", {c.p, c.f}, data0),
                                   Floats("data1", {c.p, c.f}, data1)};
  if (c.column) inputs.push_back(Floats("initial", {c.p, 1}, initial));
  absl::StatusOr<std::map<std::string, HostArray>> out =
      testing::RunGraph(*graph, inputs);
  EXPECT_TRUE(out.ok()) << out.status();
  return out.ok() ? out->at("out").f32 : std::vector<float>{};
}

TEST(TensorTensorScanTest, LinearRecurrenceWorkedByHand) {
  // r = decay * r + x, from a per-partition start: row 0 decays by half
  // from 0, row 1 keeps everything from 10.
  const Case c{.op0 = Alu::kMultiply, .op1 = Alu::kAdd, .column = true};
  EXPECT_THAT(RunCase(c, {0.5f, 0.5f, 0.5f, 0.5f, 1, 1, 1, 1},
                      {1, 2, 3, 4, 1, 2, 3, 4}, {0, 10}),
              ElementsAre(1, 2.5f, 4.25f, 6.125f, 11, 13, 16, 20));
}

TEST(TensorTensorScanTest, CumulativeSumFromAnImmediateWorkedByHand) {
  // r = (x + r) + 0 from 100: a running sum per partition.
  const Case c{.op0 = Alu::kAdd, .op1 = Alu::kAdd, .scalar = 100};
  EXPECT_THAT(
      RunCase(c, {1, 2, 3, 4, -1, -1, -1, -1}, {0, 0, 0, 0, 0, 0, 0, 0}),
      ElementsAre(101, 103, 106, 110, 99, 98, 97, 96));
}

TEST(TensorTensorScanTest, ReversedSidesWorkedByHand) {
  const std::vector<float> data0 = {1, 2};
  const std::vector<float> data1 = {10, 20};
  Case c{.p = 1, .f = 2, .op0 = Alu::kSubtract, .op1 = Alu::kSubtract};
  // (1 - 0) - 10 = -9, then (2 - -9) - 20 = -9.
  EXPECT_THAT(RunCase(c, data0, data1), ElementsAre(-9, -9));
  c.reverse0 = true;  // (r - data0) - data1: -11, then -33
  EXPECT_THAT(RunCase(c, data0, data1), ElementsAre(-11, -33));
  c.reverse1 = true;  // data1 - (r - data0): 10 - (0 - 1) = 11, 20 - 9 = 11
  EXPECT_THAT(RunCase(c, data0, data1), ElementsAre(11, 11));
  c.reverse0 = false;  // data1 - (data0 - r): 10 - 1 = 9, 20 - (2 - 9) = 27
  EXPECT_THAT(RunCase(c, data0, data1), ElementsAre(9, 27));
}

// The scan's element i, defined recursively from element i - 1 (the start
// at i = -1), each step rounded to fp32.
float ScanAt(const std::function<float(float, float)>& f0,
             const std::function<float(float, float)>& f1, bool reverse0,
             bool reverse1, const float* x0, const float* x1, float start,
             int64_t i) {
  if (i < 0) return start;
  const float prev = ScanAt(f0, f1, reverse0, reverse1, x0, x1, start, i - 1);
  const float t = reverse0 ? f0(prev, x0[i]) : f0(x0[i], prev);
  return reverse1 ? f1(x1[i], t) : f1(t, x1[i]);
}

TEST(TensorTensorScanTest, MatchesARecursiveReferenceOverOpsAndReverses) {
  const std::map<Alu, std::function<float(float, float)>> apply = {
      {Alu::kAdd, [](float a, float b) { return a + b; }},
      {Alu::kSubtract, [](float a, float b) { return a - b; }},
      {Alu::kMultiply, [](float a, float b) { return a * b; }},
      {Alu::kMaximum, [](float a, float b) { return a > b ? a : b; }},
      {Alu::kMinimum, [](float a, float b) { return a < b ? a : b; }},
  };
  const std::vector<float> data0 = {0.75f, -1.5f, 2.125f, 0.5f,  -0.3f, 1.25f,
                                    -0.4f, 0.1f,  1.5f,   -2.2f, 1.0f,  0.6f};
  const std::vector<float> data1 = {1.1f,  -0.7f, 2.0f,  -0.3f, 0.9f, 0.4f,
                                    -1.2f, 0.5f,  0.75f, -2.5f, 1.6f, 0.05f};
  const std::vector<float> initial = {1.25f, -0.8f, 3.5f};
  for (const auto& [op0, f0] : apply) {
    for (const auto& [op1, f1] : apply) {
      for (int flags = 0; flags < 8; ++flags) {
        const Case c{.p = 3,
                     .f = 4,
                     .op0 = op0,
                     .op1 = op1,
                     .column = (flags & 4) != 0,
                     .scalar = -0.625f,
                     .reverse0 = (flags & 1) != 0,
                     .reverse1 = (flags & 2) != 0};
        std::vector<float> want;
        for (int64_t row = 0; row < c.p; ++row) {
          const float start = c.column ? initial[row] : c.scalar;
          for (int64_t col = 0; col < c.f; ++col) {
            want.push_back(ScanAt(f0, f1, c.reverse0, c.reverse1,
                                  &data0[row * c.f], &data1[row * c.f], start,
                                  col));
          }
        }
        SCOPED_TRACE(absl::StrCat(ops::AluName(op0), " ", ops::AluName(op1),
                                  " flags ", flags));
        EXPECT_THAT(RunCase(c, data0, data1, initial), ElementsAreArray(want));
      }
    }
  }
}

TEST(TensorTensorScanTest, CarriesFp32AndRoundsEachBf16ElementOnce) {
  // A running sum of 2^-9 steps from 1: in fp32 the third reaches
  // 1 + 3 * 2^-9, which bf16 (7 mantissa bits, ties to even) rounds up to
  // 1 + 2^-7; a sum rounded to bf16 at each step would stay at 1.
  const float k9 = 1.0f / 512;
  const Case c{.p = 1,
               .f = 3,
               .op0 = Alu::kAdd,
               .op1 = Alu::kAdd,
               .scalar = 1.0f,
               .dst_dtype = proto::BFLOAT16};
  EXPECT_THAT(RunCase(c, {k9, k9, k9}, {0, 0, 0}),
              ElementsAre(1.0f,  // 1 + 2^-9: down
                          1.0f,  // 1 + 2^-8: a tie, to even
                          1.0078125f));
}

TEST(TensorTensorScanTest, ChecksRefuseMismatchedShapesPsumPairsAndBitwiseOps) {
  const auto refused = &testing::TraceError;
  const auto tile = [](std::vector<int64_t> shape, Buffer buffer,
                       const char* name) {
    return builder::ndarray(shape, proto::FLOAT32, buffer, name);
  };
  EXPECT_THAT(refused([&](Tracer&) {
                Tensor d = tile({2, 4}, Buffer::kSbuf, "d");
                isa::tensor_tensor_scan(d, d, tile({2, 3}, Buffer::kSbuf, "o"),
                                        0.0f, Alu::kAdd, Alu::kAdd);
              }),
              HasSubstr("tensor_tensor_scan: 'data1' is [2, 3] but 'data0' "
                        "is [2, 4]"));
  EXPECT_THAT(refused([&](Tracer&) {
                Tensor d = tile({2, 4}, Buffer::kSbuf, "d");
                isa::tensor_tensor_scan(d, d, d,
                                        tile({2, 2}, Buffer::kSbuf, "i"),
                                        Alu::kAdd, Alu::kAdd);
              }),
              HasSubstr("'initial' must be [2, 1], not [2, 2]"));
  EXPECT_THAT(refused([&](Tracer&) {
                Tensor d = tile({2, 4}, Buffer::kSbuf, "d");
                Tensor p = tile({2, 4}, Buffer::kPsum, "p");
                isa::tensor_tensor_scan(d, p, p, 0.0f, Alu::kAdd, Alu::kAdd);
              }),
              HasSubstr("'data0' and 'data1' cannot both be in psum"));
  EXPECT_THAT(refused([&](Tracer&) {
                Tensor d = tile({2, 4}, Buffer::kSbuf, "d");
                isa::tensor_tensor_scan(d, d, d, 0.0f, Alu::kBitwiseXor,
                                        Alu::kAdd);
              }),
              HasSubstr("op0 'bitwise_xor' is bitwise; only arithmetic "
                        "operations allowed"));
}

TEST(TensorTensorScanTest, TheDefinitionNamesItsEngineAndLabel) {
  absl::StatusOr<proto::Graph> graph =
      TraceCase(Case{.op0 = Alu::kMultiply, .op1 = Alu::kAdd, .scalar = 2});
  ASSERT_TRUE(graph.ok()) << graph.status();
  const proto::Instruction* scan = nullptr;
  for (const proto::Instruction& instr : graph->streams(0).instructions()) {
    if (instr.opcode() == proto::TENSOR_TENSOR_SCAN) scan = &instr;
  }
  ASSERT_NE(scan, nullptr);
  EXPECT_EQ(ops::OpcodeName(scan->opcode()), "tensor_tensor_scan");
  EXPECT_EQ(ops::EngineOf(*scan), ops::Engine::kVector);
  EXPECT_EQ(ops::InstrDetail(*scan), "multiply,add");
  EXPECT_EQ(testing::FloatAttr(*scan, "initial"), 2.0);
}

}  // namespace
}  // namespace nkigraph
