// tensor_reduce: reduces the last num_axes dims of data's access pattern
// with an ALU op on the vector engine, in fp32 and in element order from
// the op's identity, optionally negating the result. The partition dim
// cannot be reduced.
#include "ops/exec_context.h"
#include "ops/op_def.h"
#include "ops/op_util.h"
#include "ops/row_ops.h"
#include "ops/split_work.h"
#include "util/status_macros.h"

namespace nkigraph::ops {
namespace {

constexpr OperandRole kRoles[] = {{"dst", Access::kWrite, kOnChip},
                                  {"data", Access::kRead, kOnChip}};
constexpr int kDst = RoleOf(kRoles, "dst");
constexpr int kData = RoleOf(kRoles, "data");

constexpr AttrSpec kAttrs[] = {
    AluSpec("op", "the reduction"),
    IntSpec("num_axes", 1, "how many of data's innermost dims are reduced"),
    FlagSpec("negate", "1: the result negated"),
};
constexpr const AttrSpec& kOp = AttrOf(kAttrs, "op");
constexpr const AttrSpec& kNumAxes = AttrOf(kAttrs, "num_axes");
constexpr const AttrSpec& kNegate = AttrOf(kAttrs, "negate");

// Elements of data reduced into each dst element.
int64_t GroupSize(const OperandInfo& data, int64_t num_axes) {
  int64_t group = 1;
  for (int d = data.num_dims() - static_cast<int>(num_axes);
       d < data.num_dims(); ++d) {
    group *= data.count(d);
  }
  return group;
}

absl::Status Check(const InstrView& v) {
  const OperandInfo& dst = v.operand(kDst);
  const OperandInfo& data = v.operand(kData);
  NKI_RETURN_IF_ERROR(CheckPartitions(v, kData));
  if (absl::StatusOr<float> id = ReduceIdentity(AluOf(v, kOp)); !id.ok()) {
    return v.Error(id.status().message());
  }
  const int64_t num_axes = v.Int(kNumAxes);
  if (num_axes < 1 || num_axes > data.num_dims() - 1) {
    return v.Error("num_axes is ", num_axes, "; 'data' has ", data.num_dims(),
                   " dims and its first (partition) dim cannot be reduced, ",
                   "so 1 to ", data.num_dims() - 1, " allowed");
  }
  const int64_t group = GroupSize(data, num_axes);
  if (dst.partitions() != data.partitions() ||
      dst.elements() != data.elements() / group) {
    return v.Error("'dst' must have ", data.partitions(), " partitions and ",
                   data.elements() / group, " elements ('data' reduced over ",
                   "its last ", num_axes, " dims), not ", dst.partitions(),
                   " and ", dst.elements());
  }
  return absl::OkStatus();
}

absl::Status Execute(ExecContext& ctx) {
  const InstrView& v = ctx.view();
  const Alu op = AluOf(v, kOp);
  const float identity = *ReduceIdentity(op);
  const bool negate = v.Int(kNegate) != 0;
  const OperandInfo& data = v.operand(kData);
  const int64_t group = GroupSize(data, v.Int(kNumAxes));
  const int64_t outputs = data.elements() / group;
  NKI_ASSIGN_OR_RETURN(const FloatRows in, ReadFloatRows(ctx, kData));
  std::vector<float>& out = ctx.ScratchFloat(0);
  out.resize(outputs);
  // The reduced dims are the innermost, so each group is contiguous in
  // element order, inside one partition row.
  // Big instructions split their rows over the threads the run lends; a
  // row's reduction is the same on any thread. By 16 rows, as ReduceRows
  // sums them (two groups of eight lanes).
  if (group == in.cols) {
    ForRowRanges(
        in.rows, in.rows * in.cols, 16,
        [&](int64_t r0, int64_t r1) {
          ReduceRows(op, identity, in.row(r0), r1 - r0, group, in.stride,
                     &out[r0]);
        },
        RowSplitThreshold(!in.copied, kMinCheapRowSplitWork));
  } else {
    const int64_t per_row = in.cols / group;
    ForRowRanges(
        in.rows, in.rows * in.cols, 1,
        [&](int64_t r0, int64_t r1) {
          for (int64_t r = r0; r < r1; ++r) {
            ReduceRows(op, identity, in.row(r), per_row, group, group,
                       &out[r * per_row]);
          }
        },
        RowSplitThreshold(!in.copied, kMinCheapRowSplitWork));
  }
  if (negate) {
    for (float& x : out) x = -x;
  }
  return ctx.WriteFloat(kDst, out);
}

}  // namespace

template <>
OpDef DefineOp<proto::TENSOR_REDUCE>() {
  return {
      .engine = Engine::kVector,
      .roles = kRoles,
      .attrs = kAttrs,
      .check = Check,
      .execute = Execute,
      .label = [](const proto::Instruction& i) { return StringLabel(i, kOp); }};
}

}  // namespace nkigraph::ops
