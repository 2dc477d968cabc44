// Row reductions with an ALU operation (ReduceRows): each row folded in
// element order, as ApplyAlu would, several rows advancing together (AVX2
// transposed sums, vectorised max / min) so the latency overlaps.
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
using alu_internal::MaxNoNan;
using alu_internal::MinNoNan;
using alu_internal::WithAluFn;
using alu_internal::WithNoNanFn;

// Reduces each row in order with the scalar ApplyAlu.
void ScalarReduce(Alu op, float init, const float* data, int64_t rows,
                  int64_t cols, int64_t stride, float* out) {
  for (int64_t r = 0; r < rows; ++r) {
    float acc = init;
    for (int64_t j = 0; j < cols; ++j) {
      acc = ApplyAlu(op, acc, data[r * stride + j]);
    }
    out[r] = acc;
  }
}

// Reduces rows r0.. r0 + kLanes - 1 together, each in element order.
template <int kLanes, typename Fn>
void ReduceLanes(Fn fn, float init, const float* data, int64_t cols,
                 int64_t stride, float* out) {
  float acc[kLanes];
  for (int l = 0; l < kLanes; ++l) acc[l] = init;
  for (int64_t j = 0; j < cols; ++j) {
    for (int l = 0; l < kLanes; ++l) acc[l] = fn(acc[l], data[l * stride + j]);
  }
  for (int l = 0; l < kLanes; ++l) out[l] = acc[l];
}

// Sums of eight rows (row l at data + l * stride), each from `init` in
// element order: eight columns of the eight rows are loaded, transposed in
// registers and added column after column, so lane l does exactly row l's
// additions in row l's order, eight rows per instruction. Two groups of
// eight at once when there are sixteen rows, to overlap the additions'
// latency.
__attribute__((target("avx2"))) inline void Transpose8(__m256 r[8]) {
  const __m256 t0 = _mm256_unpacklo_ps(r[0], r[1]);
  const __m256 t1 = _mm256_unpackhi_ps(r[0], r[1]);
  const __m256 t2 = _mm256_unpacklo_ps(r[2], r[3]);
  const __m256 t3 = _mm256_unpackhi_ps(r[2], r[3]);
  const __m256 t4 = _mm256_unpacklo_ps(r[4], r[5]);
  const __m256 t5 = _mm256_unpackhi_ps(r[4], r[5]);
  const __m256 t6 = _mm256_unpacklo_ps(r[6], r[7]);
  const __m256 t7 = _mm256_unpackhi_ps(r[6], r[7]);
  const __m256 u0 = _mm256_shuffle_ps(t0, t2, 0x44);
  const __m256 u1 = _mm256_shuffle_ps(t0, t2, 0xEE);
  const __m256 u2 = _mm256_shuffle_ps(t1, t3, 0x44);
  const __m256 u3 = _mm256_shuffle_ps(t1, t3, 0xEE);
  const __m256 u4 = _mm256_shuffle_ps(t4, t6, 0x44);
  const __m256 u5 = _mm256_shuffle_ps(t4, t6, 0xEE);
  const __m256 u6 = _mm256_shuffle_ps(t5, t7, 0x44);
  const __m256 u7 = _mm256_shuffle_ps(t5, t7, 0xEE);
  r[0] = _mm256_permute2f128_ps(u0, u4, 0x20);
  r[1] = _mm256_permute2f128_ps(u1, u5, 0x20);
  r[2] = _mm256_permute2f128_ps(u2, u6, 0x20);
  r[3] = _mm256_permute2f128_ps(u3, u7, 0x20);
  r[4] = _mm256_permute2f128_ps(u0, u4, 0x31);
  r[5] = _mm256_permute2f128_ps(u1, u5, 0x31);
  r[6] = _mm256_permute2f128_ps(u2, u6, 0x31);
  r[7] = _mm256_permute2f128_ps(u3, u7, 0x31);
}

template <int kGroups>
__attribute__((target("avx2"))) void SumRowsAvx2(float init, const float* data,
                                                 int64_t cols, int64_t stride,
                                                 float* out) {
  __m256 acc[kGroups];
  for (int g = 0; g < kGroups; ++g) acc[g] = _mm256_set1_ps(init);
  int64_t j = 0;
  for (; j + 8 <= cols; j += 8) {
    __m256 r[kGroups][8];
    for (int g = 0; g < kGroups; ++g) {
      for (int l = 0; l < 8; ++l) {
        r[g][l] = _mm256_loadu_ps(data + (g * 8 + l) * stride + j);
      }
      Transpose8(r[g]);
    }
    for (int k = 0; k < 8; ++k) {
      for (int g = 0; g < kGroups; ++g) acc[g] = _mm256_add_ps(acc[g], r[g][k]);
    }
  }
  for (int g = 0; g < kGroups; ++g) {
    float lanes[8];
    _mm256_storeu_ps(lanes, acc[g]);
    for (int l = 0; l < 8; ++l) {
      const float* row = data + (g * 8 + l) * stride;
      for (int64_t k = j; k < cols; ++k) lanes[l] += row[k];
      out[g * 8 + l] = lanes[l];
    }
  }
}

// The extreme (kMax: max, else min) of init and x[0..n) as a value (the
// sign of a zero result aside), and whether a NaN was among them: 32
// running extremes in four registers, so the loads, not the latency of
// one chain, set the pace.
template <bool kMax>
__attribute__((target("avx2"))) float ExtremeAvx2(float init, const float* x,
                                                  int64_t n, bool* nan) {
  // (No lambda: it would not inherit the target.)
#define NKIGRAPH_PICK(a, b) (kMax ? _mm256_max_ps(a, b) : _mm256_min_ps(a, b))
  __m256 acc[4];
  for (__m256& a : acc) a = _mm256_set1_ps(init);
  __m256 unordered = _mm256_setzero_ps();
  int64_t j = 0;
  for (; j + 32 <= n; j += 32) {
    for (int k = 0; k < 4; ++k) {
      const __m256 v = _mm256_loadu_ps(x + j + 8 * k);
      unordered = _mm256_or_ps(unordered, _mm256_cmp_ps(v, v, _CMP_UNORD_Q));
      acc[k] = NKIGRAPH_PICK(acc[k], v);
    }
  }
  for (; j + 8 <= n; j += 8) {
    const __m256 v = _mm256_loadu_ps(x + j);
    unordered = _mm256_or_ps(unordered, _mm256_cmp_ps(v, v, _CMP_UNORD_Q));
    acc[0] = NKIGRAPH_PICK(acc[0], v);
  }
  const __m256 all = NKIGRAPH_PICK(NKIGRAPH_PICK(acc[0], acc[1]),
                                   NKIGRAPH_PICK(acc[2], acc[3]));
#undef NKIGRAPH_PICK
  float lanes[8];
  _mm256_storeu_ps(lanes, all);
  float m = init;
  for (float l : lanes) m = kMax ? MaxNoNan(m, l) : MinNoNan(m, l);
  bool any = _mm256_movemask_ps(unordered) != 0;
  for (; j < n; ++j) {
    any |= x[j] != x[j];
    m = kMax ? MaxNoNan(m, x[j]) : MinNoNan(m, x[j]);
  }
  *nan = any;
  return m;
}

// Max (or min) of init, x[0], ..., x[n - 1], false if one is NaN, as the
// sequence of MaxNoNan(acc, x) gives it: that keeps the first of the
// values equal to the extreme, which only tells +0 from -0. So the extreme
// is found in any order (eight running maxima, vectorised) and a zero
// result looked up again from the start.
template <bool kMax>
bool ExtremeNoNan(float init, const float* x, int64_t n, float* result) {
  auto pick = [](float a, float b) {
    return kMax ? MaxNoNan(a, b) : MinNoNan(a, b);
  };
  bool nan = false;
  float m = init;
  if (CpuHasAvx2()) {
    m = ExtremeAvx2<kMax>(init, x, n, &nan);
  } else {
    float lanes[8];
    for (float& l : lanes) l = init;
    int64_t j = 0;
    for (; j + 8 <= n; j += 8) {
      for (int l = 0; l < 8; ++l) {
        nan |= x[j + l] != x[j + l];
        lanes[l] = pick(lanes[l], x[j + l]);
      }
    }
    for (float l : lanes) m = pick(m, l);
    for (; j < n; ++j) {
      nan |= x[j] != x[j];
      m = pick(m, x[j]);
    }
  }
  if (nan) return false;
  *result = m;
  if (m != 0.0f || init == m) {
    if (m == 0.0f) *result = init;
    return true;
  }
  for (int64_t k = 0; k < n; ++k) {
    if (x[k] == m) {
      *result = x[k];
      return true;
    }
  }
  return true;
}

template <typename Fn>
void ReduceWith(Fn fn, float init, const float* data, int64_t rows,
                int64_t cols, int64_t stride, float* out) {
  constexpr int kLanes = 8;
  int64_t r = 0;
  for (; r + kLanes <= rows; r += kLanes) {
    ReduceLanes<kLanes>(fn, init, data + r * stride, cols, stride, out + r);
  }
  for (; r < rows; ++r) {
    ReduceLanes<1>(fn, init, data + r * stride, cols, stride, out + r);
  }
}

}  // namespace

void ReduceRows(Alu op, float init, const float* data, int64_t rows,
                int64_t cols, int64_t stride, float* out) {
  // Rows holding a NaN are folded by the scalar ApplyAlu (which of two
  // NaNs a sum keeps is the compiled code's choice).
  auto any_nan = [&](int64_t r0, int64_t n) {
    bool nan = init != init;
    for (int64_t r = r0; r < r0 + n && !nan; ++r) {
      nan = RowHasNan(data + r * stride, cols);
    }
    return nan;
  };
  if (op == Alu::kAdd && CpuHasAvx2()) {
    int64_t r = 0;
    while (r + 8 <= rows) {
      const float* group = data + r * stride;
      if (any_nan(r, 8)) {
        ScalarReduce(op, init, group, 8, cols, stride, out + r);
        r += 8;
      } else if (r + 16 <= rows && !any_nan(r + 8, 8)) {
        SumRowsAvx2<2>(init, group, cols, stride, out + r);
        r += 16;
      } else {
        SumRowsAvx2<1>(init, group, cols, stride, out + r);
        r += 8;
      }
    }
    for (; r < rows; ++r) {
      if (any_nan(r, 1)) {
        ScalarReduce(op, init, data + r * stride, 1, cols, stride, out + r);
      } else {
        ReduceLanes<1>([](float a, float b) { return a + b; }, init,
                       data + r * stride, cols, stride, out + r);
      }
    }
    return;
  }
  if ((op == Alu::kMaximum || op == Alu::kMinimum) && init == init) {
    // Row by row; a row holding a NaN takes the library's fmax/fmin.
    for (int64_t r = 0; r < rows; ++r) {
      const float* row = data + r * stride;
      const bool done = op == Alu::kMaximum
                            ? ExtremeNoNan<true>(init, row, cols, &out[r])
                            : ExtremeNoNan<false>(init, row, cols, &out[r]);
      if (!done) {
        float acc = init;
        for (int64_t j = 0; j < cols; ++j) acc = ApplyAlu(op, acc, row[j]);
        out[r] = acc;
      }
    }
    return;
  }
  bool nan = !HasNoNanFn(op) || init != init;
  for (int64_t r = 0; r < rows && !nan; ++r) {
    nan = RowHasNan(data + r * stride, cols);
  }
  if (!nan && WithNoNanFn(op, [&](auto fn) {
        ReduceWith(fn, init, data, rows, cols, stride, out);
      })) {
    return;
  }
  if (any_nan(0, rows))
    return ScalarReduce(op, init, data, rows, cols, stride, out);
  WithAluFn(op, [&](auto fn) {
    ReduceWith(fn, init, data, rows, cols, stride, out);
  });
}

}  // namespace nkigraph::ops
