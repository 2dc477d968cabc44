// iota: dst[p, i...] = offset + p * channel_multiplier + sum(step_d * i_d)
// over a pattern of up to 4 [step, num] dims, on the gpsimd engine; the
// integer is converted to dst's dtype.
#include "ops/exec_context.h"
#include "ops/op_def.h"
#include "ops/op_util.h"
#include "util/status_macros.h"

namespace nkigraph::ops {
namespace {

constexpr OperandRole kRoles[] = {{"dst", Access::kWrite, kSbuf}};
constexpr int kDst = RoleOf(kRoles, "dst");

constexpr AttrSpec kAttrs[] = {kAffinePatternSpec, kAffineOffsetSpec,
                               kChannelMultiplierSpec};

absl::Status Check(const InstrView& v) {
  NKI_RETURN_IF_ERROR(CheckPartitions(v, kDst));
  NKI_RETURN_IF_ERROR(CheckAffinePattern(v, kDst));
  return absl::OkStatus();
}

absl::Status Execute(ExecContext& ctx) {
  std::vector<int64_t>& values = ctx.ScratchInt(0);
  AffineValues(ctx.view(), kDst, values);
  return ctx.WriteInt(kDst, values);
}

}  // namespace

template <>
OpDef DefineOp<proto::IOTA>() {
  return {.engine = Engine::kGpSimd,
          .roles = kRoles,
          .attrs = kAttrs,
          .check = Check,
          .execute = Execute};
}

}  // namespace nkigraph::ops
