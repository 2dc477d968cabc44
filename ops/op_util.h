#ifndef NKIGRAPH_OPS_OP_UTIL_H_
#define NKIGRAPH_OPS_OP_UTIL_H_

// Checks and helpers shared by several op definitions.

#include <cstdint>
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

// Parses a string attribute naming an ALU op.
absl::StatusOr<Alu> AluAttr(const InstrView& view, absl::string_view name);

// Copies operand `src` to operand `dst` of the same element count:
// bit-exact when the dtypes match, through fp32 otherwise.
absl::Status CopyOperand(ExecContext& ctx, int dst, int src);

// A byte buffer of `size` bytes for raw-element ops, carved from the
// context's integer scratch slot `slot` so hot paths do not allocate. Valid
// until that slot is used again.
absl::Span<uint8_t> ScratchBytes(ExecContext& ctx, int slot, int64_t size);

// The affine value of iota and affine_select, from the attributes "pattern"
// (flattened [step, num] pairs, 1 to 4 of them, outermost first), "offset"
// and "channel_multiplier": for partition p (0-based within the operand)
// and pattern index (i_0, ...), offset + p * channel_multiplier +
// sum(step_d * i_d). Checks the pattern covers operand `operand`'s free
// size and that no value overflows int64.
absl::Status CheckAffinePattern(const InstrView& view, int operand);
// The affine values of every element of `operand` in element order
// ([p][f]); requires CheckAffinePattern to have passed.
void AffineValues(const InstrView& view, int operand,
                  std::vector<int64_t>& values);

// The replica group holding `rank`, in ring order, and the rank's position
// in it. The world's replica_groups partition its ranks; a world that names
// none has one group of all ranks.
struct GroupPosition {
  std::vector<int> ranks;
  int index = 0;
};
absl::StatusOr<GroupPosition> GroupOf(const proto::World& world, int rank);

}  // namespace nkigraph::ops

#endif  // NKIGRAPH_OPS_OP_UTIL_H_
