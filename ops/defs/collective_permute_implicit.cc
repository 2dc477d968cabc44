// collective_permute_implicit: one step of a ring over the replica group:
// each rank sends src to its successor and receives its predecessor's src
// into dst, bit-exactly.
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "ops/exec_context.h"
#include "ops/op_def.h"
#include "ops/op_util.h"
#include "util/dtype.h"
#include "util/status_macros.h"

namespace nkigraph::ops {
namespace {

constexpr OperandRole kRoles[] = {{"dst", Access::kWrite, kSbufOrHbm},
                                  {"src", Access::kRead, kSbufOrHbm}};
constexpr int kDst = RoleOf(kRoles, "dst");
constexpr int kSrc = RoleOf(kRoles, "src");

constexpr AttrSpec kAttrs[] = {kRingChannelSpec};

absl::Status Check(const InstrView& v) {
  const OperandInfo& dst = v.operand(kDst);
  const OperandInfo& src = v.operand(kSrc);
  NKI_RETURN_IF_ERROR(CheckSameElements(v, kDst, kSrc));
  if (dst.dtype() != src.dtype()) {
    return v.Error("'dst' is ", DTypeName(dst.dtype()), " but 'src' is ",
                   DTypeName(src.dtype()), "; they must match");
  }
  return absl::OkStatus();
}

absl::Status ExecuteGroup(absl::Span<ExecContext* const> group) {
  const size_t n = group.size();
  // Read (and copy) every source before writing any destination: a rank's
  // dst may be the same memory as its src.
  std::vector<std::vector<uint8_t>> payloads(n);
  for (size_t i = 0; i < n; ++i) {
    NKI_ASSIGN_OR_RETURN(absl::Span<const uint8_t> bytes,
                         group[i]->ReadRaw(kSrc));
    payloads[i].assign(bytes.begin(), bytes.end());
  }
  for (size_t i = 0; i < n; ++i) {
    ExecContext* receiver = group[(i + 1) % n];
    const OperandInfo& src = group[i]->view().operand(kSrc);
    const OperandInfo& dst = receiver->view().operand(kDst);
    if (dst.dtype() != src.dtype() || dst.elements() != src.elements()) {
      return group[i]->view().Error(
          "rank ", group[i]->rank(), " sends ", src.elements(), " ",
          DTypeName(src.dtype()), " elements but rank ", receiver->rank(),
          " receives ", dst.elements(), " ", DTypeName(dst.dtype()));
    }
    NKI_RETURN_IF_ERROR(receiver->WriteRaw(kDst, payloads[i]));
  }
  return absl::OkStatus();
}

std::string ChannelLabel(const proto::Instruction& instr) {
  return absl::StrCat("ch ", IntValue(instr, kRingChannelSpec));
}

}  // namespace

template <>
OpDef DefineOp<proto::COLLECTIVE_PERMUTE_IMPLICIT>() {
  return {.engine = Engine::kCollective,
          .roles = kRoles,
          .attrs = kAttrs,
          .sync = SyncKind::kCollective,
          .sync_rule = kRingRule,
          .check = Check,
          .execute_group = ExecuteGroup,
          .short_name = "coll_permute",
          .label = ChannelLabel,
          .link_label = ChannelLabel};
}

}  // namespace nkigraph::ops
