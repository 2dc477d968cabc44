#ifndef NKIGRAPH_OPS_ALU_ELEMENTS_H_
#define NKIGRAPH_OPS_ALU_ELEMENTS_H_

// The element function of each ALU operation, defined once: what ApplyAlu
// computes (alu.cc) and what the row loops (alu_rows.cc, alu_reduce.cc)
// inline and vectorise, with the NaN facts by which those loops choose
// their paths. Internal to the ALU's files.

#include <cmath>
#include <cstdint>
#include <type_traits>

#include "ops/alu.h"
#include "ops/row_ops.h"

namespace nkigraph::ops::alu_internal {

template <Alu kOp>
using AluConstant = std::integral_constant<Alu, kOp>;

// Calls fn(AluConstant<op>{}); nothing for a value outside the enum.
template <typename Fn>
void VisitAlu(Alu op, Fn&& fn) {
  switch (op) {
    case Alu::kAdd:
      return fn(AluConstant<Alu::kAdd>{});
    case Alu::kSubtract:
      return fn(AluConstant<Alu::kSubtract>{});
    case Alu::kMultiply:
      return fn(AluConstant<Alu::kMultiply>{});
    case Alu::kDivide:
      return fn(AluConstant<Alu::kDivide>{});
    case Alu::kMaximum:
      return fn(AluConstant<Alu::kMaximum>{});
    case Alu::kMinimum:
      return fn(AluConstant<Alu::kMinimum>{});
    case Alu::kEqual:
      return fn(AluConstant<Alu::kEqual>{});
    case Alu::kNotEqual:
      return fn(AluConstant<Alu::kNotEqual>{});
    case Alu::kGreater:
      return fn(AluConstant<Alu::kGreater>{});
    case Alu::kGreaterEqual:
      return fn(AluConstant<Alu::kGreaterEqual>{});
    case Alu::kLess:
      return fn(AluConstant<Alu::kLess>{});
    case Alu::kLessEqual:
      return fn(AluConstant<Alu::kLessEqual>{});
    case Alu::kPower:
      return fn(AluConstant<Alu::kPower>{});
    case Alu::kMod:
      return fn(AluConstant<Alu::kMod>{});
    case Alu::kAbsMax:
      return fn(AluConstant<Alu::kAbsMax>{});
    case Alu::kBypass:
      return fn(AluConstant<Alu::kBypass>{});
    case Alu::kLogicalAnd:
      return fn(AluConstant<Alu::kLogicalAnd>{});
    case Alu::kLogicalOr:
      return fn(AluConstant<Alu::kLogicalOr>{});
    case Alu::kBitwiseAnd:
      return fn(AluConstant<Alu::kBitwiseAnd>{});
    case Alu::kBitwiseOr:
      return fn(AluConstant<Alu::kBitwiseOr>{});
    case Alu::kBitwiseXor:
      return fn(AluConstant<Alu::kBitwiseXor>{});
  }
}

// The float semantics of `kOp` on one pair (comparisons give 1.0 / 0.0;
// bitwise ops act on the values converted to int32).
template <Alu kOp>
inline float AluElement(float a, [[maybe_unused]] float b) {
  if constexpr (kOp == Alu::kAdd) {
    return a + b;
  } else if constexpr (kOp == Alu::kSubtract) {
    return a - b;
  } else if constexpr (kOp == Alu::kMultiply) {
    return a * b;
  } else if constexpr (kOp == Alu::kDivide) {
    return a / b;
  } else if constexpr (kOp == Alu::kMaximum) {
    return std::fmax(a, b);
  } else if constexpr (kOp == Alu::kMinimum) {
    return std::fmin(a, b);
  } else if constexpr (kOp == Alu::kEqual) {
    return a == b ? 1.0f : 0.0f;
  } else if constexpr (kOp == Alu::kNotEqual) {
    return a != b ? 1.0f : 0.0f;
  } else if constexpr (kOp == Alu::kGreater) {
    return a > b ? 1.0f : 0.0f;
  } else if constexpr (kOp == Alu::kGreaterEqual) {
    return a >= b ? 1.0f : 0.0f;
  } else if constexpr (kOp == Alu::kLess) {
    return a < b ? 1.0f : 0.0f;
  } else if constexpr (kOp == Alu::kLessEqual) {
    return a <= b ? 1.0f : 0.0f;
  } else if constexpr (kOp == Alu::kPower) {
    return std::pow(a, b);
  } else if constexpr (kOp == Alu::kMod) {
    return std::fmod(a, b);
  } else if constexpr (kOp == Alu::kAbsMax) {
    return std::fmax(std::fabs(a), std::fabs(b));
  } else if constexpr (kOp == Alu::kBypass) {
    return a;
  } else if constexpr (kOp == Alu::kLogicalAnd) {
    return (a != 0.0f && b != 0.0f) ? 1.0f : 0.0f;
  } else if constexpr (kOp == Alu::kLogicalOr) {
    return (a != 0.0f || b != 0.0f) ? 1.0f : 0.0f;
  } else {
    static_assert(kOp == Alu::kBitwiseAnd || kOp == Alu::kBitwiseOr ||
                  kOp == Alu::kBitwiseXor);
    return static_cast<float>(
        ApplyAluInt(kOp, static_cast<int64_t>(a), static_cast<int64_t>(b)));
  }
}

// std::fmax / std::fmin on operands that are not NaN: glibc's fmaxf
// returns its first operand when the two compare equal (so fmax(+0, -0)
// is +0, fmax(-0, +0) is -0), and these are the same selects, which the
// compiler vectorises. NaN operands take the library call.
inline float MaxNoNan(float a, float b) { return a >= b ? a : b; }
inline float MinNoNan(float a, float b) { return a <= b ? a : b; }

// The ops whose element function the row loops inline. Max, min and
// abs_max are left to the callers, which first look for NaNs; those and
// power, mod and the bitwise ops go through ApplyAlu, the switch still
// taken once per row.
constexpr bool InlinedInRows(Alu op) {
  return op != Alu::kMaximum && op != Alu::kMinimum && op != Alu::kAbsMax &&
         op != Alu::kPower && op != Alu::kMod && op != Alu::kBitwiseAnd &&
         op != Alu::kBitwiseOr && op != Alu::kBitwiseXor;
}

template <Alu kOp>
float Scalar(float a, float b) {
  return ApplyAlu(kOp, a, b);
}

// Calls body(fn) with the element function of `op`: a lambda the
// compiler can inline and vectorise where InlinedInRows, else Scalar.
template <typename Body>
void WithAluFn(Alu op, Body&& body) {
  VisitAlu(op, [&](auto k) {
    constexpr Alu kOp = decltype(k)::value;
    if constexpr (InlinedInRows(kOp)) {
      body([](float a, float b) { return AluElement<kOp>(a, b); });
    } else {
      body(Scalar<kOp>);
    }
  });
}

// Operations whose result, when both operands are NaN, is one of them:
// which one the compiled scalar code returns is its own choice, so rows
// where two NaNs can meet are computed by it (ApplyAlu) element by element.
inline bool NanPayloadMatters(Alu op) {
  return op == Alu::kAdd || op == Alu::kSubtract || op == Alu::kMultiply ||
         op == Alu::kDivide;
}

inline bool HasNoNanFn(Alu op) {
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

}  // namespace nkigraph::ops::alu_internal

#endif  // NKIGRAPH_OPS_ALU_ELEMENTS_H_
