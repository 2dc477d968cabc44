// Element-wise ALU operations on whole rows (ApplyAluRow,
// ApplyAluRowScalar) and the NaN scan their paths are chosen by
// (RowHasNan): what ApplyAlu gives element by element, vectorised.
#include <immintrin.h>

#include <cmath>
#include <cstdint>

#include "ops/alu.h"
#include "ops/alu_elements.h"
#include "ops/cpu_features.h"
#include "ops/row_ops.h"

namespace nkigraph::ops {
namespace {

using alu_internal::HasNoNanFn;
using alu_internal::NanPayloadMatters;
using alu_internal::WithAluFn;
using alu_internal::WithNoNanFn;

// RowHasNan eight lanes at a time, four loads in flight (the compiler
// keeps a scalar loop with a flag scalar).
__attribute__((target("avx2"))) bool AnyNanAvx2(const float* x, int64_t n) {
  __m256 acc0 = _mm256_setzero_ps();
  __m256 acc1 = _mm256_setzero_ps();
  int64_t j = 0;
  for (; j + 32 <= n; j += 32) {
    const __m256 a = _mm256_loadu_ps(x + j);
    const __m256 b = _mm256_loadu_ps(x + j + 8);
    const __m256 c = _mm256_loadu_ps(x + j + 16);
    const __m256 d = _mm256_loadu_ps(x + j + 24);
    acc0 = _mm256_or_ps(acc0, _mm256_cmp_ps(a, b, _CMP_UNORD_Q));
    acc1 = _mm256_or_ps(acc1, _mm256_cmp_ps(c, d, _CMP_UNORD_Q));
  }
  for (; j + 8 <= n; j += 8) {
    const __m256 a = _mm256_loadu_ps(x + j);
    acc0 = _mm256_or_ps(acc0, _mm256_cmp_ps(a, a, _CMP_UNORD_Q));
  }
  bool nan = _mm256_movemask_ps(_mm256_or_ps(acc0, acc1)) != 0;
  for (; j < n; ++j) nan |= x[j] != x[j];
  return nan;
}

template <typename Fn>
void Map(const float* a, const float* b, float* out, int64_t n, Fn fn) {
  for (int64_t j = 0; j < n; ++j) out[j] = fn(a[j], b[j]);
}

template <typename Fn>
void MapScalar(const float* a, float s, bool reverse, float* out, int64_t n,
               Fn fn) {
  if (reverse) {
    for (int64_t j = 0; j < n; ++j) out[j] = fn(s, a[j]);
  } else {
    for (int64_t j = 0; j < n; ++j) out[j] = fn(a[j], s);
  }
}

void ScalarRow(Alu op, const float* a, const float* b, float* out, int64_t n) {
  for (int64_t j = 0; j < n; ++j) out[j] = ApplyAlu(op, a[j], b[j]);
}

}  // namespace

bool RowHasNan(const float* x, int64_t n) {
  // Rows shorter than a vector (a tile of a few elements) are scanned
  // here, without the dispatch to the AVX2 loop.
  if (n >= 8 && CpuHasAvx2()) return AnyNanAvx2(x, n);
  bool nan = false;
  for (int64_t j = 0; j < n; ++j) nan |= x[j] != x[j];
  return nan;
}

void ApplyAluRow(Alu op, const float* a, const float* b, float* out,
                 int64_t n) {
  if (NanPayloadMatters(op) && RowHasNan(a, n) && RowHasNan(b, n)) {
    return ScalarRow(op, a, b, out, n);
  }
  if (HasNoNanFn(op) && !RowHasNan(a, n) && !RowHasNan(b, n) &&
      WithNoNanFn(op, [&](auto fn) { Map(a, b, out, n, fn); })) {
    return;
  }
  WithAluFn(op, [&](auto fn) { Map(a, b, out, n, fn); });
}

void ApplyAluRowScalar(Alu op, const float* a, float s, bool reverse,
                       float* out, int64_t n) {
  if (NanPayloadMatters(op) && s != s && RowHasNan(a, n)) {
    for (int64_t j = 0; j < n; ++j) {
      out[j] = reverse ? ApplyAlu(op, s, a[j]) : ApplyAlu(op, a[j], s);
    }
    return;
  }
  if (HasNoNanFn(op) && s == s && !RowHasNan(a, n) &&
      WithNoNanFn(op, [&](auto fn) { MapScalar(a, s, reverse, out, n, fn); })) {
    return;
  }
  WithAluFn(op, [&](auto fn) { MapScalar(a, s, reverse, out, n, fn); });
}

}  // namespace nkigraph::ops
