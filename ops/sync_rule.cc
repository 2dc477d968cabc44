#include "ops/sync_rule.h"

#include <algorithm>
#include <cstdint>

#include "absl/strings/str_cat.h"
#include "ops/op_def.h"

namespace nkigraph::ops {

absl::Status CoreBarrierMembers(const proto::World& world, ProgramId self,
                                const proto::Instruction& /*instr*/,
                                SyncGroup* group) {
  const int cores = std::max<int>(static_cast<int>(world.num_cores()), 1);
  group->members.clear();
  group->sends_to.clear();
  for (int c = 0; c < cores; ++c) group->members.push_back({self.rank, c});
  return absl::OkStatus();
}

absl::Status ReplicaGroupMembers(const proto::World& world, ProgramId self,
                                 const proto::Instruction& /*instr*/,
                                 SyncGroup* group) {
  absl::StatusOr<GroupPosition> position = GroupOf(world, self.rank);
  if (!position.ok()) return position.status();
  group->members.clear();
  group->sends_to.clear();
  for (int r : position->ranks) group->members.push_back({r, self.core});
  return absl::OkStatus();
}

absl::Status RingMembers(const proto::World& world, ProgramId self,
                         const proto::Instruction& instr, SyncGroup* group) {
  if (absl::Status s = ReplicaGroupMembers(world, self, instr, group);
      !s.ok()) {
    return s;
  }
  const int n = static_cast<int>(group->members.size());
  for (int k = 0; k < n; ++k) group->sends_to.push_back((k + 1) % n);
  return absl::OkStatus();
}

bool SameOpcode(ProgramId /*self*/, const proto::Instruction& mine,
                ProgramId /*other*/, const proto::Instruction& theirs) {
  return theirs.opcode() == mine.opcode();
}

bool SameInstruction(ProgramId /*self*/, const proto::Instruction& mine,
                     ProgramId /*other*/, const proto::Instruction& theirs) {
  return theirs.id() == mine.id();
}

SyncKind SyncKindOf(const proto::Instruction& instr) {
  const OpDef* def = FindOp(instr.opcode());
  return def != nullptr ? def->sync : SyncKind::kNone;
}

absl::Status SyncMembers(const proto::World& world, ProgramId self,
                         const proto::Instruction& instr, SyncGroup* group) {
  const OpDef* def = FindOp(instr.opcode());
  if (def == nullptr || def->sync == SyncKind::kNone) {
    return absl::InvalidArgumentError(absl::StrCat(
        "instruction #", instr.id(), " does not synchronise with anyone"));
  }
  return def->sync_rule.members(world, self, instr, group);
}

absl::StatusOr<SyncGroup> SyncMembers(const proto::World& world, ProgramId self,
                                      const proto::Instruction& instr) {
  SyncGroup group;
  if (absl::Status s = SyncMembers(world, self, instr, &group); !s.ok()) {
    return s;
  }
  return group;
}

bool SyncMatches(ProgramId self, const proto::Instruction& mine,
                 ProgramId other, const proto::Instruction& theirs) {
  const OpDef* def = FindOp(mine.opcode());
  if (def == nullptr || def->sync == SyncKind::kNone) return false;
  return def->sync_rule.matches(self, mine, other, theirs);
}

bool SyncGroupReady(
    const proto::World& world, ProgramId self, const proto::Instruction& mine,
    absl::FunctionRef<const proto::Instruction*(ProgramId)> waiting_at,
    SyncGroup* group) {
  if (!SyncMembers(world, self, mine, group).ok()) return false;
  for (const ProgramId& member : group->members) {
    if (member == self) continue;
    const proto::Instruction* theirs = waiting_at(member);
    if (theirs == nullptr || !SyncMatches(self, mine, member, *theirs)) {
      return false;
    }
  }
  return true;
}

absl::StatusOr<GroupPosition> GroupOf(const proto::World& world, int rank) {
  GroupPosition position;
  if (world.replica_groups_size() == 0) {
    for (uint32_t r = 0; r < std::max<uint32_t>(world.num_ranks(), 1); ++r) {
      position.ranks.push_back(static_cast<int>(r));
    }
    position.index = rank;
    return position;
  }
  for (const proto::ReplicaGroup& group : world.replica_groups()) {
    for (int i = 0; i < group.ranks_size(); ++i) {
      if (static_cast<int>(group.ranks(i)) == rank) {
        position.ranks.assign(group.ranks().begin(), group.ranks().end());
        position.index = i;
        return position;
      }
    }
  }
  return absl::InvalidArgumentError(
      absl::StrCat("rank ", rank, " is in no replica group of the world"));
}

}  // namespace nkigraph::ops
