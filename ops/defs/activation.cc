// activation: dst = func(data * scale + bias) on the scalar engine, with an
// optional free-axis sum into the engine's per-partition accumulation
// registers (reduce_cmd) read out through reduce_res (SBUF or PSUM).
// nki.isa.activation_reduce is this with reduce_cmd "reset_reduce" and
// reduce_res given: the registers' only reduction is a sum.
#include <algorithm>

#include "ops/activation_functions.h"
#include "ops/alu.h"
#include "ops/exec_context.h"
#include "ops/op_def.h"
#include "ops/op_util.h"
#include "ops/row_ops.h"
#include "ops/split_work.h"
#include "util/status_macros.h"

namespace nkigraph::ops {
namespace {

constexpr OperandRole kRoles[] = {
    {"dst", Access::kWrite, kOnChip},
    {"data", Access::kRead, kOnChip},
    {"bias", Access::kRead, kSbuf, /*optional=*/true},
    {"scale", Access::kRead, kSbuf, /*optional=*/true},
    {"reduce_res", Access::kWrite, kOnChip, /*optional=*/true}};
constexpr int kDst = RoleOf(kRoles, "dst");
constexpr int kData = RoleOf(kRoles, "data");
constexpr int kBias = RoleOf(kRoles, "bias");
constexpr int kScale = RoleOf(kRoles, "scale");
constexpr int kReduceRes = RoleOf(kRoles, "reduce_res");

constexpr absl::string_view kReduceCmds[] = {"idle", "reset", "reduce",
                                             "reset_reduce"};
constexpr AttrSpec kAttrs[] = {
    StringSpec("func", "", "the activation function")
        .Required()
        .OneOf(kActFuncNames, &IsActFuncName),
    FloatSpec("scale", 1.0, "the immediate scale, without a 'scale' column"),
    FloatSpec("bias", 0.0, "the immediate bias, without a 'bias' column"),
    StringSpec("reduce_cmd", "idle",
               "what happens to the accumulation registers")
        .OneOf(kReduceCmds),
};
constexpr const AttrSpec& kFunc = AttrOf(kAttrs, "func");
constexpr const AttrSpec& kScaleImm = AttrOf(kAttrs, "scale");
constexpr const AttrSpec& kBiasImm = AttrOf(kAttrs, "bias");
constexpr const AttrSpec& kReduceCmd = AttrOf(kAttrs, "reduce_cmd");

absl::Status Check(const InstrView& v) {
  NKI_RETURN_IF_ERROR(CheckPartitions(v, kData));
  NKI_RETURN_IF_ERROR(CheckSameTile(v, kDst, kData));
  const int64_t p = v.operand(kData).partitions();
  NKI_RETURN_IF_ERROR(CheckColumn(v, kBias, p));
  NKI_RETURN_IF_ERROR(CheckColumn(v, kScale, p));
  NKI_RETURN_IF_ERROR(CheckColumn(v, kReduceRes, p));
  return absl::OkStatus();
}

absl::Status Execute(ExecContext& ctx) {
  const InstrView& v = ctx.view();
  const int choice = v.Choice(kFunc);  // -1 unless decoded at load
  const ActFunc func =
      choice >= 0 ? kActFuncs[choice].value : *ParseActFunc(v.Str(kFunc));
  const int64_t p = v.operand(kData).partitions();
  const int64_t f = v.operand(kData).free_size();
  NKI_ASSIGN_OR_RETURN(const FloatRows data, ReadFloatRows(ctx, kData));
  absl::Span<const float> bias, scale;
  if (v.operand(kBias).present()) {
    NKI_ASSIGN_OR_RETURN(bias, ctx.ReadFloat(kBias));
  }
  if (v.operand(kScale).present()) {
    NKI_ASSIGN_OR_RETURN(scale, ctx.ReadFloat(kScale));
  }
  const float scale_imm = static_cast<float>(v.Float(kScaleImm));
  const float bias_imm = static_cast<float>(v.Float(kBiasImm));
  const absl::string_view cmd = v.Str(kReduceCmd);
  absl::Span<float> regs = ctx.ReduceRegisters(Engine::kScalar);
  if (cmd == "reset" || cmd == "reset_reduce") {
    for (int64_t i = 0; i < p; ++i) regs[i] = 0.0f;
  }
  const bool reduce = cmd == "reduce" || cmd == "reset_reduce";
  std::vector<float>& scratch = ctx.ScratchFloat(0);
  const FloatOut out = FloatDestination(ctx, kDst, {{kData, data}}, scratch);
  std::vector<float>& sums = ctx.ScratchFloat(1);
  sums.assign(p, 0.0f);
  // Rows in groups, each group's sums taken while it is still in cache.
  // A row where two NaNs could meet goes element by element in
  // ApplyActFuncRow, and a row holding a NaN is summed by the scalar add
  // in ReduceRows: each row summed in order from 0, as the engine's
  // accumulator does.
  // Big instructions split their row groups over the threads the run
  // lends (ForRowRanges); each row is computed alike on any thread.
  constexpr int64_t kGroup = 16;
  ForRowRanges(
      p, p * f, kGroup,
      [&](int64_t first, int64_t end) {
        for (int64_t r0 = first; r0 < end; r0 += kGroup) {
          const int64_t n = std::min(kGroup, end - r0);
          for (int64_t i = r0; i < r0 + n; ++i) {
            const float s = scale.empty() ? scale_imm : scale[i];
            const float b = bias.empty() ? bias_imm : bias[i];
            ApplyActFuncRow(func, data.row(i), s, b, out.rows.row(i), f);
          }
          if (reduce) {
            ReduceRows(Alu::kAdd, 0.0f, out.rows.row(r0), n, f, out.rows.stride,
                       &sums[r0]);
          }
        }
      },
      RowSplitThreshold(!data.copied && out.in_place, kMinRowSplitWork));
  if (reduce) {
    for (int64_t i = 0; i < p; ++i) regs[i] += sums[i];
  }
  NKI_RETURN_IF_ERROR(FinishFloat(ctx, kDst, out, scratch));
  if (v.operand(kReduceRes).present()) {
    return ctx.WriteFloat(kReduceRes, regs.subspan(0, p));
  }
  return absl::OkStatus();
}

}  // namespace

template <>
OpDef DefineOp<proto::ACTIVATION>() {
  return {.engine = Engine::kScalar,
          .roles = kRoles,
          .attrs = kAttrs,
          .check = Check,
          .execute = Execute,
          .label = [](const proto::Instruction& i) {
            return StringLabel(i, kFunc);
          }};
}

}  // namespace nkigraph::ops
