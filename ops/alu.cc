#include "ops/alu.h"

#include <cmath>
#include <cstdint>
#include <iterator>
#include <limits>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"

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

float ApplyAlu(Alu op, float a, float b) {
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

// Whether any of x[0..n) is a NaN: rows without one take the max/min fast
// path below.
bool AnyNan(const float* x, int64_t n) {
  bool nan = false;
  for (int64_t j = 0; j < n; ++j) nan |= x[j] != x[j];
  return nan;
}

// std::fmax / std::fmin on operands that are not NaN. glibc's x86-64
// fmaxf is `maxss`, which returns the second operand when the two compare
// equal (so fmax(+0, -0) is -0); these are the same selects, which the
// compiler vectorises. NaN operands take the library call.
inline float MaxNoNan(float a, float b) { return a > b ? a : b; }
inline float MinNoNan(float a, float b) { return a < b ? a : b; }

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

// Max (or min) of init, x[0], ..., x[n - 1], none of them NaN, as the
// sequence of MaxNoNan(acc, x) gives it: that keeps the last of the values
// equal to the extreme, which only tells +0 from -0. So the extreme is
// found in any order (eight running maxima, vectorised) and a zero result
// looked up again from the end.
template <bool kMax>
float ExtremeNoNan(float init, const float* x, int64_t n) {
  auto pick = [](float a, float b) {
    return kMax ? MaxNoNan(a, b) : MinNoNan(a, b);
  };
  float lanes[8];
  for (float& l : lanes) l = init;
  int64_t j = 0;
  for (; j + 8 <= n; j += 8) {
    for (int l = 0; l < 8; ++l) lanes[l] = pick(lanes[l], x[j + l]);
  }
  float m = init;
  for (float l : lanes) m = pick(m, l);
  for (; j < n; ++j) m = pick(m, x[j]);
  if (m != 0.0f) return m;
  for (int64_t k = n - 1; k >= 0; --k) {
    if (x[k] == m) return x[k];
  }
  return init;
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

void ApplyAluRow(Alu op, const float* a, const float* b, float* out,
                 int64_t n) {
  if (HasNoNanFn(op) && !AnyNan(a, n) && !AnyNan(b, n) &&
      WithNoNanFn(op, [&](auto fn) { Map(a, b, out, n, fn); })) {
    return;
  }
  WithAluFn(op, [&](auto fn) { Map(a, b, out, n, fn); });
}

void ApplyAluRowScalar(Alu op, const float* a, float s, bool reverse,
                       float* out, int64_t n) {
  if (HasNoNanFn(op) && s == s && !AnyNan(a, n) &&
      WithNoNanFn(op, [&](auto fn) { MapScalar(a, s, reverse, out, n, fn); })) {
    return;
  }
  WithAluFn(op, [&](auto fn) { MapScalar(a, s, reverse, out, n, fn); });
}

void ReduceRows(Alu op, float init, const float* data, int64_t rows,
                int64_t cols, int64_t stride, float* out) {
  bool nan = !HasNoNanFn(op) || init != init;
  for (int64_t r = 0; r < rows && !nan; ++r) {
    nan = AnyNan(data + r * stride, cols);
  }
  if (!nan && (op == Alu::kMaximum || op == Alu::kMinimum)) {
    for (int64_t r = 0; r < rows; ++r) {
      out[r] = op == Alu::kMaximum
                   ? ExtremeNoNan<true>(init, data + r * stride, cols)
                   : ExtremeNoNan<false>(init, data + r * stride, cols);
    }
    return;
  }
  if (!nan && WithNoNanFn(op, [&](auto fn) {
        ReduceWith(fn, init, data, rows, cols, stride, out);
      })) {
    return;
  }
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
