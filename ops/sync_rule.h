#ifndef NKIGRAPH_OPS_SYNC_RULE_H_
#define NKIGRAPH_OPS_SYNC_RULE_H_

// Which programs a synchronising instruction joins, answered in one place
// for every user: the interpreter's scheduler, the pictures (viz/) and any
// cost model. The answer depends only on the world, the asking program and
// the instructions, never on interpreter state.
//
// Each op's definition carries its SyncRule; the rules several ops share
// are defined here. SyncMembers and SyncMatches dispatch to the rule of the
// instruction's op.

#include <vector>

#include "absl/functional/function_ref.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "proto/nkigraph.pb.h"

namespace nkigraph::ops {

// One program of the world: a core of a rank.
struct ProgramId {
  int rank = 0;
  int core = 0;
  friend bool operator==(const ProgramId&, const ProgramId&) = default;
};

// How an instruction waits on other programs.
enum class SyncKind {
  kNone,
  kCoreBarrier,  // all cores of a rank
  kSendRecv,     // two cores of a rank, paired by pipe_id
  kCollective,   // the same core of every rank of a replica group
};

// The programs a synchronising instruction joins.
struct SyncGroup {
  // Every member, the asking program included, in group order: the order
  // in which the op's execute_group receives them.
  std::vector<ProgramId> members;
  // For ops that move data from member to member (sendrecv, a ring
  // permute), the index in `members` of the member each one sends to;
  // empty for the others (barriers, gathers, reductions).
  std::vector<int> sends_to;
};

// Who a sync op's instruction meets (OpDef::sync_rule).
struct SyncRule {
  // Fills `group` for `instr` reached by program `self`; an error when the
  // instruction names no valid group.
  absl::Status (*members)(const proto::World& world, ProgramId self,
                          const proto::Instruction& instr,
                          SyncGroup* group) = nullptr;
  // Whether `theirs`, the instruction member `other` waits at, is the one
  // `mine` at `self` meets.
  bool (*matches)(ProgramId self, const proto::Instruction& mine,
                  ProgramId other, const proto::Instruction& theirs) = nullptr;
};

// The rules ops share.
// Every core of the rank, in core order.
absl::Status CoreBarrierMembers(const proto::World& world, ProgramId self,
                                const proto::Instruction& instr,
                                SyncGroup* group);
// The same core of every rank of the replica group holding self's rank,
// in group order.
absl::Status ReplicaGroupMembers(const proto::World& world, ProgramId self,
                                 const proto::Instruction& instr,
                                 SyncGroup* group);
// As ReplicaGroupMembers, each member sending to its successor in the ring.
absl::Status RingMembers(const proto::World& world, ProgramId self,
                         const proto::Instruction& instr, SyncGroup* group);
// `theirs` has the opcode of `mine`.
bool SameOpcode(ProgramId self, const proto::Instruction& mine, ProgramId other,
                const proto::Instruction& theirs);
// `theirs` is `mine` (the same id: every rank runs the same streams).
bool SameInstruction(ProgramId self, const proto::Instruction& mine,
                     ProgramId other, const proto::Instruction& theirs);

inline constexpr SyncRule kCoreBarrierRule{&CoreBarrierMembers, &SameOpcode};
inline constexpr SyncRule kReplicaGroupRule{&ReplicaGroupMembers,
                                            &SameInstruction};
inline constexpr SyncRule kRingRule{&RingMembers, &SameInstruction};

// The sync kind of an instruction's op; kNone for an unknown opcode.
SyncKind SyncKindOf(const proto::Instruction& instr);

// The programs `instr`, reached by program `self`, synchronises with, in
// group order (see SyncGroup). An error for an instruction that runs alone
// or names no valid group (a sendrecv whose peer is outside the rank, a
// rank in no replica group).
absl::Status SyncMembers(const proto::World& world, ProgramId self,
                         const proto::Instruction& instr, SyncGroup* group);
absl::StatusOr<SyncGroup> SyncMembers(const proto::World& world, ProgramId self,
                                      const proto::Instruction& instr);
// Whether member `other` of SyncMembers(world, self, mine), waiting at
// `theirs`, is ready to meet `mine`. False for instructions that run alone.
bool SyncMatches(ProgramId self, const proto::Instruction& mine,
                 ProgramId other, const proto::Instruction& theirs);
// Whether the group `mine`, reached by `self`, joins can meet now: fills
// `group` with SyncMembers and checks that every other member waits at a
// matching instruction. `waiting_at(p)` is the instruction program p waits
// at, or nullptr when it has none (finished, running, or outside the
// world). The interpreter's scheduler, the pictures' sync matching and the
// cost model ask this one question.
bool SyncGroupReady(
    const proto::World& world, ProgramId self, const proto::Instruction& mine,
    absl::FunctionRef<const proto::Instruction*(ProgramId)> waiting_at,
    SyncGroup* group);

// The replica group holding `rank`, in ring order, and the rank's position
// in it. The world's replica_groups partition its ranks; a world that names
// none has one group of all ranks.
struct GroupPosition {
  std::vector<int> ranks;
  int index = 0;
};
absl::StatusOr<GroupPosition> GroupOf(const proto::World& world, int rank);

}  // namespace nkigraph::ops

#endif  // NKIGRAPH_OPS_SYNC_RULE_H_
