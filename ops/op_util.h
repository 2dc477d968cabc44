#ifndef NKIGRAPH_OPS_OP_UTIL_H_
#define NKIGRAPH_OPS_OP_UTIL_H_

// Checks and helpers shared by several op definitions.

#include <cstdint>
#include <initializer_list>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "ops/alu.h"
#include "ops/exec_context.h"
#include "ops/instr_view.h"

namespace nkigraph::ops {

// On-chip operands may start only at partitions the engines can address:
// more than 64 partitions start at 0; 33..64 at 0 or 64; up to 32 at 0,
// 32, 64 or 96.
absl::Status CheckPartitionStart(const InstrView& view, int operand);

// Same partition count and same elements per partition.
absl::Status CheckSameTile(const InstrView& view, int a, int b);
// Same element count.
absl::Status CheckSameElements(const InstrView& view, int a, int b);
// `operand` is a [P, 1] column of P = `partitions` (a per-partition scalar).
absl::Status CheckColumn(const InstrView& view, int operand,
                         int64_t partitions);
// The operand's partition count is at most the profile's (128).
absl::Status CheckPartitions(const InstrView& view, int operand);
// An element-wise op of two tiles: `data` within the partitions, `dst` and
// `other` shaped like it, `data` and `other` not both in PSUM.
absl::Status CheckTwoTiles(const InstrView& view, int dst, int data, int other);
// The ALU operations the attributes `specs` name are arithmetic.
absl::Status CheckArithmetic(const InstrView& view,
                             std::initializer_list<const AttrSpec*> specs);

// A required string attribute naming an ALU operation: any, or one of
// `allowed`.
constexpr AttrSpec AluSpec(absl::string_view name, absl::string_view doc) {
  return StringSpec(name, "", doc).Required().OneOf(kAluNames, &IsAluName);
}
constexpr AttrSpec AluSpec(absl::string_view name, absl::string_view doc,
                           absl::Span<const absl::string_view> allowed) {
  return StringSpec(name, "", doc).Required().OneOf(allowed);
}

// Picture labels (OpDef::label): a string attribute's value; "+=" when an
// accumulate flag is set.
inline std::string StringLabel(const proto::Instruction& instr,
                               const AttrSpec& spec) {
  return std::string(StringValue(instr, spec));
}
inline std::string AccumulateLabel(const proto::Instruction& instr,
                                   const AttrSpec& accumulate) {
  return IntValue(instr, accumulate) != 0 ? "+=" : "";
}

// The ALU op a string attribute names; its spec allows only kAluNames (or
// a subset), so a checked instruction always names one.
// Inline where the instruction was decoded (the choice is known), as every
// element-wise instruction asks it.
Alu AluOfNamed(const InstrView& view, const AttrSpec& spec);
inline Alu AluOf(const InstrView& view, const AttrSpec& spec) {
  if (const int k = view.Choice(spec);
      k >= 0 && spec.one_of.data() == kAluNames.data()) {
    return kAlus[k].value;
  }
  return AluOfNamed(view, spec);
}

// Copies operand `src` to operand `dst` of the same element count:
// bit-exact when the dtypes match, through fp32 otherwise.
absl::Status CopyOperand(ExecContext& ctx, int dst, int src);

// Operand `i` as float32 rows: where it lies in device memory when it is
// float32 laid out as rows (ExecContext::ReadRows), else read converted
// (ReadFloat) as its partitions' rows. Valid until the instruction ends.
struct FloatRows {
  const float* data = nullptr;
  int64_t rows = 0;
  int64_t cols = 0;
  int64_t stride = 0;  // floats between row starts
  // A copy the calling thread made (the operand converted to float, or
  // gathered), not the operand in place.
  bool copied = false;
  const float* row(int64_t r) const { return data + r * stride; }
};
absl::StatusOr<FloatRows> ReadFloatRows(ExecContext& ctx, int i);

// Where an element-wise op may write its float32 result: in place in
// operand `dst` (ExecContext::WriteFloatInPlace) when that is safe
// against the `sources` rows it reads in place (each either apart from
// dst's tensor or laid out exactly as dst), else into `scratch`, sized,
// for WriteFloat after. `in_place` says which.
struct FloatOut {
  ExecContext::MutableRows rows;
  bool in_place = false;
};
FloatOut FloatDestination(
    ExecContext& ctx, int dst,
    std::initializer_list<std::pair<int, FloatRows>> sources,
    std::vector<float>& scratch);
// Writes the result FloatDestination put in scratch (nothing to do in
// place).
absl::Status FinishFloat(ExecContext& ctx, int dst, const FloatOut& out,
                         const std::vector<float>& scratch);

// Whether two operands' tensors may share bytes (the same memory and
// overlapping addresses): a copy that reads its source in place must not
// write over it as it goes.
bool MayOverlap(const OperandInfo& a, const OperandInfo& b);
// Whether an element-wise op may write operand `dst` in place while it
// reads `src` in place: apart from it, or the same elements in the same
// order.
bool InPlaceSafe(const OperandInfo& dst, const OperandInfo& src);

// A byte buffer of `size` bytes for raw-element ops, carved from the
// context's integer scratch slot `slot` so hot paths do not allocate. Valid
// until that slot is used again.
absl::Span<uint8_t> ScratchBytes(ExecContext& ctx, int slot, int64_t size);

// The affine value of iota and affine_select, from the attributes "pattern"
// (flattened [step, num] pairs, 1 to 4 of them, outermost first), "offset"
// and "channel_multiplier": for partition p (0-based within the operand)
// and pattern index (i_0, ...), offset + p * channel_multiplier +
// sum(step_d * i_d). Both ops declare these three specs.
inline constexpr AttrSpec kAffinePatternSpec =
    IntsSpec("pattern", "[step, num] pairs over the free dims, outermost first")
        .Required();
inline constexpr AttrSpec kAffineOffsetSpec =
    IntSpec("offset", 0, "the value at partition 0, index 0")
        .WrittenAtDefault();
inline constexpr AttrSpec kChannelMultiplierSpec =
    IntSpec("channel_multiplier", 0, "added per partition").WrittenAtDefault();
// The ring channel of collective_permute_implicit and of the rank id that
// follows its steps (the hardware has 4).
inline constexpr AttrSpec kRingChannelSpec =
    IntSpec("channel", 0, "the ring channel").Range(0, 3).WrittenAtDefault();

// Checks the pattern covers operand `operand`'s free size and that no value
// overflows int64.
absl::Status CheckAffinePattern(const InstrView& view, int operand);
// The affine values of every element of `operand` in element order
// ([p][f]); requires CheckAffinePattern to have passed.
void AffineValues(const InstrView& view, int operand,
                  std::vector<int64_t>& values);

}  // namespace nkigraph::ops

#endif  // NKIGRAPH_OPS_OP_UTIL_H_
