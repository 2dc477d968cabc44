// tensor_copy: dst = src on chip, bit-exact for equal dtypes and cast
// through fp32 otherwise. The standard PSUM -> SBUF evacuation.
#include "ops/exec_context.h"
#include "ops/op_def.h"
#include "ops/op_util.h"
#include "util/status_macros.h"

namespace nkigraph::ops {
namespace {

constexpr OperandRole kRoles[] = {{"dst", Access::kWrite, kOnChip},
                                  {"src", Access::kRead, kOnChip}};
constexpr int kDst = RoleOf(kRoles, "dst");
constexpr int kSrc = RoleOf(kRoles, "src");

constexpr absl::string_view kEngines[] = {EngineName(Engine::kVector),
                                          EngineName(Engine::kScalar),
                                          EngineName(Engine::kGpSimd)};
constexpr AttrSpec kAttrs[] = {EngineSpec(Engine::kVector, kEngines)};
constexpr const AttrSpec& kEngine = AttrOf(kAttrs, "engine");

absl::Status Check(const InstrView& v) {
  NKI_RETURN_IF_ERROR(CheckPartitions(v, kDst));
  NKI_RETURN_IF_ERROR(CheckSameTile(v, kDst, kSrc));
  if (v.Str(kEngine) == EngineName(Engine::kGpSimd) &&
      (v.operand(kDst).space() == proto::PSUM ||
       v.operand(kSrc).space() == proto::PSUM)) {
    return v.Error("the gpsimd engine cannot access psum");
  }
  return absl::OkStatus();
}

absl::Status Execute(ExecContext& ctx) { return CopyOperand(ctx, kDst, kSrc); }

}  // namespace

template <>
OpDef DefineOp<proto::TENSOR_COPY>() {
  return {.engine = Engine::kVector,
          .roles = kRoles,
          .attrs = kAttrs,
          .check = Check,
          .execute = Execute};
}

}  // namespace nkigraph::ops
