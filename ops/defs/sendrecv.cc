// sendrecv: between the cores of one rank (LNC), each core sends src to
// core send_to and receives dst from core recv_from; matching sendrecvs
// share a pipe_id and run together.
#include <algorithm>
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

constexpr OperandRole kRoles[] = {{"dst", Access::kWrite, kSbuf},
                                  {"src", Access::kRead, kSbuf}};
constexpr int kDst = RoleOf(kRoles, "dst");
constexpr int kSrc = RoleOf(kRoles, "src");

constexpr AttrSpec kAttrs[] = {
    IntSpec("send_to", 0, "the core src goes to").Required(),
    IntSpec("recv_from", 0, "the core dst comes from").Required(),
    IntSpec("pipe_id", 0, "pairs the sendrecvs of two cores")
        .WrittenAtDefault(),
};
constexpr const AttrSpec& kSendTo = AttrOf(kAttrs, "send_to");
constexpr const AttrSpec& kRecvFrom = AttrOf(kAttrs, "recv_from");
constexpr const AttrSpec& kPipeId = AttrOf(kAttrs, "pipe_id");

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
  for (const AttrSpec* attr : {&kSendTo, &kRecvFrom}) {
    const int64_t core = v.Int(*attr);
    if (core < 0 || core >= cores) {
      return v.Error(attr->name, " is ", core, "; 0 to ", cores - 1,
                     " allowed");
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
    const int64_t to = sv.Int(kSendTo);
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

// The pair of cores of a rank that exchange data: a sendrecv names its peer
// in both send_to and recv_from (or itself, alone).
absl::Status Members(const proto::World& world, ProgramId self,
                     const proto::Instruction& instr, SyncGroup* group) {
  if (!HasAttr(instr, kSendTo) || !HasAttr(instr, kRecvFrom)) {
    return absl::InvalidArgumentError("sendrecv names no send_to or recv_from");
  }
  const int64_t peer = IntValue(instr, kSendTo);
  if (IntValue(instr, kRecvFrom) != peer) {
    return absl::InvalidArgumentError(absl::StrCat(
        "sendrecv sends to core ", peer, " but receives from core ",
        IntValue(instr, kRecvFrom), "; it pairs with one peer"));
  }
  const int cores = std::max<int>(static_cast<int>(world.num_cores()), 1);
  if (peer < 0 || peer >= cores) {
    return absl::InvalidArgumentError(absl::StrCat(
        "sendrecv's peer is core ", peer, "; the rank has ", cores));
  }
  group->members.clear();
  group->sends_to.clear();
  const int other = static_cast<int>(peer);
  if (other == self.core) {
    group->members.push_back(self);
    group->sends_to.push_back(0);
    return absl::OkStatus();
  }
  group->members.push_back({self.rank, std::min(self.core, other)});
  group->members.push_back({self.rank, std::max(self.core, other)});
  group->sends_to = {1, 0};
  return absl::OkStatus();
}

// The peer's sendrecv names this core both ways, on the same pipe.
bool Matches(ProgramId self, const proto::Instruction& mine, ProgramId other,
             const proto::Instruction& theirs) {
  return theirs.opcode() == mine.opcode() && other.rank == self.rank &&
         HasAttr(theirs, kSendTo) && HasAttr(theirs, kRecvFrom) &&
         IntValue(theirs, kSendTo) == self.core &&
         IntValue(theirs, kRecvFrom) == self.core &&
         IntValue(theirs, kPipeId) == IntValue(mine, kPipeId);
}

std::string Label(const proto::Instruction& instr) {
  return absl::StrCat("<> core ", IntValue(instr, kSendTo), " pipe ",
                      IntValue(instr, kPipeId));
}

std::string LinkLabel(const proto::Instruction& instr) {
  return absl::StrCat("pipe ", IntValue(instr, kPipeId));
}

}  // namespace

template <>
OpDef DefineOp<proto::SENDRECV>() {
  return {.engine = Engine::kDma,
          .roles = kRoles,
          .attrs = kAttrs,
          .sync = SyncKind::kSendRecv,
          .sync_rule = {&Members, &Matches},
          .check = Check,
          .execute_group = ExecuteGroup,
          .label = Label,
          .link_label = LinkLabel};
}

}  // namespace nkigraph::ops
