// Element-wise ops (tensor_tensor, tensor_scalar) reading and writing every
// operand in place in one call (ExecContext::ElementwiseInPlace) compute
// what ApplyAlu gives element by element, for every layout of their tiles,
// whether the call applies (float32 rows of one shape, the destination apart
// from its sources or the same elements) or the op goes the general way; and
// they refuse a never-written source with the error the separate reads give,
// the first source in operand order first.
#include <cmath>
#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "ops/alu.h"
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

constexpr int64_t kP = 4;
constexpr int64_t kF = 8;

// Element by element the same value, zeros of the same sign included.
void ExpectSameValues(const std::vector<float>& got,
                      const std::vector<float>& expected) {
  ASSERT_EQ(got.size(), expected.size());
  for (size_t k = 0; k < got.size(); ++k) {
    EXPECT_EQ(std::signbit(got[k]), std::signbit(expected[k])) << k;
    EXPECT_EQ(got[k], expected[k]) << k;
  }
}

// Distinct values with both zeros (maximum keeps its first operand's sign
// when they compare equal) and bf16-exact.
std::vector<float> Values(float scale, float shift) {
  std::vector<float> v(kP * kF);
  for (int64_t k = 0; k < kP * kF; ++k) {
    v[k] = static_cast<float>((k * 7) % 11 - 5) * scale + shift;
  }
  v[3] = 0.0f;
  v[9] = -0.0f;
  return v;
}

// Where a case's instruction writes and what it reads, as [p, f] indices of
// the tiles: element (r, j) of the operands is dst[r, j] = a[.] op b[.].
struct Case {
  const char* name;
  // Traces the instruction on tiles a, b, c (c zero-filled first) and
  // returns the tile whose contents are the output.
  std::function<Tensor(Tensor a, Tensor b, Tensor c, isa::Alu op)> trace;
  // The expected output from the inputs and the op.
  std::function<std::vector<float>(const std::vector<float>&,
                                   const std::vector<float>&, ops::Alu)>
      expect;
  bool bf16_b = false;  // b a bf16 tile: the general path
};

std::vector<float> Zeros() { return std::vector<float>(kP * kF, 0.0f); }

std::vector<Case> Cases() {
  auto at = [](int64_t p, int64_t f) { return p * kF + f; };
  auto whole = [=](const std::vector<float>& x, const std::vector<float>& y,
                   ops::Alu op) {
    std::vector<float> out(kP * kF);
    for (int64_t k = 0; k < kP * kF; ++k)
      out[k] = ops::ApplyAlu(op, x[k], y[k]);
    return out;
  };
  return {
      {"three tiles",
       [](Tensor a, Tensor b, Tensor c, isa::Alu op) {
         isa::tensor_tensor(c, a, b, op);
         return c;
       },
       whole},
      {"dst is data1",
       [](Tensor a, Tensor b, Tensor, isa::Alu op) {
         isa::tensor_tensor(a, a, b, op);
         return a;
       },
       whole},
      {"dst is data2",
       [](Tensor a, Tensor b, Tensor, isa::Alu op) {
         isa::tensor_tensor(b, a, b, op);
         return b;
       },
       whole},
      {"one tile",
       [](Tensor a, Tensor, Tensor, isa::Alu op) {
         isa::tensor_tensor(a, a, a, op);
         return a;
       },
       [=](const std::vector<float>& x, const std::vector<float>&,
           ops::Alu op) { return whole(x, x, op); }},
      {"other partitions",
       [](Tensor a, Tensor b, Tensor c, isa::Alu op) {
         isa::tensor_tensor(c.Slice(0, 0, 2), a.Slice(0, 1, 2),
                            b.Slice(0, 2, 2), op);
         return c;
       },
       [=](const std::vector<float>& x, const std::vector<float>& y,
           ops::Alu op) {
         std::vector<float> out = Zeros();
         for (int64_t r = 0; r < 2; ++r) {
           for (int64_t j = 0; j < kF; ++j) {
             out[at(r, j)] =
                 ops::ApplyAlu(op, x[at(r + 1, j)], y[at(r + 2, j)]);
           }
         }
         return out;
       }},
      {"column blocks",
       [](Tensor a, Tensor b, Tensor c, isa::Alu op) {
         isa::tensor_tensor(c.Slice(1, 2, 4), a.Slice(1, 0, 4),
                            b.Slice(1, 4, 4), op);
         return c;
       },
       [=](const std::vector<float>& x, const std::vector<float>& y,
           ops::Alu op) {
         std::vector<float> out = Zeros();
         for (int64_t p = 0; p < kP; ++p) {
           for (int64_t j = 0; j < 4; ++j) {
             out[at(p, 2 + j)] =
                 ops::ApplyAlu(op, x[at(p, j)], y[at(p, 4 + j)]);
           }
         }
         return out;
       }},
      {"dst shifted over data1",
       [](Tensor a, Tensor b, Tensor, isa::Alu op) {
         isa::tensor_tensor(a.Slice(1, 1, 7), a.Slice(1, 0, 7),
                            b.Slice(1, 0, 7), op);
         return a;
       },
       [=](const std::vector<float>& x, const std::vector<float>& y,
           ops::Alu op) {
         std::vector<float> out = x;
         for (int64_t p = 0; p < kP; ++p) {
           for (int64_t j = 0; j < 7; ++j) {
             out[at(p, j + 1)] = ops::ApplyAlu(op, x[at(p, j)], y[at(p, j)]);
           }
         }
         return out;
       }},
      {"bf16 data2",
       [](Tensor a, Tensor b, Tensor c, isa::Alu op) {
         isa::tensor_tensor(c, a, b, op);
         return c;
       },
       whole, /*bf16_b=*/true},
  };
}

TEST(ElementwiseInPlaceTest, ResultsAreApplyAluElementByElement) {
  const std::vector<float> x = Values(0.5f, 0.25f);
  const std::vector<float> y = Values(-1.0f, 0.5f);
  for (const Case& c : Cases()) {
    for (const isa::Alu op : {isa::Alu::kSubtract, isa::Alu::kMaximum}) {
      SCOPED_TRACE(c.name);
      SCOPED_TRACE(op == isa::Alu::kSubtract ? "subtract" : "maximum");
      absl::StatusOr<proto::Graph> graph = Trace1([&](Tracer& t) {
        const proto::DType b_type = c.bf16_b ? proto::BFLOAT16 : proto::FLOAT32;
        Tensor in_a = t.Input("x", {kP, kF}, proto::FLOAT32);
        Tensor in_b = t.Input("y", {kP, kF}, b_type);
        Tensor a =
            builder::ndarray({kP, kF}, proto::FLOAT32, Buffer::kSbuf, "a");
        Tensor b = builder::ndarray({kP, kF}, b_type, Buffer::kSbuf, "b");
        Tensor d =
            builder::ndarray({kP, kF}, proto::FLOAT32, Buffer::kSbuf, "c");
        isa::dma_copy(a, in_a);
        isa::dma_copy(b, in_b);
        isa::memset(d, 0.0f);
        const Tensor result = c.trace(a, b, d, op);
        Tensor out =
            t.Allocate({kP, kF}, result.dtype(), Buffer::kSharedHbm, "o");
        isa::dma_copy(out, result);
        t.Output("out", out);
      });
      ASSERT_TRUE(graph.ok()) << graph.status();
      const HostArray y_in = Floats("y", {kP, kF}, y);
      absl::StatusOr<std::map<std::string, HostArray>> out =
          RunGraph(*graph, {Floats("x", {kP, kF}, x), y_in});
      ASSERT_TRUE(out.ok()) << out.status();
      const std::vector<float> expected =
          c.expect(x, y, static_cast<ops::Alu>(op));
      const std::vector<float>& got = out->at("out").f32;
      ExpectSameValues(got, expected);
    }
  }
}

// tensor_scalar: dst = max(0.25 - data, 0), reverse0 and a second op, on
// layouts that take the one call (separate tiles, dst the data, column
// blocks) and one that does not (dst shifted over its data).
TEST(ElementwiseInPlaceTest, TensorScalarIsApplyAluElementByElement) {
  auto at = [](int64_t p, int64_t f) { return p * kF + f; };
  auto fn = [](float x) {
    return ops::ApplyAlu(ops::Alu::kMaximum,
                         ops::ApplyAlu(ops::Alu::kSubtract, 0.25f, x), 0.0f);
  };
  struct ScalarCase {
    const char* name;
    std::function<Tensor(Tensor a, Tensor c)> trace;
    std::function<std::vector<float>(const std::vector<float>&)> expect;
  };
  auto op = [](const Tensor& dst, const Tensor& data) {
    isa::tensor_scalar(
        dst, data, isa::Alu::kSubtract, 0.25f,
        {.reverse0 = true, .op1 = isa::Alu::kMaximum, .operand1 = 0.0f});
  };
  auto whole = [&](const std::vector<float>& x) {
    std::vector<float> out(x.size());
    for (size_t k = 0; k < x.size(); ++k) out[k] = fn(x[k]);
    return out;
  };
  const std::vector<ScalarCase> cases = {
      {"separate tiles",
       [&](Tensor a, Tensor c) {
         op(c, a);
         return c;
       },
       whole},
      {"dst is data",
       [&](Tensor a, Tensor) {
         op(a, a);
         return a;
       },
       whole},
      {"column blocks",
       [&](Tensor a, Tensor c) {
         op(c.Slice(1, 4, 4), a.Slice(1, 1, 4));
         return c;
       },
       [&](const std::vector<float>& x) {
         std::vector<float> out = Zeros();
         for (int64_t p = 0; p < kP; ++p) {
           for (int64_t j = 0; j < 4; ++j)
             out[at(p, 4 + j)] = fn(x[at(p, 1 + j)]);
         }
         return out;
       }},
      {"dst shifted over data",
       [&](Tensor a, Tensor) {
         op(a.Slice(1, 1, 7), a.Slice(1, 0, 7));
         return a;
       },
       [&](const std::vector<float>& x) {
         std::vector<float> out = x;
         for (int64_t p = 0; p < kP; ++p) {
           for (int64_t j = 0; j < 7; ++j) out[at(p, j + 1)] = fn(x[at(p, j)]);
         }
         return out;
       }},
  };
  const std::vector<float> x = Values(0.5f, 0.25f);
  for (const ScalarCase& c : cases) {
    SCOPED_TRACE(c.name);
    absl::StatusOr<proto::Graph> graph = Trace1([&](Tracer& t) {
      Tensor in = t.Input("x", {kP, kF}, proto::FLOAT32);
      Tensor a = builder::ndarray({kP, kF}, proto::FLOAT32, Buffer::kSbuf, "a");
      Tensor d = builder::ndarray({kP, kF}, proto::FLOAT32, Buffer::kSbuf, "c");
      isa::dma_copy(a, in);
      isa::memset(d, 0.0f);
      const Tensor result = c.trace(a, d);
      Tensor out =
          t.Allocate({kP, kF}, proto::FLOAT32, Buffer::kSharedHbm, "o");
      isa::dma_copy(out, result);
      t.Output("out", out);
    });
    ASSERT_TRUE(graph.ok()) << graph.status();
    absl::StatusOr<std::map<std::string, HostArray>> out =
        RunGraph(*graph, {Floats("x", {kP, kF}, x)});
    ASSERT_TRUE(out.ok()) << out.status();
    const std::vector<float> expected = c.expect(x);
    const std::vector<float>& got = out->at("out").f32;
    ExpectSameValues(got, expected);
  }
}

// a lacks element [1, 3], b element [2, 0]: whichever is data1 is named.
TEST(ElementwiseInPlaceTest, NeverWrittenSourcesAreRefusedInOperandOrder) {
  for (const bool a_first : {true, false}) {
    SCOPED_TRACE(a_first ? "a is data1" : "b is data1");
    absl::StatusOr<proto::Graph> graph = Trace1([&](Tracer& t) {
      Tensor a = builder::ndarray({kP, kF}, proto::FLOAT32, Buffer::kSbuf, "a");
      Tensor b = builder::ndarray({kP, kF}, proto::FLOAT32, Buffer::kSbuf, "b");
      Tensor c = builder::ndarray({kP, kF}, proto::FLOAT32, Buffer::kSbuf, "c");
      isa::memset(a.Slice(0, 0, 1), 1.0f);
      isa::memset(a.Slice(0, 1, 1).Slice(1, 0, 3), 1.0f);
      isa::memset(a.Slice(0, 1, 1).Slice(1, 4, 4), 1.0f);
      isa::memset(a.Slice(0, 2, 2), 1.0f);
      isa::memset(b.Slice(0, 0, 2), 1.0f);
      isa::memset(b.Slice(0, 2, 1).Slice(1, 1, 7), 1.0f);
      isa::memset(b.Slice(0, 3, 1), 1.0f);
      if (a_first) {
        isa::tensor_tensor(c, a, b, isa::Alu::kAdd);
      } else {
        isa::tensor_tensor(c, b, a, isa::Alu::kAdd);
      }
      Tensor out =
          t.Allocate({kP, kF}, proto::FLOAT32, Buffer::kSharedHbm, "o");
      isa::dma_copy(out, c);
      t.Output("out", out);
    });
    ASSERT_TRUE(graph.ok()) << graph.status();
    absl::StatusOr<std::map<std::string, HostArray>> out = RunGraph(*graph, {});
    ASSERT_FALSE(out.ok());
    EXPECT_THAT(out.status().message(),
                HasSubstr("instruction #7 tensor_tensor"));
    EXPECT_THAT(
        out.status().message(),
        HasSubstr(a_first ? "reads never-written sbuf tensor 'a' element "
                            "[1, 3]"
                          : "reads never-written sbuf tensor 'b' element "
                            "[2, 0]"));
  }
}

}  // namespace
}  // namespace nkigraph
