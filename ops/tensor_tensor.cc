// tensor_tensor: dst = data1 op data2 elementwise on the vector engine;
// exact integer math when every operand is an integer dtype, fp32
// otherwise.
#include "ops/exec_context.h"
#include "ops/op_defs.h"
#include "ops/op_util.h"
#include "util/dtype.h"
#include "util/status_macros.h"

namespace nkigraph::ops {
namespace {

enum { kDst, kData1, kData2 };

bool AllIntegers(const InstrView& v) {
  return !IsFloatDType(v.operand(kDst).dtype()) &&
         !IsFloatDType(v.operand(kData1).dtype()) &&
         !IsFloatDType(v.operand(kData2).dtype());
}

absl::Status Check(const InstrView& v) {
  NKI_RETURN_IF_ERROR(CheckPartitions(v, kDst));
  NKI_RETURN_IF_ERROR(CheckSameTile(v, kDst, kData1));
  NKI_RETURN_IF_ERROR(CheckSameTile(v, kDst, kData2));
  if (v.operand(kData1).space() == proto::PSUM &&
      v.operand(kData2).space() == proto::PSUM) {
    return v.Error("'data1' and 'data2' cannot both be in psum");
  }
  NKI_RETURN_IF_ERROR(AluAttr(v, "op").status());
  return absl::OkStatus();
}

absl::Status Execute(ExecContext& ctx) {
  const InstrView& v = ctx.view();
  const Alu op = *AluAttr(v, "op");
  const int64_t n = v.operand(kDst).elements();
  if (AllIntegers(v)) {
    NKI_ASSIGN_OR_RETURN(absl::Span<const int64_t> a, ctx.ReadInt(kData1));
    NKI_ASSIGN_OR_RETURN(absl::Span<const int64_t> b, ctx.ReadInt(kData2));
    std::vector<int64_t>& out = ctx.ScratchInt(0);
    out.resize(n);
    for (int64_t i = 0; i < n; ++i) out[i] = ApplyAluInt(op, a[i], b[i]);
    return ctx.WriteInt(kDst, out);
  }
  NKI_ASSIGN_OR_RETURN(absl::Span<const float> a, ctx.ReadFloat(kData1));
  NKI_ASSIGN_OR_RETURN(absl::Span<const float> b, ctx.ReadFloat(kData2));
  std::vector<float>& out = ctx.ScratchFloat(0);
  out.resize(n);
  for (int64_t i = 0; i < n; ++i) out[i] = ApplyAlu(op, a[i], b[i]);
  return ctx.WriteFloat(kDst, out);
}

}  // namespace

const OpDef& TensorTensorOp() {
  static const OpDef def{
      .opcode = proto::TENSOR_TENSOR,
      .name = "tensor_tensor",
      .engine = Engine::kVector,
      .roles = {{"dst", Access::kWrite, kOnChip},
                {"data1", Access::kRead, kOnChip},
                {"data2", Access::kRead, kOnChip}},
      .check = Check,
      .execute = Execute,
  };
  return def;
}

}  // namespace nkigraph::ops
