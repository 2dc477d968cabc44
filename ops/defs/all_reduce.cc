// all_reduce: every rank of a replica group receives the elementwise
// reduction (add, maximum or minimum, in fp32, in group order) of all the
// group's srcs.
#include <vector>

#include "ops/access_pattern.h"
#include "ops/exec_context.h"
#include "ops/op_def.h"
#include "ops/op_util.h"
#include "util/status_macros.h"

namespace nkigraph::ops {
namespace {

constexpr OperandRole kRoles[] = {{"dst", Access::kWrite, kSbufOrHbm},
                                  {"src", Access::kRead, kSbufOrHbm}};
constexpr int kDst = RoleOf(kRoles, "dst");
constexpr int kSrc = RoleOf(kRoles, "src");

constexpr absl::string_view kReductions[] = {
    AluName(Alu::kAdd), AluName(Alu::kMaximum), AluName(Alu::kMinimum)};
constexpr AttrSpec kAttrs[] = {AluSpec("op", "the reduction", kReductions)};
constexpr const AttrSpec& kOp = AttrOf(kAttrs, "op");

absl::Status Check(const InstrView& v) {
  const OperandInfo& dst = v.operand(kDst);
  const OperandInfo& src = v.operand(kSrc);
  if (IsHbm(dst.space()) != IsHbm(src.space())) {
    return v.Error("'dst' is in ", SpaceName(dst.space()), " and 'src' in ",
                   SpaceName(src.space()),
                   "; both must be in sbuf or both in hbm");
  }
  NKI_RETURN_IF_ERROR(CheckSameElements(v, kDst, kSrc));
  return absl::OkStatus();
}

absl::Status ExecuteGroup(absl::Span<ExecContext* const> group) {
  if (group.empty()) return absl::OkStatus();
  const InstrView& v = group[0]->view();
  const Alu op = AluOf(v, kOp);
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

template <>
OpDef DefineOp<proto::ALL_REDUCE>() {
  return {
      .engine = Engine::kCollective,
      .roles = kRoles,
      .attrs = kAttrs,
      .sync = SyncKind::kCollective,
      .sync_rule = kReplicaGroupRule,
      .check = Check,
      .execute_group = ExecuteGroup,
      .label = [](const proto::Instruction& i) { return StringLabel(i, kOp); }};
}

}  // namespace nkigraph::ops
