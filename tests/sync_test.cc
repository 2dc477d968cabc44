// Synchronisation between programs: mismatched sendrecv / core_barrier
// report a deadlock naming every program's waiting instruction (never a
// hang); collective rings deliver data around the replica group.
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/test_util.h"
#include "util/diagnostic.h"

namespace nkigraph {
namespace {

using builder::Buffer;
using builder::Tensor;
using builder::Tracer;
namespace isa = builder::isa;
using ::testing::AllOf;
using ::testing::ElementsAreArray;
using testing::Floats;
using ::testing::HasSubstr;
using testing::RunGraph;
using testing::TraceWorld;

using Outputs = std::map<std::string, HostArray>;

std::string Waits(int rank, int core, int64_t id, absl::string_view opcode,
                  int line) {
  return absl::StrCat("rank ", rank, " core ", core, " waits at instruction #",
                      id, " ", opcode, " at tests/sync_test.cc:", line);
}

std::string Finished(int rank, int core) {
  return absl::StrCat("rank ", rank, " core ", core, " finished its stream");
}

void ExpectDeadlock(const absl::Status& status,
                    const std::vector<std::string>& lines) {
  ASSERT_FALSE(status.ok());
  EXPECT_EQ(status.code(), interp::kDeviceErrorCode);
  EXPECT_THAT(status.message(), HasSubstr("deadlock"));
  for (const std::string& line : lines) {
    EXPECT_THAT(status.message(), HasSubstr(line));
  }
}

TEST(SyncDeadlockTest, SendRecvIssuedOnlyOnCore0) {
  int64_t id = -1;
  int line = 0;
  absl::StatusOr<proto::Graph> graph = TraceWorld(1, 2, [&](Tracer& t) {
    Tensor a = builder::ndarray({1, 2}, proto::FLOAT32, Buffer::kSbuf, "a");
    Tensor b = builder::ndarray({1, 2}, proto::FLOAT32, Buffer::kSbuf, "b");
    isa::memset(a, 1.0f);
    if (t.program_id() == 0) {
      id = isa::sendrecv(b, a, 1, 1).id;
      line = __LINE__ - 1;
    }
  });
  ASSERT_TRUE(graph.ok()) << graph.status();
  const absl::Status status = RunGraph(*graph, {}).status();
  ExpectDeadlock(status, {Waits(0, 0, id, "sendrecv", line), Finished(0, 1)});
  // The same report as a diagnostic: one note per program.
  const std::optional<Diagnostic> d = DiagnosticOf(status);
  ASSERT_TRUE(d.has_value());
  EXPECT_EQ(d->kind, DiagnosticKind::kDeadlock);
  ASSERT_EQ(d->notes.size(), 2u);
  EXPECT_EQ(d->notes[0].rank, 0);
  EXPECT_EQ(d->notes[0].core, 0);
  EXPECT_EQ(d->notes[0].instruction_id, id);
  EXPECT_EQ(d->notes[0].opcode, "sendrecv");
  EXPECT_EQ(d->notes[0].file, "tests/sync_test.cc");
  EXPECT_EQ(d->notes[0].line, line);
  EXPECT_EQ(d->notes[1].rank, 0);
  EXPECT_EQ(d->notes[1].core, 1);
  EXPECT_EQ(d->notes[1].instruction_id, -1);
  EXPECT_EQ(d->notes[1].message, "finished its stream");
}

TEST(SyncDeadlockTest, CoreBarrierIssuedOnlyOnCore1) {
  int64_t id = -1;
  int line = 0;
  absl::StatusOr<proto::Graph> graph = TraceWorld(1, 2, [&](Tracer& t) {
    Tensor flag = t.Allocate({1}, proto::INT32, Buffer::kSharedHbm, "flag");
    if (t.program_id() == 1) {
      id = isa::core_barrier(flag).id;
      line = __LINE__ - 1;
    }
  });
  ASSERT_TRUE(graph.ok()) << graph.status();
  ExpectDeadlock(RunGraph(*graph, {}).status(),
                 {Waits(0, 1, id, "core_barrier", line), Finished(0, 0)});
}

TEST(SyncDeadlockTest, MismatchedSendRecvPipeIds) {
  int64_t ids[2] = {-1, -1};
  int line = 0;
  absl::StatusOr<proto::Graph> graph = TraceWorld(1, 2, [&](Tracer& t) {
    const int c = t.program_id();
    Tensor a = builder::ndarray({1, 2}, proto::FLOAT32, Buffer::kSbuf, "a");
    Tensor b = builder::ndarray({1, 2}, proto::FLOAT32, Buffer::kSbuf, "b");
    isa::memset(a, 1.0f);
    ids[c] = isa::sendrecv(b, a, 1 - c, 1 - c, /*pipe_id=*/c).id;
    line = __LINE__ - 1;
  });
  ASSERT_TRUE(graph.ok()) << graph.status();
  ExpectDeadlock(RunGraph(*graph, {}).status(),
                 {Waits(0, 0, ids[0], "sendrecv", line),
                  Waits(0, 1, ids[1], "sendrecv", line)});
}

TEST(SyncDeadlockTest, MatchingPipeIdsDoNotDeadlock) {
  absl::StatusOr<proto::Graph> graph = TraceWorld(1, 2, [&](Tracer& t) {
    const int c = t.program_id();
    Tensor a = builder::ndarray({1, 2}, proto::FLOAT32, Buffer::kSbuf, "a");
    Tensor b = builder::ndarray({1, 2}, proto::FLOAT32, Buffer::kSbuf, "b");
    isa::memset(a, 1.0f);
    isa::sendrecv(b, a, 1 - c, 1 - c, /*pipe_id=*/3);
  });
  ASSERT_TRUE(graph.ok()) << graph.status();
  absl::Status status = RunGraph(*graph, {}).status();
  EXPECT_TRUE(status.ok()) << status;
}

TEST(SyncDeadlockTest, CoreBarrierMismatchAcrossCoresOfFourRanks) {
  int64_t id = -1;
  int line = 0;
  absl::StatusOr<proto::Graph> graph = TraceWorld(4, 2, [&](Tracer& t) {
    Tensor flag = t.Allocate({1}, proto::INT32, Buffer::kSharedHbm, "flag");
    Tensor a = builder::ndarray({1, 2}, proto::FLOAT32, Buffer::kSbuf, "a");
    Tensor s = builder::ndarray({1, 2}, proto::FLOAT32, Buffer::kSbuf, "s");
    isa::memset(a, 1.0f);
    // Collectives across the ranks of each core still match...
    isa::all_reduce(s, a);
    // ...but only core 0 of every rank waits at the barrier.
    if (t.program_id() == 0) {
      id = isa::core_barrier(flag).id;
      line = __LINE__ - 1;
    }
  });
  ASSERT_TRUE(graph.ok()) << graph.status();
  std::vector<std::string> lines;
  for (int r = 0; r < 4; ++r) {
    lines.push_back(Waits(r, 0, id, "core_barrier", line));
    lines.push_back(Finished(r, 1));
  }
  ExpectDeadlock(RunGraph(*graph, {}).status(), lines);
}

TEST(SyncDeadlockTest, CollectivesAndBarriersInDifferentOrdersPerCoreComplete) {
  // Core 0: all_gather then barrier; core 1: barrier then all_gather. Core
  // 0's all_gather matches across the ranks, then both cores meet at the
  // barrier, then core 1's all_gather matches: no deadlock.
  absl::StatusOr<proto::Graph> graph = TraceWorld(2, 2, [&](Tracer& t) {
    Tensor flag = t.Allocate({1}, proto::INT32, Buffer::kSharedHbm, "flag");
    Tensor a = builder::ndarray({1, 2}, proto::FLOAT32, Buffer::kSbuf, "a");
    Tensor g = builder::ndarray({1, 4}, proto::FLOAT32, Buffer::kSbuf, "g");
    isa::memset(a, 1.0f);
    if (t.program_id() == 0) {
      isa::all_gather(g, a, 1);
      isa::core_barrier(flag);
    } else {
      isa::core_barrier(flag);
      isa::all_gather(g, a, 1);
    }
  });
  ASSERT_TRUE(graph.ok()) << graph.status();
  absl::Status status = RunGraph(*graph, {}).status();
  EXPECT_TRUE(status.ok()) << status;
}

TEST(SyncDeadlockTest, AnExtraBarrierOnCore0AfterCollectivesDeadlocks) {
  // Core 0: barrier, all_reduce, barrier; core 1: all_reduce, barrier.
  // Core 1's all_reduce matches across the ranks and the first barriers
  // meet, but core 0's second barrier waits for a core that has finished.
  int64_t id = -1;
  int line = 0;
  absl::StatusOr<proto::Graph> graph = TraceWorld(2, 2, [&](Tracer& t) {
    Tensor flag = t.Allocate({1}, proto::INT32, Buffer::kSharedHbm, "flag");
    Tensor a = builder::ndarray({1, 2}, proto::FLOAT32, Buffer::kSbuf, "a");
    Tensor s = builder::ndarray({1, 2}, proto::FLOAT32, Buffer::kSbuf, "s");
    isa::memset(a, 1.0f);
    if (t.program_id() == 0) {
      isa::core_barrier(flag);
      isa::all_reduce(s, a);
      id = isa::core_barrier(flag).id;
      line = __LINE__ - 1;
    } else {
      isa::all_reduce(s, a);
      isa::core_barrier(flag);
    }
  });
  ASSERT_TRUE(graph.ok()) << graph.status();
  ExpectDeadlock(
      RunGraph(*graph, {}).status(),
      {Waits(0, 0, id, "core_barrier", line),
       Waits(1, 0, id, "core_barrier", line), Finished(0, 1), Finished(1, 1)});
}

// ---------------------------------------------------------------------------
// Rings of collective_permute_implicit

TEST(SyncRingTest, EightStepsOverEightRanksReturnEveryRanksDataToItsOwner) {
  constexpr int kRanks = 8;
  absl::StatusOr<proto::Graph> graph = TraceWorld(kRanks, 1, [&](Tracer& t) {
    Tensor x = t.Input("x", {2}, proto::FLOAT32);
    Tensor bufs[2] = {
        t.Allocate({2}, proto::FLOAT32, Buffer::kSharedHbm, "ping"),
        t.Allocate({2}, proto::FLOAT32, Buffer::kSharedHbm, "pong")};
    Tensor after3 = t.Allocate({2}, proto::FLOAT32, Buffer::kSharedHbm, "a3");
    Tensor after8 = t.Allocate({2}, proto::FLOAT32, Buffer::kSharedHbm, "a8");
    Tensor origin = t.Allocate({1}, proto::INT32, Buffer::kSharedHbm, "id");
    Tensor src = x;
    for (int step = 0; step < kRanks; ++step) {
      const Tensor& dst = bufs[step % 2];
      isa::collective_permute_implicit(dst, src);
      src = dst;
      if (step == 2) {
        isa::dma_copy(after3, dst);
        isa::collective_permute_implicit_current_processing_rank_id(origin, 3);
      }
    }
    isa::dma_copy(after8, src);
    t.Output("after3", after3);
    t.Output("after8", after8);
    t.Output("origin", origin);
  });
  ASSERT_TRUE(graph.ok()) << graph.status();
  std::vector<float> x;
  for (int r = 0; r < kRanks; ++r) {
    x.push_back(static_cast<float>(r));
    x.push_back(100.0f + r);
  }
  absl::StatusOr<Outputs> out = RunGraph(*graph, {Floats("x", {kRanks, 2}, x)});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_THAT(out->at("after8").f32, ElementsAreArray(x));
  // After three steps rank r holds rank (r - 3) mod 8's data, which is the
  // rank the resolver names for iteration 3.
  std::vector<float> after3;
  std::vector<int32_t> origin;
  for (int r = 0; r < kRanks; ++r) {
    const int from = (r - 3 + kRanks) % kRanks;
    after3.push_back(static_cast<float>(from));
    after3.push_back(100.0f + from);
    origin.push_back(from);
  }
  EXPECT_THAT(out->at("after3").f32, ElementsAreArray(after3));
  EXPECT_THAT(out->at("origin").i32, ElementsAreArray(origin));
}

TEST(SyncRingTest, EachReplicaGroupIsItsOwnRingInGroupOrder) {
  builder::WorldConfig world;
  world.num_ranks = 8;
  world.replica_groups = {{0, 2, 4, 6}, {7, 5, 3, 1}};
  builder::Tracer tracer(builder::TraceConfig{"ring", {}, world});
  absl::StatusOr<proto::Graph> graph = tracer.Trace([](Tracer& t) {
    Tensor x = t.Input("x", {1}, proto::FLOAT32);
    Tensor y = t.Allocate({1}, proto::FLOAT32, Buffer::kSharedHbm, "y");
    isa::collective_permute_implicit(y, x);
    t.Output("y", y);
  });
  ASSERT_TRUE(graph.ok()) << graph.status();
  absl::StatusOr<Outputs> out =
      RunGraph(*graph, {Floats("x", {8, 1}, {0, 10, 20, 30, 40, 50, 60, 70})});
  ASSERT_TRUE(out.ok()) << out.status();
  // Group {0, 2, 4, 6}: 0 <- 6, 2 <- 0, 4 <- 2, 6 <- 4.
  // Group {7, 5, 3, 1}: 7 <- 1, 5 <- 7, 3 <- 5, 1 <- 3.
  EXPECT_THAT(out->at("y").f32,
              ElementsAreArray<float>({60, 30, 0, 50, 20, 70, 40, 10}));
}

TEST(SyncRingTest, AllReduceSumsOnlyWithinEachReplicaGroup) {
  builder::WorldConfig world;
  world.num_ranks = 4;
  world.replica_groups = {{0, 3}, {2, 1}};
  builder::Tracer tracer(builder::TraceConfig{"groups", {}, world});
  absl::StatusOr<proto::Graph> graph = tracer.Trace([](Tracer& t) {
    Tensor x = t.Input("x", {1}, proto::FLOAT32);
    Tensor y = t.Allocate({1}, proto::FLOAT32, Buffer::kSharedHbm, "y");
    isa::all_reduce(y, x);
    t.Output("y", y);
  });
  ASSERT_TRUE(graph.ok()) << graph.status();
  absl::StatusOr<Outputs> out =
      RunGraph(*graph, {Floats("x", {4, 1}, {1, 10, 100, 1000})});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_THAT(out->at("y").f32,
              ElementsAreArray<float>({1001, 110, 110, 1001}));
}

}  // namespace
}  // namespace nkigraph
