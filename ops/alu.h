#ifndef NKIGRAPH_OPS_ALU_H_
#define NKIGRAPH_OPS_ALU_H_

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

absl::string_view AluName(Alu op);
absl::StatusOr<Alu> ParseAlu(absl::string_view name);
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
