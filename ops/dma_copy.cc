// dma_copy: dst = src between HBM and SBUF, with optional dynamic offsets
// (gather / scatter) on either side; casts through fp32 when dtypes differ.
#include "ops/exec_context.h"
#include "ops/op_defs.h"
#include "ops/op_util.h"
#include "util/status_macros.h"

namespace nkigraph::ops {
namespace {

enum { kDst, kSrc };

absl::Status Check(const InstrView& v) {
  for (int i : {kDst, kSrc}) {
    if (v.operand(i).space() == proto::PSUM) {
      return v.Error("DMA cannot access psum ('", v.operand(i).tensor->name(),
                     "'); stage it through sbuf with tensor_copy first");
    }
  }
  NKI_RETURN_IF_ERROR(CheckSameElements(v, kDst, kSrc));
  return absl::OkStatus();
}

absl::Status Execute(ExecContext& ctx) { return CopyOperand(ctx, kDst, kSrc); }

}  // namespace

const OpDef& DmaCopyOp() {
  static const OpDef def{
      .opcode = proto::DMA_COPY,
      .name = "dma_copy",
      .engine = Engine::kDma,
      // psum is admitted here only so Check can say why it is refused.
      .roles = {{"dst", Access::kWrite, kAnySpace},
                {"src", Access::kRead, kAnySpace}},
      .check = Check,
      .execute = Execute,
  };
  return def;
}

}  // namespace nkigraph::ops
