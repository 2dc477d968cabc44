// all_reduce: every rank of a replica group receives the elementwise
// reduction (add, maximum or minimum, in fp32, in group order) of all the
// group's srcs.
#include <vector>

#include "ops/access_pattern.h"
#include "ops/exec_context.h"
#include "ops/op_defs.h"
#include "ops/op_util.h"
#include "util/status_macros.h"

namespace nkigraph::ops {
namespace {

enum { kDst, kSrc };

absl::Status Check(const InstrView& v) {
  const OperandInfo& dst = v.operand(kDst);
  const OperandInfo& src = v.operand(kSrc);
  if (IsHbm(dst.space()) != IsHbm(src.space())) {
    return v.Error("'dst' is in ", SpaceName(dst.space()), " and 'src' in ",
                   SpaceName(src.space()),
                   "; both must be in sbuf or both in hbm");
  }
  NKI_RETURN_IF_ERROR(CheckSameElements(v, kDst, kSrc));
  NKI_ASSIGN_OR_RETURN(const Alu op, AluAttr(v, "op"));
  if (op != Alu::kAdd && op != Alu::kMaximum && op != Alu::kMinimum) {
    return v.Error("op '", AluName(op),
                   "' not supported; add, maximum or minimum allowed");
  }
  return absl::OkStatus();
}

absl::Status ExecuteGroup(absl::Span<ExecContext* const> group) {
  if (group.empty()) return absl::OkStatus();
  const InstrView& v = group[0]->view();
  const Alu op = *AluAttr(v, "op");
  const int64_t n = v.operand(kSrc).elements();
  for (ExecContext* ctx : group) {
    if (ctx->view().operand(kSrc).elements() != n ||
        ctx->view().operand(kDst).elements() != n) {
      return v.Error("the participants disagree on the element count (rank ",
                     ctx->rank(), ")");
    }
  }
  std::vector<float> acc;
  for (size_t j = 0; j < group.size(); ++j) {
    NKI_ASSIGN_OR_RETURN(absl::Span<const float> src,
                         group[j]->ReadFloat(kSrc));
    if (j == 0) {
      acc.assign(src.begin(), src.end());
      continue;
    }
    for (int64_t k = 0; k < n; ++k) acc[k] = ApplyAlu(op, acc[k], src[k]);
  }
  for (ExecContext* ctx : group) {
    NKI_RETURN_IF_ERROR(ctx->WriteFloat(kDst, acc));
  }
  return absl::OkStatus();
}

}  // namespace

const OpDef& AllReduceOp() {
  static const OpDef def{
      .opcode = proto::ALL_REDUCE,
      .name = "all_reduce",
      .engine = Engine::kCollective,
      .roles = {{"dst", Access::kWrite, kSbufOrHbm},
                {"src", Access::kRead, kSbufOrHbm}},
      .sync = SyncKind::kCollective,
      .check = Check,
      .execute_group = ExecuteGroup,
  };
  return def;
}

}  // namespace nkigraph::ops
