#include "ops/vector_exp.h"

#include <immintrin.h>

#include <cmath>
#include <cstring>

namespace nkigraph::ops {
namespace {

// The algorithm's constants: N = 32 table entries, x * N / ln 2 = k + r,
// exp(x) = 2^(k/N) * (C0 r^3 + C1 r^2 + C2 r + 1).
constexpr double kInvLn2N = 0x1.71547652b82fep+0 * 32;
constexpr double kShift = 0x1.8p+52;  // rounds to an integer in the low bits
constexpr double kC0 = 0x1.c6af84b912394p-5 / 32 / 32 / 32;
constexpr double kC1 = 0x1.ebfce50fac4f3p-3 / 32 / 32;
constexpr double kC2 = 0x1.62e42ff0c52d6p-1 / 32;

// Bits of 2^(i/32), less i << 47 so that adding k << 47 (k = 32 q + i)
// gives the bits of 2^(k/32) for any q in range.
struct Table {
  alignas(64) uint64_t bits[32];
  Table() {
    for (int i = 0; i < 32; ++i) {
      const double v = static_cast<double>(std::exp2l(i / 32.0L));
      std::memcpy(&bits[i], &v, 8);
      bits[i] -= static_cast<uint64_t>(i) << 47;
    }
  }
};
const Table& ExpTable() {
  static const Table table;
  return table;
}

__attribute__((target("avx2,fma"))) __m128 Exp4(__m128 x,
                                                const uint64_t* table) {
  const __m256d xd = _mm256_cvtps_pd(x);
  const __m256d inv = _mm256_set1_pd(kInvLn2N);
  const __m256d shift = _mm256_set1_pd(kShift);
  __m256d kd = _mm256_fmadd_pd(inv, xd, shift);
  const __m256i ki = _mm256_castpd_si256(kd);
  kd = _mm256_sub_pd(kd, shift);
  const __m256d r = _mm256_fmsub_pd(inv, xd, kd);
  const __m256i index = _mm256_and_si256(ki, _mm256_set1_epi64x(31));
  __m256i t = _mm256_i64gather_epi64(reinterpret_cast<const long long*>(table),
                                     index, 8);
  t = _mm256_add_epi64(t, _mm256_slli_epi64(ki, 47));
  const __m256d s = _mm256_castsi256_pd(t);
  const __m256d z =
      _mm256_fmadd_pd(_mm256_set1_pd(kC0), r, _mm256_set1_pd(kC1));
  const __m256d r2 = _mm256_mul_pd(r, r);
  __m256d y = _mm256_fmadd_pd(_mm256_set1_pd(kC2), r, _mm256_set1_pd(1.0));
  y = _mm256_fmadd_pd(z, r2, y);
  return _mm256_cvtpd_ps(_mm256_mul_pd(y, s));
}

__attribute__((target("avx2,fma"))) void ExpRowAvx2(const float* x, float* out,
                                                    int64_t n) {
  const uint64_t* table = ExpTable().bits;
  // |x| >= 88 or NaN (the library's special cases: overflow, underflow
  // towards subnormals and zero, infinities) is bits from 0x42b00000 up
  // once the sign is cleared.
  const __m256i below = _mm256_set1_epi32(0x42afffff);
  const __m256i magnitude = _mm256_set1_epi32(0x7fffffff);
  int64_t j = 0;
  for (; j + 8 <= n; j += 8) {
    const __m256 v = _mm256_loadu_ps(x + j);
    const __m256i abs_bits =
        _mm256_and_si256(_mm256_castps_si256(v), magnitude);
    const __m256i special = _mm256_cmpgt_epi32(abs_bits, below);
    if (!_mm256_testz_si256(special, special)) {
      for (int k = 0; k < 8; ++k) out[j + k] = std::exp(x[j + k]);
      continue;
    }
    const __m128 lo = Exp4(_mm256_castps256_ps128(v), table);
    const __m128 hi = Exp4(_mm256_extractf128_ps(v, 1), table);
    _mm256_storeu_ps(out + j, _mm256_set_m128(hi, lo));
  }
  for (; j < n; ++j) out[j] = std::exp(x[j]);
}

// Exp4's arithmetic, operation for operation, on eight lanes; the table
// looked up by two-register permutes (entries 0-15 and 16-31, picked by
// bit 4 of the index) rather than a gather, which is the slow part of Exp4.
__attribute__((target("avx512f"))) __m256 Exp8(__m256 x, __m512i t0, __m512i t1,
                                               __m512i t2, __m512i t3) {
  const __m512d xd = _mm512_cvtps_pd(x);
  const __m512d inv = _mm512_set1_pd(kInvLn2N);
  const __m512d shift = _mm512_set1_pd(kShift);
  __m512d kd = _mm512_fmadd_pd(inv, xd, shift);
  const __m512i ki = _mm512_castpd_si512(kd);
  kd = _mm512_sub_pd(kd, shift);
  const __m512d r = _mm512_fmsub_pd(inv, xd, kd);
  const __m512i index = _mm512_and_si512(ki, _mm512_set1_epi64(31));
  const __mmask8 upper = _mm512_test_epi64_mask(index, _mm512_set1_epi64(16));
  __m512i t =
      _mm512_mask_blend_epi64(upper, _mm512_permutex2var_epi64(t0, index, t1),
                              _mm512_permutex2var_epi64(t2, index, t3));
  t = _mm512_add_epi64(t, _mm512_slli_epi64(ki, 47));
  const __m512d s = _mm512_castsi512_pd(t);
  const __m512d z =
      _mm512_fmadd_pd(_mm512_set1_pd(kC0), r, _mm512_set1_pd(kC1));
  const __m512d r2 = _mm512_mul_pd(r, r);
  __m512d y = _mm512_fmadd_pd(_mm512_set1_pd(kC2), r, _mm512_set1_pd(1.0));
  y = _mm512_fmadd_pd(z, r2, y);
  return _mm512_cvtpd_ps(_mm512_mul_pd(y, s));
}

__attribute__((target("avx512f"))) void ExpRowAvx512(const float* x, float* out,
                                                     int64_t n) {
  const uint64_t* table = ExpTable().bits;
  const __m512i t0 = _mm512_load_si512(table);
  const __m512i t1 = _mm512_load_si512(table + 8);
  const __m512i t2 = _mm512_load_si512(table + 16);
  const __m512i t3 = _mm512_load_si512(table + 24);
  // The special cases as in ExpRowAvx2.
  const __m256i below = _mm256_set1_epi32(0x42afffff);
  const __m256i magnitude = _mm256_set1_epi32(0x7fffffff);
  int64_t j = 0;
  for (; j + 8 <= n; j += 8) {
    const __m256 v = _mm256_loadu_ps(x + j);
    const __m256i abs_bits =
        _mm256_and_si256(_mm256_castps_si256(v), magnitude);
    const __m256i special = _mm256_cmpgt_epi32(abs_bits, below);
    if (!_mm256_testz_si256(special, special)) {
      for (int k = 0; k < 8; ++k) out[j + k] = std::exp(x[j + k]);
      continue;
    }
    _mm256_storeu_ps(out + j, Exp8(v, t0, t1, t2, t3));
  }
  for (; j < n; ++j) out[j] = std::exp(x[j]);
}

bool HaveAvx512() {
  static const bool have = __builtin_cpu_supports("avx512f");
  return have;
}

bool HaveAvx2Fma() {
  static const bool have =
      __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
  return have;
}

}  // namespace

void ExpRow(const float* x, float* out, int64_t n) {
  if (HaveAvx512()) {
    ExpRowAvx512(x, out, n);
    return;
  }
  if (HaveAvx2Fma()) {
    ExpRowAvx2(x, out, n);
    return;
  }
  for (int64_t j = 0; j < n; ++j) out[j] = std::exp(x[j]);
}

}  // namespace nkigraph::ops
