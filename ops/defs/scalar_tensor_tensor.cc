// scalar_tensor_tensor: dst = (data op0 operand0) op1 operand1 on the
// vector engine: operand0 is an immediate (scalar0) or a [P, 1] column
// broadcast along the free dims, operand1 a tile shaped like data; reverseN
// swaps op N's sides. Both ops are arithmetic; the math is fp32, rounded to
// dst's dtype. One instruction for RoPE's x1*cos - x2*sin or a scaled
// score update.
#include <string>

#include "absl/strings/str_cat.h"
#include "ops/exec_context.h"
#include "ops/op_def.h"
#include "ops/op_util.h"
#include "util/status_macros.h"

namespace nkigraph::ops {
namespace {

constexpr OperandRole kRoles[] = {
    {"dst", Access::kWrite, kOnChip},
    {"data", Access::kRead, kOnChip},
    {"operand0", Access::kRead, kOnChip, /*optional=*/true},
    {"operand1", Access::kRead, kOnChip}};
constexpr int kDst = RoleOf(kRoles, "dst");
constexpr int kData = RoleOf(kRoles, "data");
constexpr int kOperand0 = RoleOf(kRoles, "operand0");
constexpr int kOperand1 = RoleOf(kRoles, "operand1");

constexpr AttrSpec kAttrs[] = {
    AluSpec("op0", "applied to data and operand0"),
    FloatSpec("scalar0", 0.0, "op0's immediate, without an 'operand0' column")
        .WrittenAtDefault(),
    FlagSpec("reverse0", "1: operand0 op0 data"),
    AluSpec("op1", "applied to op0's result and operand1"),
    FlagSpec("reverse1", "1: operand1 op1 (data op0 operand0)"),
};
constexpr const AttrSpec& kOp0 = AttrOf(kAttrs, "op0");
constexpr const AttrSpec& kScalar0 = AttrOf(kAttrs, "scalar0");
constexpr const AttrSpec& kReverse0 = AttrOf(kAttrs, "reverse0");
constexpr const AttrSpec& kOp1 = AttrOf(kAttrs, "op1");
constexpr const AttrSpec& kReverse1 = AttrOf(kAttrs, "reverse1");

absl::Status Check(const InstrView& v) {
  NKI_RETURN_IF_ERROR(CheckTwoTiles(v, kDst, kData, kOperand1));
  NKI_RETURN_IF_ERROR(CheckColumn(v, kOperand0, v.operand(kData).partitions()));
  return CheckArithmetic(v, {&kOp0, &kOp1});
}

absl::Status Execute(ExecContext& ctx) {
  const InstrView& v = ctx.view();
  const int64_t p = v.operand(kData).partitions();
  const int64_t f = v.operand(kData).free_size();
  const Alu op0 = AluOf(v, kOp0);
  const Alu op1 = AluOf(v, kOp1);
  const bool reverse0 = v.Int(kReverse0) != 0;
  const bool reverse1 = v.Int(kReverse1) != 0;
  const float scalar0 = static_cast<float>(v.Float(kScalar0));
  absl::Span<const float> column;  // empty: the immediate
  if (v.operand(kOperand0).present()) {
    NKI_ASSIGN_OR_RETURN(column, ctx.ReadFloat(kOperand0));
  }
  NKI_ASSIGN_OR_RETURN(absl::Span<const float> data, ctx.ReadFloat(kData));
  NKI_ASSIGN_OR_RETURN(absl::Span<const float> other, ctx.ReadFloat(kOperand1));
  std::vector<float>& out = ctx.ScratchFloat(0);
  out.resize(p * f);
  for (int64_t i = 0; i < p; ++i) {
    const float s = column.empty() ? scalar0 : column[i];
    for (int64_t j = 0; j < f; ++j) {
      const int64_t k = i * f + j;
      const float t =
          reverse0 ? ApplyAlu(op0, s, data[k]) : ApplyAlu(op0, data[k], s);
      out[k] =
          reverse1 ? ApplyAlu(op1, other[k], t) : ApplyAlu(op1, t, other[k]);
    }
  }
  return ctx.WriteFloat(kDst, out);
}

std::string Label(const proto::Instruction& instr) {
  return absl::StrCat(StringValue(instr, kOp0), ",", StringValue(instr, kOp1));
}

}  // namespace

template <>
OpDef DefineOp<proto::SCALAR_TENSOR_TENSOR>() {
  return {.engine = Engine::kVector,
          .roles = kRoles,
          .attrs = kAttrs,
          .check = Check,
          .execute = Execute,
          .label = Label};
}

}  // namespace nkigraph::ops
