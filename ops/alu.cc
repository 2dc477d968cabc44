// The ALU operations by name (ParseAlu), their reduction identities, and
// their semantics on one pair of values (ApplyAlu, ApplyAluInt): the
// reference the row loops (alu_rows.cc, alu_reduce.cc) match bit for bit.
#include "ops/alu.h"

#include <cmath>
#include <cstdint>
#include <iterator>
#include <limits>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "ops/alu_elements.h"

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
  float result = 0.0f;  // for a value outside the enum
  alu_internal::VisitAlu(op, [&](auto k) {
    result = alu_internal::AluElement<decltype(k)::value>(a, b);
  });
  return result;
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
