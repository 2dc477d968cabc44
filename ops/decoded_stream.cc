#include "ops/decoded_stream.h"

#include <algorithm>

#include "ops/access_pattern.h"
#include "util/status_macros.h"

namespace nkigraph::ops {

absl::StatusOr<DecodedStream> DecodedStream::Decode(const proto::Stream& stream,
                                                    const TensorTable& tensors,
                                                    const proto::World& world) {
  DecodedStream out;
  out.world_ = &world;
  out.profile_ = &ProfileFor(world.target());
  out.instrs_.reserve(stream.instructions_size());
  for (const proto::Instruction& instr : stream.instructions()) {
    const OpDef* def = FindOp(instr.opcode());
    if (def == nullptr) return absl::InvalidArgumentError("unknown opcode");
    // As BindInstrView resolves them.
    const int num_operands = std::min(
        std::max(instr.operands_size(), static_cast<int>(def->roles.size())),
        kMaxOperands);
    out.instrs_.push_back(
        {&instr, def, static_cast<uint32_t>(out.operands_.size()),
         static_cast<uint32_t>(out.attrs_.size()), num_operands});
    for (int i = 0; i < num_operands; ++i) {
      NKI_RETURN_IF_ERROR(
          BindOperand(instr, i, tensors, &out.operands_.emplace_back(), [&] {
            return out.viewed_.emplace_back(std::make_unique<proto::Tensor>())
                .get();
          }));
    }
    for (const AttrSpec& spec : def->attrs) {
      out.attrs_.push_back(ResolveAttr(instr, spec));
    }
  }
  return out;
}

void DecodedStream::Bind(int pc, InstrView* view) const {
  const Instr& d = instrs_[pc];
  view->instr_ = d.instr;
  view->def_ = d.def;
  view->world_ = world_;
  view->profile_ = profile_;
  view->num_operands_ = d.num_operands;
  view->operand_list_ = operands_.data() + d.first_operand;
  view->attrs_ = attrs_.data() + d.first_attr;
}

}  // namespace nkigraph::ops
