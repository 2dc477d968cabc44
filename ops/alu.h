#ifndef NKIGRAPH_OPS_ALU_H_
#define NKIGRAPH_OPS_ALU_H_

#include <array>
#include <cstddef>
#include <iterator>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace nkigraph::ops {

// Binary ALU operations of the vector, scalar and gpsimd engines
// (nki.language's add, subtract, ... as used by tensor_tensor,
// tensor_scalar, tensor_reduce and the collectives).
enum class Alu {
  kAdd,
  kSubtract,
  kMultiply,
  kDivide,
  kMaximum,
  kMinimum,
  kEqual,
  kNotEqual,
  kGreater,
  kGreaterEqual,
  kLess,
  kLessEqual,
  kPower,
  kMod,
  kAbsMax,
  kBypass,  // returns the first operand
  kLogicalAnd,
  kLogicalOr,
  kBitwiseAnd,
  kBitwiseOr,
  kBitwiseXor,
};

// Every Alu with its name (the names attribute schemas allow).
struct AluInfo {
  Alu value;
  absl::string_view name;
};
inline constexpr AluInfo kAlus[] = {
    {Alu::kAdd, "add"},
    {Alu::kSubtract, "subtract"},
    {Alu::kMultiply, "multiply"},
    {Alu::kDivide, "divide"},
    {Alu::kMaximum, "maximum"},
    {Alu::kMinimum, "minimum"},
    {Alu::kEqual, "equal"},
    {Alu::kNotEqual, "not_equal"},
    {Alu::kGreater, "greater"},
    {Alu::kGreaterEqual, "greater_equal"},
    {Alu::kLess, "less"},
    {Alu::kLessEqual, "less_equal"},
    {Alu::kPower, "power"},
    {Alu::kMod, "mod"},
    {Alu::kAbsMax, "abs_max"},
    {Alu::kBypass, "bypass"},
    {Alu::kLogicalAnd, "logical_and"},
    {Alu::kLogicalOr, "logical_or"},
    {Alu::kBitwiseAnd, "bitwise_and"},
    {Alu::kBitwiseOr, "bitwise_or"},
    {Alu::kBitwiseXor, "bitwise_xor"},
};

constexpr absl::string_view AluName(Alu value) {
  for (const AluInfo& info : kAlus) {
    if (info.value == value) return info.name;
  }
  return "invalid_alu";
}

// The names alone, in table order.
inline constexpr auto kAluNames = [] {
  std::array<absl::string_view, std::size(kAlus)> names{};
  for (size_t i = 0; i < names.size(); ++i) names[i] = kAlus[i].name;
  return names;
}();
absl::StatusOr<Alu> ParseAlu(absl::string_view name);
// Whether `name` names an operation (a hash lookup).
bool IsAluName(absl::string_view name);
bool IsBitwise(Alu op);
// Identity element for reductions (add: 0, max: -inf, ...); error for ops
// that do not reduce.
absl::StatusOr<float> ReduceIdentity(Alu op);

// Float semantics (comparisons give 1.0 / 0.0; bitwise ops act on the
// values converted to int32).
float ApplyAlu(Alu op, float a, float b);
// Exact integer semantics, for all-integer operands.
int64_t ApplyAluInt(Alu op, int64_t a, int64_t b);

// The same on whole rows, bit for bit what ApplyAlu gives element by
// element, in loops the compiler vectorises (the operation chosen once per
// row, not per element). `out` may be `a` or `b`.
//   out[j] = ApplyAlu(op, a[j], b[j])
void ApplyAluRow(Alu op, const float* a, const float* b, float* out, int64_t n);
//   out[j] = ApplyAlu(op, a[j], s), or ApplyAlu(op, s, a[j]) if `reverse`
void ApplyAluRowScalar(Alu op, const float* a, float s, bool reverse,
                       float* out, int64_t n);
// Reduces `rows` rows of `cols` elements (row r at data + r * stride) in
// element order: out[r] = ApplyAlu(op, ... ApplyAlu(op, init, x[0]) ...,
// x[cols - 1]). Several rows advance together, so the reductions' latency
// overlaps without changing any row's order of operations.
void ReduceRows(Alu op, float init, const float* data, int64_t rows,
                int64_t cols, int64_t stride, float* out);

}  // namespace nkigraph::ops

#endif  // NKIGRAPH_OPS_ALU_H_
