// ops::MatmulTile against the order it defines, written out one element at
// a time: every code path this processor runs, odd shapes, operands with
// padded and unaligned rows, accumulate on and off, float32, bfloat16,
// float16 and float8 operands, any thread count. Bit for bit.
#include "ops/matmul_kernel.h"

#include <cblas.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "util/dtype.h"

namespace nkigraph::ops {
namespace {

struct Shape {
  int64_t k, m, n;
};

// Shapes covering K, M and N pairwise around the register blocks' edges
// (AVX-512 6 x 64, AVX2 6 x 16 and 8-column vectors) and at the hardware's
// limits (K 128, M 128, N 512).
constexpr Shape kShapes[] = {
    {1, 1, 1},      {1, 8, 32},      {2, 7, 33},    {3, 9, 17},
    {5, 128, 1},    {7, 6, 16},      {8, 13, 15},   {16, 1, 512},
    {31, 5, 8},     {33, 12, 31},    {64, 17, 100}, {100, 3, 47},
    {127, 64, 511}, {128, 128, 512}, {128, 127, 9}, {128, 11, 64},
    {17, 128, 65},  {64, 1, 7},      {1, 127, 129}, {128, 2, 250},
    {9, 6, 48},     {4, 19, 63},
};

float RandomValue(std::mt19937& rng) {
  return std::uniform_real_distribution<float>(-2.0f, 2.0f)(rng);
}

// A [rows, cols] operand of `dtype` in rows `stride` bytes apart, starting
// `offset` bytes into its buffer (an odd offset leaves rows unaligned).
struct Operand {
  std::vector<uint8_t> bytes;
  int64_t offset = 0;
  int64_t stride = 0;
  proto::DType dtype = proto::FLOAT32;
  const uint8_t* data() const { return bytes.data() + offset; }
  float At(int64_t r, int64_t c) const {
    return LoadAsFloat(dtype, data() + r * stride + c * DTypeSize(dtype));
  }
};

MatmulOperand View(const Operand& o) { return {o.data(), o.stride, o.dtype}; }

Operand RandomOperand(int64_t rows, int64_t cols, proto::DType dtype,
                      int64_t pad_elements, int64_t offset, std::mt19937& rng) {
  Operand o;
  o.dtype = dtype;
  o.offset = offset;
  o.stride = (cols + pad_elements) * DTypeSize(dtype);
  o.bytes.assign(offset + rows * o.stride, 0xcd);
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t c = 0; c < cols; ++c) {
      StoreFromFloat(
          dtype, RandomValue(rng),
          o.bytes.data() + offset + r * o.stride + c * DTypeSize(dtype),
          448.0f);
    }
  }
  return o;
}

// The operand's values, row-major.
std::vector<float> Values(const Operand& o, int64_t rows, int64_t cols) {
  std::vector<float> v(rows * cols);
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t c = 0; c < cols; ++c) v[r * cols + c] = o.At(r, c);
  }
  return v;
}

// c[i][j] = (accumulate ? c[i][j] : 0) + the fma chain over p from +0.
std::vector<float> Reference(const Shape& s, const Operand& st_operand,
                             const Operand& mv_operand, std::vector<float> c,
                             bool accumulate) {
  const std::vector<float> st = Values(st_operand, s.k, s.m);
  const std::vector<float> mv = Values(mv_operand, s.k, s.n);
  for (int64_t i = 0; i < s.m; ++i) {
    for (int64_t j = 0; j < s.n; ++j) {
      float acc = 0.0f;
      for (int64_t p = 0; p < s.k; ++p) {
        acc = std::fma(st[p * s.m + i], mv[p * s.n + j], acc);
      }
      float& out = c[i * s.n + j];
      out = accumulate ? out + acc : acc;
    }
  }
  return c;
}

void ExpectBitsEqual(const std::vector<float>& got,
                     const std::vector<float>& want) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < want.size(); ++i) {
    uint32_t g, w;
    std::memcpy(&g, &got[i], 4);
    std::memcpy(&w, &want[i], 4);
    ASSERT_EQ(g, w) << "element " << i << ": " << got[i] << " vs " << want[i];
  }
}

TEST(MatmulKernelTest, EveryPathIsTheDefinedOrderBitForBit) {
  // The operands' dtypes in turn: (stationary, moving).
  constexpr proto::DType kDTypes[][2] = {
      {proto::FLOAT32, proto::FLOAT32},
      {proto::BFLOAT16, proto::BFLOAT16},
      {proto::FLOAT16, proto::FLOAT16},
      {proto::BFLOAT16, proto::FLOAT8_E4M3},
      {proto::FLOAT8_E4M3, proto::FLOAT16},
  };
  std::mt19937 rng(17);
  int round = 0;
  for (const Shape& s : kShapes) {
    // Every dtype pair for the small shapes, one in turn for big ones.
    const bool big = s.k * s.m * s.n > (1 << 18);
    for (int d = 0; d < 5; ++d) {
      if (big && d != round % 5) continue;
      const proto::DType st_dtype = kDTypes[d][0], mv_dtype = kDTypes[d][1];
      ++round;
      // Rows padded by 0..4 elements, sometimes at an odd byte.
      const Operand st =
          RandomOperand(s.k, s.m, st_dtype, (round * 3) % 5, round % 2, rng);
      const Operand mv = RandomOperand(s.k, s.n, mv_dtype, round % 5,
                                       (round % 3 == 0) ? 1 : 0, rng);
      std::vector<float> old(s.m * s.n);
      for (float& x : old) x = RandomValue(rng);
      for (const bool accumulate : {false, true}) {
        const std::vector<float> want = Reference(s, st, mv, old, accumulate);
        for (const SimdPath path : AvailableSimdPaths()) {
          SCOPED_TRACE(testing::Message()
                       << "k " << s.k << " m " << s.m << " n " << s.n << " "
                       << DTypeName(st_dtype) << " x " << DTypeName(mv_dtype)
                       << " accumulate " << accumulate << " "
                       << SimdPathName(path));
          std::vector<float> c = old;
          MatmulTile(s.k, s.m, s.n, View(st), View(mv), {c.data(), s.n},
                     accumulate, /*threads=*/1, path);
          ExpectBitsEqual(c, want);
        }
      }
    }
  }
}

// The destination's ld wider than n: the columns between are untouched.
TEST(MatmulKernelTest, WritesOnlyTheDestinationsColumns) {
  constexpr Shape s{9, 10, 37};
  constexpr int64_t kLd = 45;
  std::mt19937 rng(5);
  const Operand st = RandomOperand(s.k, s.m, proto::FLOAT32, 0, 0, rng);
  const Operand mv = RandomOperand(s.k, s.n, proto::FLOAT32, 0, 0, rng);
  const std::vector<float> want =
      Reference(s, st, mv, std::vector<float>(s.m * s.n), false);
  for (const SimdPath path : AvailableSimdPaths()) {
    SCOPED_TRACE(SimdPathName(path));
    std::vector<float> c(s.m * kLd, 3.5f);
    MatmulTile(s.k, s.m, s.n, View(st), View(mv), {c.data(), kLd},
               /*accumulate=*/false, 1, path);
    for (int64_t i = 0; i < s.m; ++i) {
      for (int64_t j = 0; j < kLd; ++j) {
        if (j < s.n) {
          ASSERT_EQ(c[i * kLd + j], want[i * s.n + j]) << i << "," << j;
        } else {
          ASSERT_EQ(c[i * kLd + j], 3.5f) << i << "," << j;
        }
      }
    }
  }
}

// Special values follow the same order on every path: infinities, NaNs
// (every float16 NaN, whatever its payload and sign, reads as the one
// quiet NaN the scalar conversion gives), signed zeros and subnormals.
TEST(MatmulKernelTest, SpecialValuesAlikeOnEveryPath) {
  constexpr Shape s{6, 9, 40};
  const float specials[] = {INFINITY, -INFINITY, NAN,      -0.0f, 0.0f,
                            1e-40f,   -1e-38f,   65504.0f, 1.0f,  -3.0f};
  for (const proto::DType dtype :
       {proto::FLOAT32, proto::BFLOAT16, proto::FLOAT16}) {
    SCOPED_TRACE(DTypeName(dtype));
    std::mt19937 rng(11);
    const int size = DTypeSize(dtype);
    Operand st = RandomOperand(s.k, s.m, proto::FLOAT32, 0, 0, rng);
    for (int64_t e = 0; e < s.k * s.m; ++e) {
      StoreFromFloat(proto::FLOAT32, specials[(e * 7) % 10],
                     st.bytes.data() + 4 * e, 448.0f);
    }
    Operand mv = RandomOperand(s.k, s.n, dtype, 1, 0, rng);
    for (int64_t p = 0; p < s.k; ++p) {
      for (int64_t j = 0; j < s.n; j += 3) {
        uint8_t* e = mv.bytes.data() + p * mv.stride + j * size;
        if (dtype == proto::FLOAT16 && j % 2 == 0) {
          const uint16_t nan = static_cast<uint16_t>(0xfc01 + p * 13 + j);
          std::memcpy(e, &nan, 2);
        } else {
          StoreFromFloat(dtype, specials[(p + j) % 10], e, 448.0f);
        }
      }
    }
    const std::vector<float> old(s.m * s.n, -0.0f);
    for (const bool accumulate : {false, true}) {
      const std::vector<float> want = Reference(s, st, mv, old, accumulate);
      for (const SimdPath path : AvailableSimdPaths()) {
        SCOPED_TRACE(SimdPathName(path));
        std::vector<float> c = old;
        MatmulTile(s.k, s.m, s.n, View(st), View(mv), {c.data(), s.n},
                   accumulate, 1, path);
        ExpectBitsEqual(c, want);
      }
    }
  }
}

// Threads split columns, never a dot product: every count gives the same
// bits, above and below the size where a product is split at all.
TEST(MatmulKernelTest, SameBitsForEveryThreadCount) {
  for (const Shape& s :
       {Shape{128, 128, 512}, Shape{100, 33, 300}, Shape{4, 4, 40}}) {
    std::mt19937 rng(23);
    const Operand st = RandomOperand(s.k, s.m, proto::FLOAT32, 3, 0, rng);
    const Operand mv = RandomOperand(s.k, s.n, proto::BFLOAT16, 2, 1, rng);
    std::vector<float> old(s.m * s.n);
    for (float& x : old) x = RandomValue(rng);
    std::vector<float> one = old;
    MatmulTile(s.k, s.m, s.n, View(st), View(mv), {one.data(), s.n}, true, 1);
    ExpectBitsEqual(one, Reference(s, st, mv, old, true));
    for (const int threads : {2, 3, 8}) {
      SCOPED_TRACE(threads);
      std::vector<float> c = old;
      MatmulTile(s.k, s.m, s.n, View(st), View(mv), {c.data(), s.n}, true,
                 threads);
      ExpectBitsEqual(c, one);
    }
  }
}

// OpenBLAS's sgemm (alpha 1; beta 0, or beta 1 to accumulate) computed the
// same order for every one of these shapes with the kernels it picks for
// the processors named here, where this was checked; elsewhere its kernel
// may sum in another order, and the interpreter keeps its own.
bool BlasOrderChecked() {
  const std::string core = openblas_get_corename();
  for (const char* checked : {"SkylakeX", "Cooperlake", "SapphireRapids"}) {
    if (core == checked) return true;
  }
  return false;
}

TEST(MatmulKernelTest, SameBitsAsOpenBlasWhereItsOrderWasChecked) {
  if (!BlasOrderChecked()) {
    GTEST_SKIP() << "OpenBLAS core " << openblas_get_corename()
                 << " was not checked";
  }
  openblas_set_num_threads(1);
  std::mt19937 rng(29);
  for (const Shape& s : kShapes) {
    std::vector<float> st(s.k * s.m), mv(s.k * s.n), old(s.m * s.n);
    for (float& x : st) x = RandomValue(rng);
    for (float& x : mv) x = RandomValue(rng);
    for (float& x : old) x = RandomValue(rng);
    for (const bool accumulate : {false, true}) {
      SCOPED_TRACE(testing::Message() << "k " << s.k << " m " << s.m << " n "
                                      << s.n << " accumulate " << accumulate);
      std::vector<float> blas = old, ours = old;
      cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, s.m, s.n, s.k, 1.0f,
                  st.data(), s.m, mv.data(), s.n, accumulate ? 1.0f : 0.0f,
                  blas.data(), s.n);
      MatmulTile(s.k, s.m, s.n,
                 {reinterpret_cast<const uint8_t*>(st.data()), s.m * 4,
                  proto::FLOAT32},
                 {reinterpret_cast<const uint8_t*>(mv.data()), s.n * 4,
                  proto::FLOAT32},
                 {ours.data(), s.n}, accumulate);
      ExpectBitsEqual(ours, blas);
    }
  }
}

}  // namespace
}  // namespace nkigraph::ops
