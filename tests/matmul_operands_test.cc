// nc_matmul's operands wherever they lie (dense, rows a partition apart, a
// slice of a wider tile; float32, bfloat16 widened): the result must be bit
// for bit the products of dense host copies of the same values in the order
// ops/matmul_kernel.h defines (an fma chain per element from +0, then one
// addition onto the accumulated value), written out here.
#include <cmath>
#include <cstdint>
#include <random>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/test_util.h"
#include "util/dtype.h"

namespace nkigraph {
namespace {

using builder::Buffer;
using builder::Tensor;
using builder::Tracer;
namespace isa = builder::isa;
using testing::Floats;
using testing::RunGraph;
using testing::Trace1;

constexpr int64_t kK = 128, kM = 64, kN = 96;

std::vector<float> Random(int64_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  std::vector<float> v(n);
  for (float& x : v) x = u(rng);
  return v;
}

// The values as the device holds them in `dtype`.
std::vector<float> Rounded(std::vector<float> v, proto::DType dtype) {
  for (float& x : v) {
    uint8_t b[4];
    StoreFromFloat(dtype, x, b, 448.0f);
    x = LoadAsFloat(dtype, b);
  }
  return v;
}

// c (+)= st^T mv for [kK, kM] st and the [kK, kN] columns of mv from
// column `col` of its `ld`.
void Product(const std::vector<float>& st, const std::vector<float>& mv,
             int64_t ld, int64_t col, bool accumulate, std::vector<float>& c) {
  for (int64_t i = 0; i < kM; ++i) {
    for (int64_t j = 0; j < kN; ++j) {
      float acc = 0.0f;
      for (int64_t p = 0; p < kK; ++p) {
        acc = std::fma(st[p * kM + i], mv[p * ld + col + j], acc);
      }
      c[i * kN + j] = accumulate ? c[i * kN + j] + acc : acc;
    }
  }
}

// c = st0^T mv0, then c += st1^T mv1[:, 5:5+kN] (mv1 is [kK, kN + 9]).
void Reference(const std::vector<float>& st0, const std::vector<float>& mv0,
               const std::vector<float>& st1, const std::vector<float>& mv1,
               std::vector<float>& c) {
  c.assign(kM * kN, 0.0f);
  Product(st0, mv0, kN, 0, /*accumulate=*/false, c);
  Product(st1, mv1, kN + 9, 5, /*accumulate=*/true, c);
}

TEST(MatmulOperandsTest, BitIdenticalToTheDefinedOrderWhereverOperandsLie) {
  for (const proto::DType dtype : {proto::FLOAT32, proto::BFLOAT16}) {
    SCOPED_TRACE(DTypeName(dtype));
    absl::StatusOr<proto::Graph> graph = Trace1([&](Tracer& t) {
      auto load = [&](const std::string& name, std::vector<int64_t> shape) {
        Tensor in = t.Input(name, shape, dtype);
        Tensor tile = builder::ndarray(shape, dtype, Buffer::kSbuf, name);
        isa::dma_copy(tile, in);
        return tile;
      };
      const Tensor st0 = load("st0", {kK, kM});
      const Tensor mv0 = load("mv0", {kK, kN});
      const Tensor st1 = load("st1", {kK, kM});
      const Tensor mv1 = load("mv1", {kK, kN + 9});
      Tensor acc =
          builder::ndarray({kM, kN}, proto::FLOAT32, Buffer::kPsum, "acc");
      isa::nc_matmul(acc, st0, mv0, /*accumulate=*/false);
      isa::nc_matmul(acc, st1, mv1.Slice(1, 5, kN), /*accumulate=*/true);
      Tensor sb =
          builder::ndarray({kM, kN}, proto::FLOAT32, Buffer::kSbuf, "sb");
      isa::tensor_copy(sb, acc);
      Tensor out =
          t.Allocate({kM, kN}, proto::FLOAT32, Buffer::kSharedHbm, "out");
      isa::dma_copy(out, sb);
      t.Output("out", out);
    });
    ASSERT_TRUE(graph.ok()) << graph.status();
    const std::vector<float> st0 = Random(kK * kM, 1), mv0 = Random(kK * kN, 2),
                             st1 = Random(kK * kM, 3),
                             mv1 = Random(kK * (kN + 9), 4);
    absl::StatusOr<std::map<std::string, HostArray>> out = RunGraph(
        *graph,
        {Floats("st0", {kK, kM}, st0), Floats("mv0", {kK, kN}, mv0),
         Floats("st1", {kK, kM}, st1), Floats("mv1", {kK, kN + 9}, mv1)});
    ASSERT_TRUE(out.ok()) << out.status();
    std::vector<float> want;
    Reference(Rounded(st0, dtype), Rounded(mv0, dtype), Rounded(st1, dtype),
              Rounded(mv1, dtype), want);
    const std::vector<float>& got = out->at("out").f32;
    ASSERT_EQ(got.size(), want.size());
    for (size_t i = 0; i < want.size(); ++i) {
      // Bit for bit: the same order on the same values.
      ASSERT_EQ(got[i], want[i]) << "element " << i;
    }
  }
}

}  // namespace
}  // namespace nkigraph
