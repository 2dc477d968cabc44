// sendrecv: between the cores of one rank (LNC), each core sends src to
// core send_to and receives dst from core recv_from; matching sendrecvs
// share a pipe_id and run together.
#include <vector>

#include "ops/exec_context.h"
#include "ops/op_defs.h"
#include "ops/op_util.h"
#include "util/dtype.h"
#include "util/status_macros.h"

namespace nkigraph::ops {
namespace {

enum { kDst, kSrc };

absl::Status Check(const InstrView& v) {
  const OperandInfo& dst = v.operand(kDst);
  const OperandInfo& src = v.operand(kSrc);
  NKI_RETURN_IF_ERROR(CheckPartitions(v, kSrc));
  NKI_RETURN_IF_ERROR(CheckSameTile(v, kDst, kSrc));
  if (dst.dtype() != src.dtype()) {
    return v.Error("'dst' is ", DTypeName(dst.dtype()), " but 'src' is ",
                   DTypeName(src.dtype()), "; they must match");
  }
  const int64_t cores = v.world().num_cores();
  if (cores < 2) {
    return v.Error("needs 2 or more cores per rank; the world has ", cores);
  }
  for (absl::string_view attr : {"send_to", "recv_from"}) {
    const int64_t core = v.IntAttr(attr, -1);
    if (core < 0 || core >= cores) {
      return v.Error(attr, " is ", core, "; 0 to ", cores - 1, " allowed");
    }
  }
  return absl::OkStatus();
}

absl::Status ExecuteGroup(absl::Span<ExecContext* const> group) {
  // Read (and copy) every source before writing any destination, so the
  // exchange is simultaneous.
  std::vector<std::vector<uint8_t>> payloads(group.size());
  for (size_t s = 0; s < group.size(); ++s) {
    NKI_ASSIGN_OR_RETURN(absl::Span<const uint8_t> bytes,
                         group[s]->ReadRaw(kSrc));
    payloads[s].assign(bytes.begin(), bytes.end());
  }
  for (size_t s = 0; s < group.size(); ++s) {
    const InstrView& sv = group[s]->view();
    const int64_t to = sv.IntAttr("send_to", -1);
    ExecContext* receiver = nullptr;
    for (ExecContext* r : group) {
      if (r->core() == to) receiver = r;
    }
    if (receiver == nullptr) {
      return sv.Error("core ", group[s]->core(), " sends to core ", to,
                      ", which has no matching sendrecv");
    }
    const OperandInfo& src = sv.operand(kSrc);
    const OperandInfo& dst = receiver->view().operand(kDst);
    if (dst.dtype() != src.dtype() || dst.elements() != src.elements()) {
      return sv.Error("core ", group[s]->core(), " sends ", src.elements(), " ",
                      DTypeName(src.dtype()), " elements but core ", to,
                      " receives ", dst.elements(), " ",
                      DTypeName(dst.dtype()));
    }
    NKI_RETURN_IF_ERROR(receiver->WriteRaw(kDst, payloads[s]));
  }
  return absl::OkStatus();
}

}  // namespace

const OpDef& SendRecvOp() {
  static const OpDef def{
      .opcode = proto::SENDRECV,
      .name = "sendrecv",
      .engine = Engine::kDma,
      .roles = {{"dst", Access::kWrite, kSbuf}, {"src", Access::kRead, kSbuf}},
      .sync = SyncKind::kSendRecv,
      .check = Check,
      .execute_group = ExecuteGroup,
  };
  return def;
}

}  // namespace nkigraph::ops
