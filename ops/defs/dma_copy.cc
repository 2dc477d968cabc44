// dma_copy: dst = src between HBM and SBUF, with optional dynamic offsets
// (gather / scatter) on either side; casts through fp32 when dtypes differ.
#include "ops/exec_context.h"
#include "ops/op_def.h"
#include "ops/op_util.h"
#include "util/status_macros.h"

namespace nkigraph::ops {
namespace {

// psum is admitted here only so Check can say why it is refused.
constexpr OperandRole kRoles[] = {{"dst", Access::kWrite, kAnySpace},
                                  {"src", Access::kRead, kAnySpace}};
constexpr int kDst = RoleOf(kRoles, "dst");
constexpr int kSrc = RoleOf(kRoles, "src");

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

template <>
OpDef DefineOp<proto::DMA_COPY>() {
  return {.engine = Engine::kDma,
          .roles = kRoles,
          .check = Check,
          .execute = Execute};
}

}  // namespace nkigraph::ops
