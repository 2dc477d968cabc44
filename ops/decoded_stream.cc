#include "ops/decoded_stream.h"

#include <algorithm>
#include <limits>

#include "ops/access_pattern.h"
#include "util/status_macros.h"

namespace nkigraph::ops {
namespace {

// Whether operand records of `instr` may be shared with another
// instruction's: every operand present is a static pattern of a declared
// tensor (a bitcast view has its own viewed tensor; a dynamic offset is
// left alone).
bool Shareable(const proto::Instruction& instr, int num_operands) {
  for (int i = 0; i < num_operands && i < instr.operands_size(); ++i) {
    const proto::AccessPattern& ap = instr.operands(i);
    if (ap.tensor_id() == 0) continue;
    if (ap.view_dtype() != proto::DTYPE_UNSPECIFIED ||
        ap.dynamic().kind() != proto::DynamicOffset::KIND_UNSPECIFIED) {
      return false;
    }
  }
  return true;
}

// Whether `info` (bound from an earlier instruction) is what operand `i` of
// `instr` binds to: both absent, or the same tensor, offset and pattern.
bool SameOperand(const OperandInfo& info, const proto::Instruction& instr,
                 int i) {
  const bool present =
      i < instr.operands_size() && instr.operands(i).tensor_id() != 0;
  if (!present || !info.present()) return present == info.present();
  const proto::AccessPattern& a = *info.ap;
  const proto::AccessPattern& b = instr.operands(i);
  return a.tensor_id() == b.tensor_id() && a.offset() == b.offset() &&
         a.view_dtype() == b.view_dtype() &&
         a.dynamic().kind() == b.dynamic().kind() &&
         std::equal(a.pattern().begin(), a.pattern().end(), b.pattern().begin(),
                    b.pattern().end());
}

// A slot of the table of recently decoded operand lists, by hash of what
// SameOperand compares.
constexpr int kSlotBits = 12;
uint32_t SlotOf(const proto::Instruction& instr, int num_operands) {
  uint64_t h = static_cast<uint64_t>(num_operands);
  auto mix = [&](uint64_t v) { h = (h ^ v) * 0x9E3779B97F4A7C15ull; };
  for (int i = 0; i < num_operands && i < instr.operands_size(); ++i) {
    const proto::AccessPattern& ap = instr.operands(i);
    mix(ap.tensor_id());
    mix(static_cast<uint64_t>(ap.offset()));
    for (int64_t v : ap.pattern()) mix(static_cast<uint64_t>(v));
  }
  return static_cast<uint32_t>(h >> (64 - kSlotBits));
}

}  // namespace

absl::StatusOr<DecodedStream> DecodedStream::Decode(const proto::Stream& stream,
                                                    const TensorTable& tensors,
                                                    const proto::World& world) {
  DecodedStream out;
  out.world_ = &world;
  out.profile_ = &ProfileFor(world.target());
  out.instrs_.reserve(stream.instructions_size());
  // The first record of the operand list last decoded into each slot.
  constexpr uint32_t kEmpty = std::numeric_limits<uint32_t>::max();
  struct Slot {
    uint32_t first = kEmpty;
    int num_operands = 0;
  };
  std::vector<Slot> slots(size_t{1} << kSlotBits);
  for (const proto::Instruction& instr : stream.instructions()) {
    const OpDef* def = FindOp(instr.opcode());
    if (def == nullptr) return absl::InvalidArgumentError("unknown opcode");
    // As BindInstrView resolves them.
    const int num_operands = std::min(
        std::max(instr.operands_size(), static_cast<int>(def->roles.size())),
        kMaxOperands);
    const bool shareable = Shareable(instr, num_operands);
    Slot* slot = shareable ? &slots[SlotOf(instr, num_operands)] : nullptr;
    bool shared = slot != nullptr && slot->first != kEmpty &&
                  slot->num_operands == num_operands;
    for (int i = 0; shared && i < num_operands; ++i) {
      shared = SameOperand(out.operands_[slot->first + i], instr, i);
    }
    const uint32_t first =
        shared ? slot->first : static_cast<uint32_t>(out.operands_.size());
    out.instrs_.push_back({&instr, def, first,
                           static_cast<uint32_t>(out.attrs_.size()),
                           num_operands});
    if (!shared) {
      for (int i = 0; i < num_operands; ++i) {
        NKI_RETURN_IF_ERROR(
            BindOperand(instr, i, tensors, &out.operands_.emplace_back(), [&] {
              return out.viewed_.emplace_back(std::make_unique<proto::Tensor>())
                  .get();
            }));
      }
      if (slot != nullptr) *slot = {first, num_operands};
    }
    for (const AttrSpec& spec : def->attrs) {
      out.attrs_.push_back(ResolveAttr(instr, spec));
    }
  }
  return out;
}

}  // namespace nkigraph::ops
