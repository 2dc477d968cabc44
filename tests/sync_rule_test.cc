// The one rule for which programs a synchronising instruction joins
// (ops/sync_rule.h), for every sync kind, including the cases that must not
// meet.
#include "ops/sync_rule.h"

#include <cstdint>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "proto/nkigraph.pb.h"

namespace nkigraph {
namespace {

using ops::ProgramId;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

proto::World World(int ranks, int cores,
                   const std::vector<std::vector<uint32_t>>& groups = {}) {
  proto::World world;
  world.set_num_ranks(ranks);
  world.set_num_cores(cores);
  for (const std::vector<uint32_t>& ranks_of_group : groups) {
    proto::ReplicaGroup* group = world.add_replica_groups();
    for (uint32_t r : ranks_of_group) group->add_ranks(r);
  }
  return world;
}

proto::Instruction Instr(proto::Opcode opcode, uint32_t id = 1) {
  proto::Instruction instr;
  instr.set_id(id);
  instr.set_opcode(opcode);
  return instr;
}

proto::Instruction SendRecv(int64_t send_to, int64_t recv_from,
                            int64_t pipe_id = 0) {
  proto::Instruction instr = Instr(proto::SENDRECV);
  for (const auto& [name, value] :
       {std::pair<const char*, int64_t>{"send_to", send_to},
        {"recv_from", recv_from},
        {"pipe_id", pipe_id}}) {
    proto::Attr* attr = instr.add_attrs();
    attr->set_name(name);
    attr->set_i(value);
  }
  return instr;
}

std::vector<ProgramId> Members(const proto::World& world, ProgramId self,
                               const proto::Instruction& instr) {
  absl::StatusOr<ops::SyncGroup> group = ops::SyncMembers(world, self, instr);
  EXPECT_TRUE(group.ok()) << group.status();
  return group.ok() ? group->members : std::vector<ProgramId>{};
}

MATCHER_P2(Program, rank, core, "") {
  return arg.rank == rank && arg.core == core;
}

TEST(SyncRuleTest, CoreBarrierJoinsEveryCoreOfTheRankInCoreOrder) {
  const proto::World world = World(2, 2);
  const proto::Instruction barrier = Instr(proto::CORE_BARRIER);
  EXPECT_THAT(Members(world, {1, 1}, barrier),
              ElementsAre(Program(1, 0), Program(1, 1)));
  EXPECT_EQ(ops::SyncKindOf(barrier), ops::SyncKind::kCoreBarrier);
  // It meets the other core's core_barrier, not a sendrecv.
  EXPECT_TRUE(
      ops::SyncMatches({1, 1}, barrier, {1, 0}, Instr(proto::CORE_BARRIER, 7)));
  EXPECT_FALSE(ops::SyncMatches({1, 1}, barrier, {1, 0}, SendRecv(1, 1)));
}

TEST(SyncRuleTest, SendRecvPairsTwoCoresLowerFirst) {
  const proto::World world = World(1, 2);
  absl::StatusOr<ops::SyncGroup> group =
      ops::SyncMembers(world, {0, 1}, SendRecv(0, 0, 3));
  ASSERT_TRUE(group.ok()) << group.status();
  EXPECT_THAT(group->members, ElementsAre(Program(0, 0), Program(0, 1)));
  EXPECT_THAT(group->sends_to, ElementsAre(1, 0));
  // The partner names this core both ways on the same pipe.
  EXPECT_TRUE(
      ops::SyncMatches({0, 1}, SendRecv(0, 0, 3), {0, 0}, SendRecv(1, 1, 3)));
  EXPECT_FALSE(
      ops::SyncMatches({0, 1}, SendRecv(0, 0, 3), {0, 0}, SendRecv(1, 1, 4)));
  EXPECT_FALSE(
      ops::SyncMatches({0, 1}, SendRecv(0, 0, 3), {0, 0}, SendRecv(0, 0, 3)));
  EXPECT_FALSE(ops::SyncMatches({0, 1}, SendRecv(0, 0, 3), {0, 0},
                                Instr(proto::CORE_BARRIER)));
  // A sendrecv to itself is a group of one.
  group = ops::SyncMembers(world, {0, 1}, SendRecv(1, 1));
  ASSERT_TRUE(group.ok()) << group.status();
  EXPECT_THAT(group->members, ElementsAre(Program(0, 1)));
}

TEST(SyncRuleTest, SendRecvWithoutOneValidPeerJoinsNobody) {
  const proto::World world = World(1, 2);
  // Sends to one core and receives from another.
  EXPECT_THAT(
      ops::SyncMembers(world, {0, 0}, SendRecv(1, 0)).status().message(),
      HasSubstr("sends to core 1 but receives from core 0"));
  // A peer outside the rank.
  EXPECT_THAT(
      ops::SyncMembers(world, {0, 0}, SendRecv(2, 2)).status().message(),
      HasSubstr("peer is core 2; the rank has 2"));
  EXPECT_FALSE(ops::SyncMembers(world, {0, 0}, SendRecv(-1, -1)).ok());
  // No send_to at all is no peer (not core 0, not -1).
  proto::Instruction bare = Instr(proto::SENDRECV);
  EXPECT_THAT(ops::SyncMembers(world, {0, 1}, bare).status().message(),
              HasSubstr("names no send_to or recv_from"));
  EXPECT_FALSE(ops::SyncMatches({0, 1}, SendRecv(0, 0), {0, 0}, bare));
}

TEST(SyncRuleTest, CollectivesJoinTheSameCoreOfTheReplicaGroupInGroupOrder) {
  const proto::World world = World(4, 2, {{3, 1}, {0, 2}});
  const proto::Instruction gather = Instr(proto::ALL_GATHER, 5);
  absl::StatusOr<ops::SyncGroup> group =
      ops::SyncMembers(world, {1, 1}, gather);
  ASSERT_TRUE(group.ok()) << group.status();
  EXPECT_THAT(group->members, ElementsAre(Program(3, 1), Program(1, 1)));
  EXPECT_TRUE(group->sends_to.empty());
  EXPECT_THAT(Members(world, {0, 0}, Instr(proto::ALL_REDUCE)),
              ElementsAre(Program(0, 0), Program(2, 0)));
  // They meet at the same instruction, not another of the same opcode.
  EXPECT_TRUE(ops::SyncMatches({1, 1}, gather, {3, 1}, gather));
  EXPECT_FALSE(
      ops::SyncMatches({1, 1}, gather, {3, 1}, Instr(proto::ALL_GATHER, 6)));
  // A world without replica groups is one group of every rank.
  EXPECT_THAT(Members(World(3, 1), {2, 0}, gather),
              ElementsAre(Program(0, 0), Program(1, 0), Program(2, 0)));
  // A rank in no group joins nobody.
  EXPECT_THAT(ops::SyncMembers(World(4, 1, {{0, 1}}), {3, 0}, gather)
                  .status()
                  .message(),
              HasSubstr("rank 3 is in no replica group"));
}

TEST(SyncRuleTest, RingPermuteSendsToTheSuccessorInTheGroup) {
  const proto::World world = World(3, 1, {{2, 0, 1}});
  absl::StatusOr<ops::SyncGroup> group = ops::SyncMembers(
      world, {0, 0}, Instr(proto::COLLECTIVE_PERMUTE_IMPLICIT));
  ASSERT_TRUE(group.ok()) << group.status();
  EXPECT_THAT(group->members,
              ElementsAre(Program(2, 0), Program(0, 0), Program(1, 0)));
  // 2 -> 0 -> 1 -> 2.
  EXPECT_THAT(group->sends_to, ElementsAre(1, 2, 0));
}

TEST(SyncRuleTest, InstructionsThatRunAloneJoinNobody) {
  const proto::Instruction copy = Instr(proto::TENSOR_COPY);
  EXPECT_EQ(ops::SyncKindOf(copy), ops::SyncKind::kNone);
  EXPECT_FALSE(ops::SyncMembers(World(1, 2), {0, 0}, copy).ok());
  EXPECT_FALSE(ops::SyncMatches({0, 0}, copy, {0, 1}, copy));
  EXPECT_FALSE(ops::SyncMembers(World(1, 2), {0, 0},
                                Instr(static_cast<proto::Opcode>(999)))
                   .ok());
}

}  // namespace
}  // namespace nkigraph
