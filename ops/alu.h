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

}  // namespace nkigraph::ops

#endif  // NKIGRAPH_OPS_ALU_H_
