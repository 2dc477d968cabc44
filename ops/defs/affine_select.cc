// affine_select: dst = cmp_op(affine, 0) ? on_true : on_false_value on the
// gpsimd engine, with affine built as in iota (the usual causal mask).
// Bit-exact for on_true elements when dst and on_true share a dtype.
#include <cstring>

#include "ops/exec_context.h"
#include "ops/op_def.h"
#include "ops/op_util.h"
#include "util/dtype.h"
#include "util/status_macros.h"

namespace nkigraph::ops {
namespace {

constexpr OperandRole kRoles[] = {{"dst", Access::kWrite, kSbuf},
                                  {"on_true", Access::kRead, kSbuf}};
constexpr int kDst = RoleOf(kRoles, "dst");
constexpr int kOnTrue = RoleOf(kRoles, "on_true");

constexpr absl::string_view kComparisons[] = {
    AluName(Alu::kEqual),   AluName(Alu::kNotEqual),
    AluName(Alu::kGreater), AluName(Alu::kGreaterEqual),
    AluName(Alu::kLess),    AluName(Alu::kLessEqual)};
constexpr AttrSpec kAttrs[] = {
    kAffinePatternSpec,
    kAffineOffsetSpec,
    kChannelMultiplierSpec,
    FloatSpec("on_false_value", 0.0, "dst where the comparison fails")
        .WrittenAtDefault(),
    StringSpec("cmp_op", AluName(Alu::kEqual),
               "compares the affine value with 0")
        .OneOf(kComparisons)
        .WrittenAtDefault(),
};
constexpr const AttrSpec& kOnFalse = AttrOf(kAttrs, "on_false_value");
constexpr const AttrSpec& kCmpOp = AttrOf(kAttrs, "cmp_op");

absl::Status Check(const InstrView& v) {
  NKI_RETURN_IF_ERROR(CheckPartitions(v, kDst));
  NKI_RETURN_IF_ERROR(CheckSameTile(v, kDst, kOnTrue));
  NKI_RETURN_IF_ERROR(CheckAffinePattern(v, kDst));
  return absl::OkStatus();
}

absl::Status Execute(ExecContext& ctx) {
  const InstrView& v = ctx.view();
  const Alu cmp = AluOf(v, kCmpOp);
  const float on_false = static_cast<float>(v.Float(kOnFalse));
  std::vector<int64_t>& affine = ctx.ScratchInt(0);
  AffineValues(v, kDst, affine);
  const int64_t n = static_cast<int64_t>(affine.size());
  // A nonzero int64 never rounds to 0.0f and keeps its sign, so comparing
  // the float against 0 is exact.
  const auto select = [&](int64_t i) {
    return ApplyAlu(cmp, static_cast<float>(affine[i]), 0.0f) != 0.0f;
  };
  const proto::DType dtype = v.operand(kDst).dtype();
  if (dtype == v.operand(kOnTrue).dtype()) {
    const int64_t size = DTypeSize(dtype);
    uint8_t false_bytes[8] = {};
    StoreFromFloat(dtype, on_false, false_bytes, v.profile().fp8_e4m3_max);
    NKI_ASSIGN_OR_RETURN(absl::Span<const uint8_t> on_true,
                         ctx.ReadRaw(kOnTrue));
    absl::Span<uint8_t> out = ScratchBytes(ctx, 1, n * size);
    for (int64_t i = 0; i < n; ++i) {
      std::memcpy(&out[i * size], select(i) ? &on_true[i * size] : false_bytes,
                  size);
    }
    return ctx.WriteRaw(kDst, out);
  }
  NKI_ASSIGN_OR_RETURN(absl::Span<const float> on_true, ctx.ReadFloat(kOnTrue));
  std::vector<float>& out = ctx.ScratchFloat(0);
  out.resize(n);
  for (int64_t i = 0; i < n; ++i) out[i] = select(i) ? on_true[i] : on_false;
  return ctx.WriteFloat(kDst, out);
}

}  // namespace

template <>
OpDef DefineOp<proto::AFFINE_SELECT>() {
  return {.engine = Engine::kGpSimd,
          .roles = kRoles,
          .attrs = kAttrs,
          .check = Check,
          .execute = Execute};
}

}  // namespace nkigraph::ops
