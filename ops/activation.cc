// activation: dst = func(data * scale + bias) on the scalar engine, with an
// optional free-axis sum into the engine's per-partition accumulation
// registers (reduce_cmd) read out through reduce_res.
#include "ops/activation_functions.h"
#include "ops/exec_context.h"
#include "ops/op_defs.h"
#include "ops/op_util.h"
#include "util/status_macros.h"

namespace nkigraph::ops {
namespace {

enum { kDst, kData, kBias, kScale, kReduceRes };

absl::Status Check(const InstrView& v) {
  NKI_RETURN_IF_ERROR(CheckPartitions(v, kData));
  NKI_RETURN_IF_ERROR(CheckSameTile(v, kDst, kData));
  const int64_t p = v.operand(kData).partitions();
  NKI_RETURN_IF_ERROR(CheckColumn(v, kBias, p));
  NKI_RETURN_IF_ERROR(CheckColumn(v, kScale, p));
  NKI_RETURN_IF_ERROR(CheckColumn(v, kReduceRes, p));
  if (absl::StatusOr<ActFunc> f = ParseActFunc(v.StrAttr("func")); !f.ok()) {
    return v.Error(f.status().message());
  }
  const absl::string_view cmd = v.StrAttr("reduce_cmd", "idle");
  if (cmd != "idle" && cmd != "reset" && cmd != "reduce" &&
      cmd != "reset_reduce") {
    return v.Error("unknown reduce_cmd '", cmd,
                   "' (idle, reset, reduce or reset_reduce)");
  }
  return absl::OkStatus();
}

absl::Status Execute(ExecContext& ctx) {
  const InstrView& v = ctx.view();
  const ActFunc func = *ParseActFunc(v.StrAttr("func"));
  const int64_t p = v.operand(kData).partitions();
  const int64_t f = v.operand(kData).free_size();
  NKI_ASSIGN_OR_RETURN(absl::Span<const float> data, ctx.ReadFloat(kData));
  absl::Span<const float> bias, scale;
  if (v.operand(kBias).present()) {
    NKI_ASSIGN_OR_RETURN(bias, ctx.ReadFloat(kBias));
  }
  if (v.operand(kScale).present()) {
    NKI_ASSIGN_OR_RETURN(scale, ctx.ReadFloat(kScale));
  }
  const float scale_imm = static_cast<float>(v.FloatAttr("scale", 1.0));
  const float bias_imm = static_cast<float>(v.FloatAttr("bias", 0.0));
  const absl::string_view cmd = v.StrAttr("reduce_cmd", "idle");
  absl::Span<float> regs = ctx.ReduceRegisters(Engine::kScalar);
  if (cmd == "reset" || cmd == "reset_reduce") {
    for (int64_t i = 0; i < p; ++i) regs[i] = 0.0f;
  }
  const bool reduce = cmd == "reduce" || cmd == "reset_reduce";
  std::vector<float>& out = ctx.ScratchFloat(0);
  out.resize(p * f);
  for (int64_t i = 0; i < p; ++i) {
    const float s = scale.empty() ? scale_imm : scale[i];
    const float b = bias.empty() ? bias_imm : bias[i];
    float sum = 0.0f;
    for (int64_t j = 0; j < f; ++j) {
      const float y = ApplyActFunc(func, data[i * f + j] * s + b);
      out[i * f + j] = y;
      sum += y;
    }
    if (reduce) regs[i] += sum;
  }
  NKI_RETURN_IF_ERROR(ctx.WriteFloat(kDst, out));
  if (v.operand(kReduceRes).present()) {
    return ctx.WriteFloat(kReduceRes, regs.subspan(0, p));
  }
  return absl::OkStatus();
}

}  // namespace

const OpDef& ActivationOp() {
  static const OpDef def{
      .opcode = proto::ACTIVATION,
      .name = "activation",
      .engine = Engine::kScalar,
      .roles = {{"dst", Access::kWrite, kOnChip},
                {"data", Access::kRead, kOnChip},
                {"bias", Access::kRead, kSbuf, /*optional=*/true},
                {"scale", Access::kRead, kSbuf, /*optional=*/true},
                {"reduce_res", Access::kWrite, kSbuf, /*optional=*/true}},
      .check = Check,
      .execute = Execute,
  };
  return def;
}

}  // namespace nkigraph::ops
