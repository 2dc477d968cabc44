// collective_permute_implicit: one step of a ring over the replica group:
// each rank sends src to its successor and receives its predecessor's src
// into dst, bit-exactly.
#include <vector>

#include "ops/exec_context.h"
#include "ops/op_defs.h"
#include "ops/op_util.h"
#include "util/dtype.h"
#include "util/status_macros.h"

namespace nkigraph::ops {
namespace {

enum { kDst, kSrc };

constexpr int64_t kChannels = 4;

absl::Status Check(const InstrView& v) {
  const OperandInfo& dst = v.operand(kDst);
  const OperandInfo& src = v.operand(kSrc);
  NKI_RETURN_IF_ERROR(CheckSameElements(v, kDst, kSrc));
  if (dst.dtype() != src.dtype()) {
    return v.Error("'dst' is ", DTypeName(dst.dtype()), " but 'src' is ",
                   DTypeName(src.dtype()), "; they must match");
  }
  const int64_t channel = v.IntAttr("channel", 0);
  if (channel < 0 || channel >= kChannels) {
    return v.Error("channel is ", channel, "; 0 to ", kChannels - 1,
                   " allowed");
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

}  // namespace

const OpDef& CollectivePermuteImplicitOp() {
  static const OpDef def{
      .opcode = proto::COLLECTIVE_PERMUTE_IMPLICIT,
      .name = "collective_permute_implicit",
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
