// tensor_scalar_reduce: dst = data op0 operand0 on the vector engine, as
// tensor_scalar with one arithmetic op (operand0 an immediate or a [P, 1]
// column broadcast along the free dims, reverse0 swapping its sides), and
// the same results reduced with reduce_op along all free dims into
// reduce_res ([P, 1]). The math is fp32; the reduction runs over the fp32
// results in element order from reduce_op's identity, before they are
// rounded to dst's dtype.
#include <string>

#include "absl/strings/str_cat.h"
#include "ops/exec_context.h"
#include "ops/op_def.h"
#include "ops/op_util.h"
#include "ops/row_ops.h"
#include "util/status_macros.h"

namespace nkigraph::ops {
namespace {

constexpr OperandRole kRoles[] = {
    {"dst", Access::kWrite, kOnChip},
    {"data", Access::kRead, kOnChip},
    {"operand0", Access::kRead, kSbuf, /*optional=*/true},
    {"reduce_res", Access::kWrite, kOnChip}};
constexpr int kDst = RoleOf(kRoles, "dst");
constexpr int kData = RoleOf(kRoles, "data");
constexpr int kOperand0 = RoleOf(kRoles, "operand0");
constexpr int kReduceRes = RoleOf(kRoles, "reduce_res");

constexpr absl::string_view kReduceOps[] = {
    AluName(Alu::kAdd), AluName(Alu::kSubtract), AluName(Alu::kMultiply),
    AluName(Alu::kMaximum), AluName(Alu::kMinimum)};
constexpr AttrSpec kAttrs[] = {
    AluSpec("op0", "applied to data and operand0"),
    FloatSpec("scalar0", 0.0, "op0's immediate, without an 'operand0' column"),
    FlagSpec("reverse0", "1: operand0 op0 data"),
    AluSpec("reduce_op", "reduces dst's values along the free dims",
            kReduceOps),
};
constexpr const AttrSpec& kOp0 = AttrOf(kAttrs, "op0");
constexpr const AttrSpec& kScalar0 = AttrOf(kAttrs, "scalar0");
constexpr const AttrSpec& kReverse0 = AttrOf(kAttrs, "reverse0");
constexpr const AttrSpec& kReduceOp = AttrOf(kAttrs, "reduce_op");

absl::Status Check(const InstrView& v) {
  NKI_RETURN_IF_ERROR(CheckPartitions(v, kData));
  NKI_RETURN_IF_ERROR(CheckSameTile(v, kDst, kData));
  const int64_t p = v.operand(kData).partitions();
  NKI_RETURN_IF_ERROR(CheckColumn(v, kOperand0, p));
  NKI_RETURN_IF_ERROR(CheckColumn(v, kReduceRes, p));
  if (IsBitwise(AluOf(v, kOp0))) {
    return v.Error("op0 '", v.Str(kOp0),
                   "' is bitwise; only arithmetic operations allowed");
  }
  return absl::OkStatus();
}

absl::Status Execute(ExecContext& ctx) {
  const InstrView& v = ctx.view();
  const int64_t p = v.operand(kData).partitions();
  const int64_t f = v.operand(kData).free_size();
  const Alu op0 = AluOf(v, kOp0);
  const Alu reduce_op = AluOf(v, kReduceOp);
  const bool reverse0 = v.Int(kReverse0) != 0;
  const float scalar0 = static_cast<float>(v.Float(kScalar0));
  absl::Span<const float> column;  // empty: the immediate
  if (v.operand(kOperand0).present()) {
    NKI_ASSIGN_OR_RETURN(column, ctx.ReadFloat(kOperand0));
  }
  NKI_ASSIGN_OR_RETURN(absl::Span<const float> data, ctx.ReadFloat(kData));
  std::vector<float>& out = ctx.ScratchFloat(0);
  out.resize(p * f);
  for (int64_t i = 0; i < p; ++i) {
    const float s = column.empty() ? scalar0 : column[i];
    ApplyAluRowScalar(op0, &data[i * f], s, reverse0, &out[i * f], f);
  }
  std::vector<float>& reduced = ctx.ScratchFloat(1);
  reduced.resize(p);
  // The schema allows only ops that reduce.
  ReduceRows(reduce_op, *ReduceIdentity(reduce_op), out.data(), p, f, f,
             reduced.data());
  NKI_RETURN_IF_ERROR(ctx.WriteFloat(kDst, out));
  return ctx.WriteFloat(kReduceRes, reduced);
}

std::string Label(const proto::Instruction& instr) {
  return absl::StrCat(StringValue(instr, kOp0), ",",
                      StringValue(instr, kReduceOp));
}

}  // namespace

template <>
OpDef DefineOp<proto::TENSOR_SCALAR_REDUCE>() {
  return {.engine = Engine::kVector,
          .roles = kRoles,
          .attrs = kAttrs,
          .check = Check,
          .execute = Execute,
          .label = Label};
}

}  // namespace nkigraph::ops
