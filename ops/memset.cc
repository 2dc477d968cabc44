// memset: fills dst with a compile-time constant.
#include "ops/exec_context.h"
#include "ops/op_defs.h"
#include "ops/op_util.h"
#include "util/status_macros.h"

namespace nkigraph::ops {
namespace {

enum { kDst };

absl::Status Check(const InstrView& v) {
  NKI_RETURN_IF_ERROR(CheckPartitions(v, kDst));
  if (v.StrAttr("engine") == "gpsimd" &&
      v.operand(kDst).space() == proto::PSUM) {
    return v.Error("the gpsimd engine cannot access psum");
  }
  return absl::OkStatus();
}

absl::Status Execute(ExecContext& ctx) {
  std::vector<float>& values = ctx.ScratchFloat(0);
  values.assign(ctx.view().operand(kDst).elements(),
                static_cast<float>(ctx.view().FloatAttr("value")));
  return ctx.WriteFloat(kDst, values);
}

}  // namespace

const OpDef& MemsetOp() {
  static const OpDef def{
      .opcode = proto::MEMSET,
      .name = "memset",
      .engine = Engine::kVector,
      .roles = {{"dst", Access::kWrite, kOnChip}},
      .check = Check,
      .execute = Execute,
  };
  return def;
}

}  // namespace nkigraph::ops
