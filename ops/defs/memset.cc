// memset: fills dst with a compile-time constant.
#include "ops/exec_context.h"
#include "ops/op_def.h"
#include "ops/op_util.h"
#include "util/status_macros.h"

namespace nkigraph::ops {
namespace {

constexpr OperandRole kRoles[] = {{"dst", Access::kWrite, kOnChip}};
constexpr int kDst = RoleOf(kRoles, "dst");

constexpr absl::string_view kEngines[] = {EngineName(Engine::kVector),
                                          EngineName(Engine::kGpSimd)};
constexpr AttrSpec kAttrs[] = {
    FloatSpec("value", 0.0, "the constant").WrittenAtDefault(),
    EngineSpec(Engine::kVector, kEngines),
};
constexpr const AttrSpec& kValue = AttrOf(kAttrs, "value");
constexpr const AttrSpec& kEngine = AttrOf(kAttrs, "engine");

absl::Status Check(const InstrView& v) {
  NKI_RETURN_IF_ERROR(CheckPartitions(v, kDst));
  if (v.Str(kEngine) == EngineName(Engine::kGpSimd) &&
      v.operand(kDst).space() == proto::PSUM) {
    return v.Error("the gpsimd engine cannot access psum");
  }
  return absl::OkStatus();
}

absl::Status Execute(ExecContext& ctx) {
  std::vector<float>& values = ctx.ScratchFloat(0);
  values.assign(ctx.view().operand(kDst).elements(),
                static_cast<float>(ctx.view().Float(kValue)));
  return ctx.WriteFloat(kDst, values);
}

}  // namespace

template <>
OpDef DefineOp<proto::MEMSET>() {
  return {.engine = Engine::kVector,
          .roles = kRoles,
          .attrs = kAttrs,
          .check = Check,
          .execute = Execute};
}

}  // namespace nkigraph::ops
