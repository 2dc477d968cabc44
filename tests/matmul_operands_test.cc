// nc_matmul's operands wherever they lie (dense, rows a partition apart, a
// slice of a wider tile; float32 in place or gathered, bfloat16 widened):
// the result must be bit for bit the same cblas_sgemm calls on dense host
// copies of the same values.
#include <cblas.h>

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

// c = st0^T mv0, then c += st1^T mv1[:, 5:5+kN] (mv1 is [kK, kN + 9]).
void Reference(const std::vector<float>& st0, const std::vector<float>& mv0,
               const std::vector<float>& st1, const std::vector<float>& mv1,
               std::vector<float>& c) {
  c.assign(kM * kN, 0.0f);
  cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, kM, kN, kK, 1.0f,
              st0.data(), kM, mv0.data(), kN, 0.0f, c.data(), kN);
  std::vector<float> mv1_slice;
  for (int64_t k = 0; k < kK; ++k) {
    for (int64_t n = 0; n < kN; ++n) {
      mv1_slice.push_back(mv1[k * (kN + 9) + 5 + n]);
    }
  }
  cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, kM, kN, kK, 1.0f,
              st1.data(), kM, mv1_slice.data(), kN, 1.0f, c.data(), kN);
}

TEST(MatmulOperandsTest, BitIdenticalToSgemmWhereverOperandsLie) {
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
      // Bit for bit: the same calls on the same values.
      ASSERT_EQ(got[i], want[i]) << "element " << i;
    }
  }
}

}  // namespace
}  // namespace nkigraph
