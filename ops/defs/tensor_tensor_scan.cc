// tensor_tensor_scan: an inclusive scan along each partition's free
// elements on the vector engine. With r the running result (initially
// `initial`: an immediate or a [P, 1] column),
//   r = (data0[i] op0 r) op1 data1[i];  dst[i] = r
// for i over the partition's elements in element order; reverseN swaps op
// N's sides (r op0 data0[i], data1[i] op1 ...). Both ops are arithmetic; r
// is carried in fp32 and each dst element rounded to dst's dtype as it is
// written (the engine computes in fp32).
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
    {"data0", Access::kRead, kOnChip},
    {"data1", Access::kRead, kOnChip},
    {"initial", Access::kRead, kOnChip, /*optional=*/true}};
constexpr int kDst = RoleOf(kRoles, "dst");
constexpr int kData0 = RoleOf(kRoles, "data0");
constexpr int kData1 = RoleOf(kRoles, "data1");
constexpr int kInitial = RoleOf(kRoles, "initial");

constexpr AttrSpec kAttrs[] = {
    AluSpec("op0", "applied to data0 and the running result"),
    AluSpec("op1", "applied to op0's result and data1"),
    FloatSpec("initial", 0.0,
              "the running result's start, without an 'initial' column"),
    FlagSpec("reverse0", "1: running result op0 data0"),
    FlagSpec("reverse1", "1: data1 op1 (data0 op0 running result)"),
};
constexpr const AttrSpec& kOp0 = AttrOf(kAttrs, "op0");
constexpr const AttrSpec& kOp1 = AttrOf(kAttrs, "op1");
constexpr const AttrSpec& kInitialImm = AttrOf(kAttrs, "initial");
constexpr const AttrSpec& kReverse0 = AttrOf(kAttrs, "reverse0");
constexpr const AttrSpec& kReverse1 = AttrOf(kAttrs, "reverse1");

absl::Status Check(const InstrView& v) {
  NKI_RETURN_IF_ERROR(CheckPartitions(v, kData0));
  NKI_RETURN_IF_ERROR(CheckSameTile(v, kDst, kData0));
  NKI_RETURN_IF_ERROR(CheckSameTile(v, kData1, kData0));
  NKI_RETURN_IF_ERROR(CheckColumn(v, kInitial, v.operand(kData0).partitions()));
  if (v.operand(kData0).space() == proto::PSUM &&
      v.operand(kData1).space() == proto::PSUM) {
    return v.Error("'data0' and 'data1' cannot both be in psum");
  }
  for (const AttrSpec* spec : {&kOp0, &kOp1}) {
    if (IsBitwise(AluOf(v, *spec))) {
      return v.Error(spec->name, " '", v.Str(*spec),
                     "' is bitwise; only arithmetic operations allowed");
    }
  }
  return absl::OkStatus();
}

absl::Status Execute(ExecContext& ctx) {
  const InstrView& v = ctx.view();
  const int64_t p = v.operand(kData0).partitions();
  const int64_t f = v.operand(kData0).free_size();
  const Alu op0 = AluOf(v, kOp0);
  const Alu op1 = AluOf(v, kOp1);
  const bool reverse0 = v.Int(kReverse0) != 0;
  const bool reverse1 = v.Int(kReverse1) != 0;
  const float initial = static_cast<float>(v.Float(kInitialImm));
  absl::Span<const float> column;  // empty: the immediate
  if (v.operand(kInitial).present()) {
    NKI_ASSIGN_OR_RETURN(column, ctx.ReadFloat(kInitial));
  }
  NKI_ASSIGN_OR_RETURN(absl::Span<const float> data0, ctx.ReadFloat(kData0));
  NKI_ASSIGN_OR_RETURN(absl::Span<const float> data1, ctx.ReadFloat(kData1));
  std::vector<float>& out = ctx.ScratchFloat(0);
  out.resize(p * f);
  for (int64_t i = 0; i < p; ++i) {
    float r = column.empty() ? initial : column[i];
    for (int64_t j = 0; j < f; ++j) {
      const int64_t k = i * f + j;
      const float t =
          reverse0 ? ApplyAlu(op0, r, data0[k]) : ApplyAlu(op0, data0[k], r);
      r = reverse1 ? ApplyAlu(op1, data1[k], t) : ApplyAlu(op1, t, data1[k]);
      out[k] = r;
    }
  }
  return ctx.WriteFloat(kDst, out);
}

std::string Label(const proto::Instruction& instr) {
  return absl::StrCat(StringValue(instr, kOp0), ",", StringValue(instr, kOp1));
}

}  // namespace

template <>
OpDef DefineOp<proto::TENSOR_TENSOR_SCAN>() {
  return {.engine = Engine::kVector,
          .roles = kRoles,
          .attrs = kAttrs,
          .check = Check,
          .execute = Execute,
          .label = Label};
}

}  // namespace nkigraph::ops
