// The row-at-a-time forms of the element functions (ops/alu.h's
// ApplyAluRow, ApplyAluRowScalar and ReduceRows, ApplyActFuncRow, ExpRow)
// against the element-at-a-time definitions they replace, bit for bit,
// on values chosen to break a vectorised shortcut: signed zeros, quiet and
// signalling NaNs with payloads, infinities, subnormals, and for exp the
// edges of its special ranges plus an even sample of all 2^32 inputs.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <vector>

#include "gtest/gtest.h"
#include "ops/activation_functions.h"
#include "ops/alu.h"
#include "ops/row_ops.h"
#include "ops/vector_exp.h"
#include "util/dtype.h"

namespace nkigraph::ops {
namespace {

float FromBits(uint32_t bits) {
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

uint32_t Bits(float f) {
  uint32_t bits;
  std::memcpy(&bits, &f, 4);
  return bits;
}

// Values where a shortcut for max/min/compare/arithmetic would show.
std::vector<float> Specials() {
  std::vector<float> v;
  for (uint32_t bits :
       {0x00000000u, 0x80000000u, 0x3f800000u, 0xbf800000u, 0x7fc00000u,
        0x7fc00001u, 0xffc00000u, 0x7fa00000u, 0xffa00001u, 0x7f800000u,
        0xff800000u, 0x00000001u, 0x807fffffu, 0x7f7fffffu, 0x40490fdbu,
        0xc2c80000u, 0x3e800000u}) {
    v.push_back(FromBits(bits));
  }
  return v;
}

constexpr Alu kAllAlus[] = {
    Alu::kAdd,        Alu::kSubtract,     Alu::kMultiply,   Alu::kDivide,
    Alu::kMaximum,    Alu::kMinimum,      Alu::kEqual,      Alu::kNotEqual,
    Alu::kGreater,    Alu::kGreaterEqual, Alu::kLess,       Alu::kLessEqual,
    Alu::kPower,      Alu::kMod,          Alu::kAbsMax,     Alu::kBypass,
    Alu::kLogicalAnd, Alu::kLogicalOr,    Alu::kBitwiseAnd, Alu::kBitwiseOr,
    Alu::kBitwiseXor};

TEST(RowKernelsTest, AluRowMatchesApplyAluOnEveryPairOfSpecials) {
  const std::vector<float> s = Specials();
  std::vector<float> a, b;
  for (float x : s) {
    for (float y : s) {
      a.push_back(x);
      b.push_back(y);
    }
  }
  // The same pairs once more without NaNs, so rows take the NaN-free
  // max/min path too.
  std::vector<float> a_clean, b_clean;
  for (size_t i = 0; i < a.size(); ++i) {
    if (!std::isnan(a[i]) && !std::isnan(b[i])) {
      a_clean.push_back(a[i]);
      b_clean.push_back(b[i]);
    }
  }
  for (Alu op : kAllAlus) {
    for (const auto& [x, y] :
         {std::pair{&a, &b}, std::pair{&a_clean, &b_clean}}) {
      std::vector<float> out(x->size());
      ApplyAluRow(op, x->data(), y->data(), out.data(), out.size());
      for (size_t i = 0; i < out.size(); ++i) {
        ASSERT_EQ(Bits(out[i]), Bits(ApplyAlu(op, (*x)[i], (*y)[i])))
            << AluName(op) << "(" << (*x)[i] << ", " << (*y)[i] << ")";
      }
      for (bool reverse : {false, true}) {
        for (float scalar : s) {
          ApplyAluRowScalar(op, x->data(), scalar, reverse, out.data(),
                            out.size());
          for (size_t i = 0; i < out.size(); ++i) {
            const float want = reverse ? ApplyAlu(op, scalar, (*x)[i])
                                       : ApplyAlu(op, (*x)[i], scalar);
            ASSERT_EQ(Bits(out[i]), Bits(want))
                << AluName(op) << " scalar " << scalar << " reverse " << reverse
                << " x " << (*x)[i];
          }
        }
      }
    }
  }
}

TEST(RowKernelsTest, ReduceRowsFoldsEachRowInOrder) {
  // 27 rows (16 together, 8 together, then 3 alone) of 13 columns (one
  // vector block and a tail), in a strided buffer; one row with a NaN, one
  // of signed zeros only.
  const std::vector<float> s = Specials();
  constexpr int64_t kRows = 27, kCols = 13, kStride = 15;
  std::vector<float> data(kRows * kStride, 123.0f);
  for (int64_t r = 0; r < kRows; ++r) {
    for (int64_t c = 0; c < kCols; ++c) {
      float v = s[(r * 5 + c * 3) % s.size()];
      if (std::isnan(v) && r != 4) v = static_cast<float>(c) - 2.5f;
      if (r == 6) v = c % 2 ? -0.0f : 0.0f;
      data[r * kStride + c] = v;
    }
  }
  for (Alu op : {Alu::kAdd, Alu::kMultiply, Alu::kMaximum, Alu::kMinimum,
                 Alu::kAbsMax, Alu::kSubtract, Alu::kBitwiseOr}) {
    for (float init :
         {0.0f, -0.0f, -std::numeric_limits<float>::infinity(), 1.0f}) {
      std::vector<float> out(kRows);
      ReduceRows(op, init, data.data(), kRows, kCols, kStride, out.data());
      for (int64_t r = 0; r < kRows; ++r) {
        float acc = init;
        for (int64_t c = 0; c < kCols; ++c) {
          acc = ApplyAlu(op, acc, data[r * kStride + c]);
        }
        ASSERT_EQ(Bits(out[r]), Bits(acc))
            << AluName(op) << " row " << r << " init " << init;
      }
    }
  }
}

// Rows long enough for every loop of the vector scans (blocks of 32, of
// 8, a tail: 75 columns), with a NaN placed in each of them in turn, and
// rows whose extreme is a zero of either sign, first or later.
TEST(RowKernelsTest, LongRowScansFindNansAndSignedZerosAnywhere) {
  constexpr int64_t kCols = 75;
  const float qnan = FromBits(0x7fc00001u);
  for (int64_t at = -1; at < kCols; ++at) {
    std::vector<float> row(kCols);
    for (int64_t c = 0; c < kCols; ++c) {
      row[c] = static_cast<float>((c * 37) % 29) - 14.5f;
    }
    if (at >= 0) row[at] = qnan;
    SCOPED_TRACE(at);
    EXPECT_EQ(RowHasNan(row.data(), kCols), at >= 0);
    // Shorter prefixes see the NaN only when they reach it.
    EXPECT_EQ(RowHasNan(row.data(), 40), at >= 0 && at < 40);
    for (Alu op : {Alu::kMaximum, Alu::kMinimum}) {
      for (float init : {-std::numeric_limits<float>::infinity(), 3.0f}) {
        float out;
        ReduceRows(op, init, row.data(), 1, kCols, kCols, &out);
        float acc = init;
        for (float x : row) acc = ApplyAlu(op, acc, x);
        ASSERT_EQ(Bits(out), Bits(acc)) << AluName(op) << " init " << init;
      }
    }
  }
  // Zeros and negatives: the max is a zero, and which zero comes first
  // decides its sign; likewise the min of zeros and positives.
  for (int64_t first = 0; first < kCols; first += 7) {
    for (bool negative_first : {false, true}) {
      std::vector<float> below(kCols, -1.0f), above(kCols, 1.0f);
      for (int64_t c = first; c < kCols; c += 11) {
        const bool negative = (c == first) == negative_first;
        below[c] = above[c] = negative ? -0.0f : 0.0f;
      }
      for (float init : {-std::numeric_limits<float>::infinity(), -0.0f, 0.0f,
                         std::numeric_limits<float>::infinity()}) {
        float out;
        float acc = init;
        ReduceRows(Alu::kMaximum, init, below.data(), 1, kCols, kCols, &out);
        for (float x : below) acc = ApplyAlu(Alu::kMaximum, acc, x);
        ASSERT_EQ(Bits(out), Bits(acc)) << "max, first zero at " << first;
        acc = init;
        ReduceRows(Alu::kMinimum, init, above.data(), 1, kCols, kCols, &out);
        for (float x : above) acc = ApplyAlu(Alu::kMinimum, acc, x);
        ASSERT_EQ(Bits(out), Bits(acc)) << "min, first zero at " << first;
      }
    }
  }
}

// The distance from the exact exp(x) in units in the last place of the
// float nearest it (subnormal spacing below the normal range).
double UlpError(float x, float y) {
  const double exact = std::exp(static_cast<double>(x));
  int exponent = 0;
  std::frexp(exact, &exponent);
  const double ulp = std::ldexp(1.0, std::max(exponent - 24, -149));
  return std::fabs(static_cast<double>(y) - exact) / ulp;
}

TEST(RowKernelsTest, ExpRowIsExpOfAndNearTheExactExpOnASampleOfAllFloats) {
  // Every 4099th bit pattern (about a million, all exponents and both
  // signs), in a row of odd length so the vector loop's tail runs too.
  std::vector<float> x;
  for (uint64_t bits = 0; bits < (uint64_t{1} << 32); bits += 4099) {
    x.push_back(FromBits(static_cast<uint32_t>(bits)));
  }
  // The edges: the overflow threshold, the smallest normal and subnormal
  // results and where they round to zero, the clamps, the worst input
  // found by the exhaustive check (0x1.4ce028p+2).
  for (float edge : {88.72283f, 88.72284f, 89.0f, -87.33654f, -87.33655f,
                     -103.27893f, -103.97207f, -103.97208f, -103.97209f,
                     -104.0f, 0x1.4ce028p+2f, 0.0f, -0.0f}) {
    for (int d = -3; d <= 3; ++d) {
      x.push_back(FromBits(Bits(edge) + d));
    }
  }
  // Every path this processor runs gives ExpOf's bits.
  for (const SimdPath path : AvailableSimdPaths()) {
    std::vector<float> out(x.size());
    ExpRow(x.data(), out.data(), static_cast<int64_t>(x.size()), path);
    for (size_t i = 0; i < x.size(); ++i) {
      ASSERT_EQ(Bits(out[i]), Bits(ExpOf(x[i])))
          << "path " << static_cast<int>(path) << ": exp(" << x[i] << ") bits "
          << std::hex << Bits(x[i]);
    }
  }
  std::vector<float> out(x.size());
  ExpRow(x.data(), out.data(), static_cast<int64_t>(x.size()));
  constexpr float kMaxFloat = std::numeric_limits<float>::max();
  for (size_t i = 0; i < x.size(); ++i) {
    if (std::isnan(x[i])) {
      // The same NaN, quieted.
      ASSERT_EQ(Bits(out[i]), Bits(x[i]) | 0x400000u) << std::hex << Bits(x[i]);
      continue;
    }
    const double exact = std::exp(static_cast<double>(x[i]));
    if (exact > kMaxFloat) {
      // Overflow: inf, or FLT_MAX where the exact value rounds down to it.
      ASSERT_TRUE(std::isinf(out[i]) ||
                  exact < kMaxFloat + std::ldexp(1.0, 103))
          << "exp(" << x[i] << ") = " << out[i];
      continue;
    }
    ASSERT_LE(UlpError(x[i], out[i]), 1.06)
        << "exp(" << x[i] << ") = " << out[i] << ", exact " << exact;
  }
  EXPECT_EQ(ExpOf(0.0f), 1.0f);
  EXPECT_EQ(ExpOf(-0.0f), 1.0f);
  EXPECT_EQ(ExpOf(std::numeric_limits<float>::infinity()),
            std::numeric_limits<float>::infinity());
  EXPECT_EQ(Bits(ExpOf(-std::numeric_limits<float>::infinity())), 0u);
  EXPECT_EQ(Bits(ExpOf(-104.0f)), 0u);
  // exp(-103.27893) is about 1.4e-45: the smallest subnormal.
  EXPECT_EQ(Bits(ExpOf(-103.27893f)), 1u);
}

// ExpAffineRow is ExpOf(x * scale + bias), the product and the sum each
// rounded, on every path (tails of every length among them).
TEST(RowKernelsTest, ExpAffineRowIsExpOfTheRoundedAffineOnEveryPath) {
  std::vector<float> x = Specials();
  for (int i = -300; i <= 300; ++i) x.push_back(static_cast<float>(i) * 0.31f);
  for (const SimdPath path : AvailableSimdPaths()) {
    for (const auto& [scale, bias] :
         {std::pair{1.0f, 0.0f}, std::pair{-0.7f, 0.3f},
          std::pair{3.0f, -88.0f}}) {
      for (int64_t n : {int64_t{0}, int64_t{5}, int64_t{16}, int64_t{29},
                        static_cast<int64_t>(x.size())}) {
        std::vector<float> out(n);
        ExpAffineRow(x.data(), scale, bias, out.data(), n, path);
        for (int64_t j = 0; j < n; ++j) {
          const float affine = x[j] * scale + bias;
          ASSERT_EQ(Bits(out[j]), Bits(ExpOf(affine)))
              << "path " << static_cast<int>(path) << " x " << x[j] << " scale "
              << scale << " bias " << bias;
        }
      }
    }
  }
}

TEST(RowKernelsTest, ActFuncRowMatchesApplyActFunc) {
  std::vector<float> x = Specials();
  for (int i = -200; i <= 200; ++i) x.push_back(static_cast<float>(i) * 0.37f);
  for (const ActFuncInfo& info : kActFuncs) {
    for (const auto& [scale, bias] :
         {std::pair{1.0f, 0.0f}, std::pair{-0.5f, 0.25f},
          std::pair{3.0f, -0.0f}}) {
      std::vector<float> out(x.size());
      ApplyActFuncRow(info.value, x.data(), scale, bias, out.data(),
                      out.size());
      for (size_t i = 0; i < x.size(); ++i) {
        const float want = ApplyActFunc(info.value, x[i] * scale + bias);
        ASSERT_EQ(Bits(out[i]), Bits(want)) << info.name << "(" << x[i] << " * "
                                            << scale << " + " << bias << ")";
      }
    }
  }
}

TEST(RowKernelsTest, Bf16RowRoundingIsFloatToBf16OnASampleOfAllFloats) {
  std::vector<float> x;
  for (uint64_t bits = 0; bits < (uint64_t{1} << 32); bits += 2053) {
    x.push_back(FromBits(static_cast<uint32_t>(bits)));
  }
  for (float v : Specials()) x.push_back(v);
  std::vector<uint16_t> out(x.size());
  StoreRowFromFloat(proto::BFLOAT16, x.data(), static_cast<int64_t>(x.size()),
                    reinterpret_cast<uint8_t*>(out.data()), 240.0f);
  for (size_t i = 0; i < x.size(); ++i) {
    ASSERT_EQ(out[i], FloatToBf16(x[i])) << std::hex << Bits(x[i]);
  }
}

}  // namespace
}  // namespace nkigraph::ops
