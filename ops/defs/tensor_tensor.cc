// tensor_tensor: dst = data1 op data2 elementwise on the vector engine;
// exact integer math when every operand is an integer dtype, fp32
// otherwise.
#include "ops/exec_context.h"
#include "ops/op_def.h"
#include "ops/op_util.h"
#include "ops/row_ops.h"
#include "ops/split_work.h"
#include "util/dtype.h"
#include "util/status_macros.h"

namespace nkigraph::ops {
namespace {

constexpr OperandRole kRoles[] = {{"dst", Access::kWrite, kOnChip},
                                  {"data1", Access::kRead, kOnChip},
                                  {"data2", Access::kRead, kOnChip}};
constexpr int kDst = RoleOf(kRoles, "dst");
constexpr int kData1 = RoleOf(kRoles, "data1");
constexpr int kData2 = RoleOf(kRoles, "data2");

constexpr AttrSpec kAttrs[] = {AluSpec("op", "the ALU operation")};
constexpr const AttrSpec& kOp = AttrOf(kAttrs, "op");

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
  return absl::OkStatus();
}

absl::Status Execute(ExecContext& ctx) {
  const InstrView& v = ctx.view();
  const Alu op = AluOf(v, kOp);
  const int64_t n = v.operand(kDst).elements();
  if (AllIntegers(v)) {
    NKI_ASSIGN_OR_RETURN(absl::Span<const int64_t> a, ctx.ReadInt(kData1));
    NKI_ASSIGN_OR_RETURN(absl::Span<const int64_t> b, ctx.ReadInt(kData2));
    std::vector<int64_t>& out = ctx.ScratchInt(0);
    out.resize(n);
    for (int64_t i = 0; i < n; ++i) out[i] = ApplyAluInt(op, a[i], b[i]);
    return ctx.WriteInt(kDst, out);
  }
  // Tiles of a few elements cost their calls more than their arithmetic:
  // every operand in place in one call where they all lie in rows.
  ExecContext::ElementwiseRows in_place;
  NKI_RETURN_IF_ERROR(
      ctx.ElementwiseInPlace(kDst, {kData1, kData2}, &in_place));
  // Big instructions split their rows over the threads the run lends
  // (ForRowRanges); a row's result is the same on any thread.
  if (in_place.dst.data != nullptr) {
    ForRowRanges(
        in_place.dst.rows, n, 1,
        [&](int64_t r0, int64_t r1) {
          for (int64_t r = r0; r < r1; ++r) {
            ApplyAluRow(op, in_place.src_row(0, r), in_place.src_row(1, r),
                        in_place.dst.row(r), in_place.dst.cols);
          }
        },
        kMinCheapRowSplitWork);
    return absl::OkStatus();
  }
  NKI_ASSIGN_OR_RETURN(const FloatRows a, ReadFloatRows(ctx, kData1));
  NKI_ASSIGN_OR_RETURN(const FloatRows b, ReadFloatRows(ctx, kData2));
  std::vector<float>& scratch = ctx.ScratchFloat(0);
  const FloatOut out =
      FloatDestination(ctx, kDst, {{kData1, a}, {kData2, b}}, scratch);
  // Same tiles (Check), so the same rows and columns.
  ForRowRanges(
      a.rows, n, 1,
      [&](int64_t r0, int64_t r1) {
        for (int64_t r = r0; r < r1; ++r) {
          ApplyAluRow(op, a.row(r), b.row(r), out.rows.row(r), a.cols);
        }
      },
      RowSplitThreshold(!a.copied && !b.copied && out.in_place,
                        kMinCheapRowSplitWork));
  return FinishFloat(ctx, kDst, out, scratch);
}

}  // namespace

template <>
OpDef DefineOp<proto::TENSOR_TENSOR>() {
  return {
      .engine = Engine::kVector,
      .roles = kRoles,
      .attrs = kAttrs,
      .check = Check,
      .execute = Execute,
      .label = [](const proto::Instruction& i) { return StringLabel(i, kOp); }};
}

}  // namespace nkigraph::ops
