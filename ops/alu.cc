#include "ops/alu.h"

#include <immintrin.h>

#include <cmath>
#include <cstdint>
#include <iterator>
#include <limits>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "ops/cpu_features.h"
#include "ops/row_ops.h"

namespace nkigraph::ops {

namespace {

const absl::flat_hash_map<absl::string_view, Alu>& ByName() {
  static const auto* by_name = [] {
    auto* map = new absl::flat_hash_map<absl::string_view, Alu>;
    for (const AluInfo& info : kAlus) map->emplace(info.name, info.value);
    return map;
  }();
  return *by_name;
}

}  // namespace

absl::StatusOr<Alu> ParseAlu(absl::string_view name) {
  // Read for every executed instruction: a hash lookup, not a scan of the
  // table.
  auto it = ByName().find(name);
  if (it != ByName().end()) return it->second;
  return absl::InvalidArgumentError(
      absl::StrCat("unknown ALU operation '", name, "'"));
}

bool IsAluName(absl::string_view name) { return ByName().contains(name); }

bool IsBitwise(Alu op) {
  return op == Alu::kBitwiseAnd || op == Alu::kBitwiseOr ||
         op == Alu::kBitwiseXor;
}

absl::StatusOr<float> ReduceIdentity(Alu op) {
  switch (op) {
    case Alu::kAdd:
    case Alu::kSubtract:
    case Alu::kBitwiseOr:
    case Alu::kBitwiseXor:
    case Alu::kLogicalOr:
    case Alu::kAbsMax:
      return 0.0f;
    case Alu::kMultiply:
    case Alu::kLogicalAnd:
      return 1.0f;
    case Alu::kMaximum:
      return -std::numeric_limits<float>::infinity();
    case Alu::kMinimum:
      return std::numeric_limits<float>::infinity();
    case Alu::kBitwiseAnd:
      return -1.0f;
    default:
      return absl::InvalidArgumentError(
          absl::StrCat("'", AluName(op), "' cannot reduce"));
  }
}

// Out of line on purpose: the row functions' NaN fallbacks call this very
// code, whose choice between two NaN operands is the reference.
[[gnu::noinline]] float ApplyAlu(Alu op, float a, float b) {
  switch (op) {
    case Alu::kAdd:
      return a + b;
    case Alu::kSubtract:
      return a - b;
    case Alu::kMultiply:
      return a * b;
    case Alu::kDivide:
      return a / b;
    case Alu::kMaximum:
      return std::fmax(a, b);
    case Alu::kMinimum:
      return std::fmin(a, b);
    case Alu::kEqual:
      return a == b ? 1.0f : 0.0f;
    case Alu::kNotEqual:
      return a != b ? 1.0f : 0.0f;
    case Alu::kGreater:
      return a > b ? 1.0f : 0.0f;
    case Alu::kGreaterEqual:
      return a >= b ? 1.0f : 0.0f;
    case Alu::kLess:
      return a < b ? 1.0f : 0.0f;
    case Alu::kLessEqual:
      return a <= b ? 1.0f : 0.0f;
    case Alu::kPower:
      return std::pow(a, b);
    case Alu::kMod:
      return std::fmod(a, b);
    case Alu::kAbsMax:
      return std::fmax(std::fabs(a), std::fabs(b));
    case Alu::kBypass:
      return a;
    case Alu::kLogicalAnd:
      return (a != 0.0f && b != 0.0f) ? 1.0f : 0.0f;
    case Alu::kLogicalOr:
      return (a != 0.0f || b != 0.0f) ? 1.0f : 0.0f;
    case Alu::kBitwiseAnd:
    case Alu::kBitwiseOr:
    case Alu::kBitwiseXor:
      return static_cast<float>(
          ApplyAluInt(op, static_cast<int64_t>(a), static_cast<int64_t>(b)));
  }
  return 0.0f;
}

namespace {

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

// Rows without a NaN take the fast paths below.
bool AnyNan(const float* x, int64_t n) { return RowHasNan(x, n); }

// std::fmax / std::fmin on operands that are not NaN: glibc's fmaxf
// returns its first operand when the two compare equal (so fmax(+0, -0)
// is +0, fmax(-0, +0) is -0), and these are the same selects, which the
// compiler vectorises. NaN operands take the library call.
inline float MaxNoNan(float a, float b) { return a >= b ? a : b; }
inline float MinNoNan(float a, float b) { return a <= b ? a : b; }

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

// Every op but the ones with a fast path: the scalar semantics per
// element, the switch still taken once per row.
template <Alu kOp>
float Scalar(float a, float b) {
  return ApplyAlu(kOp, a, b);
}

// Calls body(fn) with the element function of `op`: a lambda the
// compiler can inline and vectorise. Max, min and abs_max are left to the
// callers, which first look for NaNs.
template <typename Body>
void WithAluFn(Alu op, Body&& body) {
  switch (op) {
    case Alu::kAdd:
      return body([](float a, float b) { return a + b; });
    case Alu::kSubtract:
      return body([](float a, float b) { return a - b; });
    case Alu::kMultiply:
      return body([](float a, float b) { return a * b; });
    case Alu::kDivide:
      return body([](float a, float b) { return a / b; });
    case Alu::kEqual:
      return body([](float a, float b) { return a == b ? 1.0f : 0.0f; });
    case Alu::kNotEqual:
      return body([](float a, float b) { return a != b ? 1.0f : 0.0f; });
    case Alu::kGreater:
      return body([](float a, float b) { return a > b ? 1.0f : 0.0f; });
    case Alu::kGreaterEqual:
      return body([](float a, float b) { return a >= b ? 1.0f : 0.0f; });
    case Alu::kLess:
      return body([](float a, float b) { return a < b ? 1.0f : 0.0f; });
    case Alu::kLessEqual:
      return body([](float a, float b) { return a <= b ? 1.0f : 0.0f; });
    case Alu::kBypass:
      return body([](float a, float) { return a; });
    case Alu::kLogicalAnd:
      return body([](float a, float b) {
        return (a != 0.0f && b != 0.0f) ? 1.0f : 0.0f;
      });
    case Alu::kLogicalOr:
      return body([](float a, float b) {
        return (a != 0.0f || b != 0.0f) ? 1.0f : 0.0f;
      });
    case Alu::kMaximum:
      return body(Scalar<Alu::kMaximum>);
    case Alu::kMinimum:
      return body(Scalar<Alu::kMinimum>);
    case Alu::kAbsMax:
      return body(Scalar<Alu::kAbsMax>);
    case Alu::kPower:
      return body(Scalar<Alu::kPower>);
    case Alu::kMod:
      return body(Scalar<Alu::kMod>);
    case Alu::kBitwiseAnd:
      return body(Scalar<Alu::kBitwiseAnd>);
    case Alu::kBitwiseOr:
      return body(Scalar<Alu::kBitwiseOr>);
    case Alu::kBitwiseXor:
      return body(Scalar<Alu::kBitwiseXor>);
  }
}

// Operations whose result, when both operands are NaN, is one of them:
// which one the compiled scalar code returns is its own choice, so rows
// where two NaNs can meet are computed by it (ApplyAlu) element by element.
bool NanPayloadMatters(Alu op) {
  return op == Alu::kAdd || op == Alu::kSubtract || op == Alu::kMultiply ||
         op == Alu::kDivide;
}

void ScalarRow(Alu op, const float* a, const float* b, float* out, int64_t n) {
  for (int64_t j = 0; j < n; ++j) out[j] = ApplyAlu(op, a[j], b[j]);
}

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

bool HasNoNanFn(Alu op) {
  return op == Alu::kMaximum || op == Alu::kMinimum || op == Alu::kAbsMax;
}

// Calls body(fn) with the NaN-free element function of max, min and
// abs_max; false for other ops.
template <typename Body>
bool WithNoNanFn(Alu op, Body&& body) {
  switch (op) {
    case Alu::kMaximum:
      body(MaxNoNan);
      return true;
    case Alu::kMinimum:
      body(MinNoNan);
      return true;
    case Alu::kAbsMax:
      body([](float a, float b) {
        return MaxNoNan(std::fabs(a), std::fabs(b));
      });
      return true;
    default:
      return false;
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
  if (NanPayloadMatters(op) && AnyNan(a, n) && AnyNan(b, n)) {
    return ScalarRow(op, a, b, out, n);
  }
  if (HasNoNanFn(op) && !AnyNan(a, n) && !AnyNan(b, n) &&
      WithNoNanFn(op, [&](auto fn) { Map(a, b, out, n, fn); })) {
    return;
  }
  WithAluFn(op, [&](auto fn) { Map(a, b, out, n, fn); });
}

void ApplyAluRowScalar(Alu op, const float* a, float s, bool reverse,
                       float* out, int64_t n) {
  if (NanPayloadMatters(op) && s != s && AnyNan(a, n)) {
    for (int64_t j = 0; j < n; ++j) {
      out[j] = reverse ? ApplyAlu(op, s, a[j]) : ApplyAlu(op, a[j], s);
    }
    return;
  }
  if (HasNoNanFn(op) && s == s && !AnyNan(a, n) &&
      WithNoNanFn(op, [&](auto fn) { MapScalar(a, s, reverse, out, n, fn); })) {
    return;
  }
  WithAluFn(op, [&](auto fn) { MapScalar(a, s, reverse, out, n, fn); });
}

void ReduceRows(Alu op, float init, const float* data, int64_t rows,
                int64_t cols, int64_t stride, float* out) {
  // Rows holding a NaN are folded by the scalar ApplyAlu (which of two
  // NaNs a sum keeps is the compiled code's choice).
  auto any_nan = [&](int64_t r0, int64_t n) {
    bool nan = init != init;
    for (int64_t r = r0; r < r0 + n && !nan; ++r) {
      nan = AnyNan(data + r * stride, cols);
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
    nan = AnyNan(data + r * stride, cols);
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

int64_t ApplyAluInt(Alu op, int64_t a, int64_t b) {
  switch (op) {
    case Alu::kAdd:
      return a + b;
    case Alu::kSubtract:
      return a - b;
    case Alu::kMultiply:
      return a * b;
    case Alu::kDivide:
      return b == 0 ? 0 : a / b;
    case Alu::kMaximum:
      return a > b ? a : b;
    case Alu::kMinimum:
      return a < b ? a : b;
    case Alu::kEqual:
      return a == b;
    case Alu::kNotEqual:
      return a != b;
    case Alu::kGreater:
      return a > b;
    case Alu::kGreaterEqual:
      return a >= b;
    case Alu::kLess:
      return a < b;
    case Alu::kLessEqual:
      return a <= b;
    case Alu::kPower: {
      int64_t result = 1;
      for (int64_t i = 0; i < b && i < 64; ++i) result *= a;
      return b < 0 ? 0 : result;
    }
    case Alu::kMod:
      return b == 0 ? 0 : a % b;
    case Alu::kAbsMax:
      return std::max(a < 0 ? -a : a, b < 0 ? -b : b);
    case Alu::kBypass:
      return a;
    case Alu::kLogicalAnd:
      return a != 0 && b != 0;
    case Alu::kLogicalOr:
      return a != 0 || b != 0;
    case Alu::kBitwiseAnd:
      return static_cast<int32_t>(a) & static_cast<int32_t>(b);
    case Alu::kBitwiseOr:
      return static_cast<int32_t>(a) | static_cast<int32_t>(b);
    case Alu::kBitwiseXor:
      return static_cast<int32_t>(a) ^ static_cast<int32_t>(b);
  }
  return 0;
}

}  // namespace nkigraph::ops
