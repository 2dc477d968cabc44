#include "ops/vector_exp.h"

#include <immintrin.h>

#include <algorithm>
#include <cmath>
#include <cstring>

#include "ops/cpu_features.h"

namespace nkigraph::ops {
namespace {

// Below kLowest exp(x) rounds to +0 and above kHighest to +inf; clamping
// there keeps k (and the two scale factors) in range.
constexpr float kLowest = -104.0f;
constexpr float kHighest = 89.0f;
constexpr float kLog2e = 0x1.715476p+0f;
// Adding 1.5 * 2^23 rounds to an integer (ties to even): rint for
// |x log2 e| < 2^22.
constexpr float kShifter = 0x1.8p+23f;
// ln 2 = kLn2Hi + kLn2Lo (Cody and Waite): kLn2Hi has 15 significant bits,
// so x - k kLn2Hi is exact for |k| <= 150, and the second step subtracts
// the rest with one rounding.
constexpr float kLn2Hi = 0x1.62e4p-1f;
constexpr float kLn2Lo = 0x1.7f7d1cp-20f;
constexpr float kC1 = 0x1.0p+0f;
constexpr float kC2 = 0x1.fffffcp-2f;
constexpr float kC3 = 0x1.55541ap-3f;
constexpr float kC4 = 0x1.555822p-5f;
constexpr float kC5 = 0x1.126794p-7f;
constexpr float kC6 = 0x1.6ae72p-10f;

float FloatOfBits(uint32_t bits) {
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

// 2^k for -126 <= k <= 127.
float Pow2(int32_t k) {
  return FloatOfBits(static_cast<uint32_t>(k + 127) << 23);
}

// ExpOf's operations. Inlined into a caller built for FMA, std::fma is one
// instruction; elsewhere it is a call to the library's fmaf (the same
// bits, each fma rounded once either way).
[[gnu::always_inline]] inline float ExpOfBody(float x) {
  if (std::isnan(x)) return x + x;
  const float c = std::min(std::max(x, kLowest), kHighest);
  const float kf = std::fma(c, kLog2e, kShifter) - kShifter;
  float r = std::fma(-kf, kLn2Hi, c);
  r = std::fma(-kf, kLn2Lo, r);
  float p = std::fma(kC6, r, kC5);
  p = std::fma(p, r, kC4);
  p = std::fma(p, r, kC3);
  p = std::fma(p, r, kC2);
  p = std::fma(p, r, kC1);
  p = std::fma(p, r, 1.0f);
  const int32_t k = static_cast<int32_t>(kf);
  const int32_t k1 = k >> 1;  // floor(k / 2): k1 and k - k1 in [-75, 64]
  return (p * Pow2(k1)) * Pow2(k - k1);
}

__attribute__((target("fma"))) float ExpOfFma(float x) { return ExpOfBody(x); }

__attribute__((target("avx2,fma"))) __m256 Exp8(__m256 x) {
  const __m256 nan = _mm256_cmp_ps(x, x, _CMP_UNORD_Q);
  const __m256 c = _mm256_min_ps(_mm256_max_ps(x, _mm256_set1_ps(kLowest)),
                                 _mm256_set1_ps(kHighest));
  const __m256 shifter = _mm256_set1_ps(kShifter);
  const __m256 kf = _mm256_sub_ps(
      _mm256_fmadd_ps(c, _mm256_set1_ps(kLog2e), shifter), shifter);
  __m256 r = _mm256_fnmadd_ps(kf, _mm256_set1_ps(kLn2Hi), c);
  r = _mm256_fnmadd_ps(kf, _mm256_set1_ps(kLn2Lo), r);
  __m256 p = _mm256_fmadd_ps(_mm256_set1_ps(kC6), r, _mm256_set1_ps(kC5));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(kC4));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(kC3));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(kC2));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(kC1));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f));
  const __m256i k = _mm256_cvtps_epi32(kf);
  const __m256i k1 = _mm256_srai_epi32(k, 1);
  const __m256i k2 = _mm256_sub_epi32(k, k1);
  const __m256i bias = _mm256_set1_epi32(127);
  const __m256 s1 =
      _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_add_epi32(k1, bias), 23));
  const __m256 s2 =
      _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_add_epi32(k2, bias), 23));
  const __m256 y = _mm256_mul_ps(_mm256_mul_ps(p, s1), s2);
  return _mm256_blendv_ps(y, _mm256_add_ps(x, x), nan);
}

// ExpAffineRow (kAffine) or ExpRow on eight lanes at a time.
template <bool kAffine>
__attribute__((target("avx2,fma"))) void ExpRowAvx2(const float* x, float scale,
                                                    float bias, float* out,
                                                    int64_t n) {
  const __m256 s = _mm256_set1_ps(scale);
  const __m256 b = _mm256_set1_ps(bias);
  int64_t j = 0;
  for (; j + 8 <= n; j += 8) {
    __m256 v = _mm256_loadu_ps(x + j);
    if constexpr (kAffine) v = _mm256_add_ps(_mm256_mul_ps(v, s), b);
    _mm256_storeu_ps(out + j, Exp8(v));
  }
  for (; j < n; ++j) out[j] = ExpOfBody(kAffine ? x[j] * scale + bias : x[j]);
}

// Exp8's operations on sixteen lanes. The zero-masked forms keeping every
// lane: GCC 12 warns of the unmasked ones' undefined pass-through operand;
// they are the same instructions.
__attribute__((target("avx512f"))) __m512 Exp16(__m512 x) {
  constexpr __mmask16 kAll = 0xffff;
  const __mmask16 nan = _mm512_cmp_ps_mask(x, x, _CMP_UNORD_Q);
  const __m512 c = _mm512_maskz_min_ps(
      kAll, _mm512_maskz_max_ps(kAll, x, _mm512_set1_ps(kLowest)),
      _mm512_set1_ps(kHighest));
  const __m512 shifter = _mm512_set1_ps(kShifter);
  const __m512 kf = _mm512_sub_ps(
      _mm512_fmadd_ps(c, _mm512_set1_ps(kLog2e), shifter), shifter);
  __m512 r = _mm512_fnmadd_ps(kf, _mm512_set1_ps(kLn2Hi), c);
  r = _mm512_fnmadd_ps(kf, _mm512_set1_ps(kLn2Lo), r);
  __m512 p = _mm512_fmadd_ps(_mm512_set1_ps(kC6), r, _mm512_set1_ps(kC5));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(kC4));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(kC3));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(kC2));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(kC1));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f));
  const __m512i k = _mm512_maskz_cvtps_epi32(kAll, kf);
  const __m512i k1 = _mm512_maskz_srai_epi32(kAll, k, 1);
  const __m512i k2 = _mm512_sub_epi32(k, k1);
  const __m512i bias = _mm512_set1_epi32(127);
  const __m512 s1 = _mm512_castsi512_ps(
      _mm512_maskz_slli_epi32(kAll, _mm512_add_epi32(k1, bias), 23));
  const __m512 s2 = _mm512_castsi512_ps(
      _mm512_maskz_slli_epi32(kAll, _mm512_add_epi32(k2, bias), 23));
  const __m512 y = _mm512_mul_ps(_mm512_mul_ps(p, s1), s2);
  return _mm512_mask_add_ps(y, nan, x, x);
}

// x * scale + bias (kAffine) or x, sixteen lanes.
template <bool kAffine>
__attribute__((target("avx512f"))) __m512 Affine16(__m512 v, __m512 s,
                                                   __m512 b) {
  if constexpr (kAffine) return _mm512_add_ps(_mm512_mul_ps(v, s), b);
  return v;
}

// ExpRowAvx2's work sixteen lanes at a time, the tail masked.
template <bool kAffine>
__attribute__((target("avx512f"))) void ExpRowAvx512(const float* x,
                                                     float scale, float bias,
                                                     float* out, int64_t n) {
  const __m512 s = _mm512_set1_ps(scale);
  const __m512 b = _mm512_set1_ps(bias);
  int64_t j = 0;
  for (; j + 16 <= n; j += 16) {
    _mm512_storeu_ps(out + j,
                     Exp16(Affine16<kAffine>(_mm512_loadu_ps(x + j), s, b)));
  }
  if (j < n) {
    const __mmask16 tail = static_cast<__mmask16>((1u << (n - j)) - 1);
    _mm512_mask_storeu_ps(
        out + j, tail,
        Exp16(Affine16<kAffine>(_mm512_maskz_loadu_ps(tail, x + j), s, b)));
  }
}

template <bool kAffine>
void ExpRowOf(const float* x, float scale, float bias, float* out, int64_t n,
              SimdPath path) {
  switch (path) {
    case SimdPath::kAvx512:
      return ExpRowAvx512<kAffine>(x, scale, bias, out, n);
    case SimdPath::kAvx2:
      return ExpRowAvx2<kAffine>(x, scale, bias, out, n);
    case SimdPath::kScalar:
      break;
  }
  for (int64_t j = 0; j < n; ++j) {
    out[j] = ExpOf(kAffine ? x[j] * scale + bias : x[j]);
  }
}

}  // namespace

float ExpOf(float x) { return CpuHasAvx2Fma() ? ExpOfFma(x) : ExpOfBody(x); }

void ExpRow(const float* x, float* out, int64_t n, SimdPath path) {
  ExpRowOf<false>(x, 1.0f, 0.0f, out, n, path);
}

void ExpAffineRow(const float* x, float scale, float bias, float* out,
                  int64_t n, SimdPath path) {
  ExpRowOf<true>(x, scale, bias, out, n, path);
}

}  // namespace nkigraph::ops
