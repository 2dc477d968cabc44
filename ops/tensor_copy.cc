// tensor_copy: dst = src on chip, bit-exact for equal dtypes and cast
// through fp32 otherwise. The standard PSUM -> SBUF evacuation.
#include "ops/exec_context.h"
#include "ops/op_defs.h"
#include "ops/op_util.h"
#include "util/status_macros.h"

namespace nkigraph::ops {
namespace {

enum { kDst, kSrc };

absl::Status Check(const InstrView& v) {
  NKI_RETURN_IF_ERROR(CheckPartitions(v, kDst));
  NKI_RETURN_IF_ERROR(CheckSameTile(v, kDst, kSrc));
  if (v.StrAttr("engine") == "gpsimd" &&
      (v.operand(kDst).space() == proto::PSUM ||
       v.operand(kSrc).space() == proto::PSUM)) {
    return v.Error("the gpsimd engine cannot access psum");
  }
  return absl::OkStatus();
}

absl::Status Execute(ExecContext& ctx) { return CopyOperand(ctx, kDst, kSrc); }

}  // namespace

const OpDef& TensorCopyOp() {
  static const OpDef def{
      .opcode = proto::TENSOR_COPY,
      .name = "tensor_copy",
      .engine = Engine::kVector,
      .roles = {{"dst", Access::kWrite, kOnChip},
                {"src", Access::kRead, kOnChip}},
      .check = Check,
      .execute = Execute,
  };
  return def;
}

}  // namespace nkigraph::ops
