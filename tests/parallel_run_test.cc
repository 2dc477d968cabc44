// Programs on several threads: every thread count gives the one-thread
// run's outputs bit for bit, its first error when several programs fail,
// its deadlock and race reports, its machine state after an error, its
// write events and dynamic-offset reach; the footprints that decide which
// cores of a rank run side by side; and the progress a run reports.
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <limits>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <tuple>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "interp/device_memory.h"
#include "interp/interpreter.h"
#include "interp/race_detector.h"
#include "interp/segment_footprint.h"
#include "kernels/registry.h"
#include "tests/test_util.h"
#include "util/diagnostic.h"
#include "util/progress_text.h"

namespace nkigraph {
namespace {

using builder::Buffer;
using builder::OobMode;
using builder::Tensor;
using builder::Tracer;
namespace isa = builder::isa;
using ::testing::AllOf;
using ::testing::HasSubstr;
using testing::HostArrayBytes;
using testing::Ints;
using testing::TraceKernel;
using testing::TraceWorld;

constexpr int kThreadCounts[] = {1, 2, 8};

// What a run shows: its status (message and diagnostic payload), every
// output's raw bytes, and the count of instructions executed.
struct Observed {
  absl::Status status;
  std::vector<std::pair<std::string, std::string>> outputs;
  int64_t executed = 0;
  std::unique_ptr<interp::Interpreter> interp;  // for state after the run
};

Observed RunOn(const proto::Graph& graph, int threads,
               const std::vector<HostArray>& inputs, uint64_t seed = 1,
               interp::RunOptions options = {}) {
  options.threads = threads;
  Observed o;
  absl::StatusOr<std::unique_ptr<interp::Interpreter>> created =
      interp::Interpreter::Create(graph, options);
  if (!created.ok()) {
    o.status = created.status();
    return o;
  }
  o.interp = *std::move(created);
  if (absl::Status s = testing::GiveInputs(*o.interp, inputs, seed); !s.ok()) {
    o.status = s;
    return o;
  }
  o.status = o.interp->Run();
  o.executed = o.interp->instructions_executed();
  if (!o.status.ok()) return o;
  for (const std::string& name : o.interp->OutputNames()) {
    const proto::Tensor* t = o.interp->FindOutput(name);
    const bool two_bytes =
        t->dtype() == proto::BFLOAT16 || t->dtype() == proto::FLOAT16 ||
        t->dtype() == proto::INT16 || t->dtype() == proto::UINT16;
    absl::StatusOr<HostArray> out = o.interp->GetOutput(
        name, two_bytes ? interp::Interpreter::HostForm::kRawBits16
                        : interp::Interpreter::HostForm::kValues);
    EXPECT_TRUE(out.ok()) << out.status();
    if (out.ok()) o.outputs.emplace_back(name, HostArrayBytes(*out));
  }
  return o;
}

// Every thread count's run equals the one-thread run; returns that run.
Observed ExpectSameForEveryThreadCount(const proto::Graph& graph,
                                       const std::vector<HostArray>& inputs,
                                       const interp::RunOptions& options = {}) {
  Observed first = RunOn(graph, 1, inputs, 1, options);
  for (int threads : kThreadCounts) {
    if (threads == 1) continue;
    // Repeated: a schedule that depended on timing would show sooner.
    for (int repeat = 0; repeat < 3; ++repeat) {
      const Observed o = RunOn(graph, threads, inputs, 1, options);
      EXPECT_EQ(o.status.ToString(), first.status.ToString())
          << threads << " threads";
      EXPECT_EQ(o.executed, first.executed) << threads << " threads";
      EXPECT_EQ(o.outputs.size(), first.outputs.size());
      for (size_t i = 0; i < std::min(o.outputs.size(), first.outputs.size());
           ++i) {
        EXPECT_EQ(o.outputs[i].first, first.outputs[i].first);
        EXPECT_TRUE(o.outputs[i].second == first.outputs[i].second)
            << "output " << o.outputs[i].first << " differs at " << threads
            << " threads";
      }
    }
  }
  return first;
}

// --- Kernels: outputs bit for bit ---------------------------------------

TEST(ParallelRunTest, RingKernelOverFourRanksIsTheSameOnEveryThreadCount) {
  std::vector<HostArray> inputs;
  const proto::Graph graph = TraceKernel(
      "fgcc", {{"tp_degree", "4"}, {"m", "256"}, {"k", "256"}, {"n", "256"}},
      &inputs);
  ASSERT_EQ(graph.world().num_ranks(), 4);
  ASSERT_EQ(graph.world().num_cores(), 2);
  const Observed o = ExpectSameForEveryThreadCount(graph, inputs);
  EXPECT_TRUE(o.status.ok()) << o.status;
  EXPECT_FALSE(o.outputs.empty());
}

// One program leaves the run's other threads to its matmuls' BLAS calls
// (ops::ScopedBlasThreads); OpenBLAS splits rows and columns among them, so
// the products are the one-thread products bit for bit.
TEST(ParallelRunTest, OneProgramsMatmulsOnIdleThreadsAreTheSame) {
  std::vector<HostArray> inputs;
  const proto::Graph graph = TraceKernel("tiled_matmul",
                                         {{"m", "256"},
                                          {"k", "512"},
                                          {"n", "512"},
                                          {"bias", "0"},
                                          {"dtype", "float32"}},
                                         &inputs);
  ASSERT_EQ(graph.world().num_ranks(), 1);
  ASSERT_EQ(graph.world().num_cores(), 1);
  const Observed o = ExpectSameForEveryThreadCount(graph, inputs);
  EXPECT_TRUE(o.status.ok()) << o.status;
  EXPECT_FALSE(o.outputs.empty());
}

// One program's big row ops (activation, tensor_reduce, tensor_tensor,
// tensor_scalar on 128 x 2048 tiles) split their rows over the idle
// threads (ops::ForRowRanges): every row is computed as on one thread,
// NaN and infinite rows among them (a row with a NaN takes the ops'
// element-by-element paths, its neighbours the vector ones). In float32
// the ops read and write their rows in place and split; in bfloat16 the
// ones whose rows are converted stay on one thread (ops::RowSplitThreshold)
// and the others split.
TEST(ParallelRunTest, OneProgramsBigRowOpsOnIdleThreadsAreTheSame) {
  // 200 positions: a last tile of 72 partitions, split unevenly.
  for (const char* dtype : {"float32", "bfloat16"}) {
    for (const auto& [kernel, positions] :
         {std::pair{"cross_entropy_forward", "256"},
          std::pair{"cross_entropy_backward", "256"},
          std::pair{"cross_entropy_forward", "200"}}) {
      SCOPED_TRACE(
          absl::StrCat(kernel, " over ", positions, " positions, ", dtype));
      std::vector<HostArray> inputs;
      const proto::Graph graph = TraceKernel(kernel,
                                             {{"num_positions", positions},
                                              {"vocab_size", "4096"},
                                              {"dtype", dtype}},
                                             &inputs);
      const Observed clean = ExpectSameForEveryThreadCount(graph, inputs);
      EXPECT_TRUE(clean.status.ok()) << clean.status;
      EXPECT_FALSE(clean.outputs.empty());
      for (HostArray& input : inputs) {
        if (input.name != "logits") continue;
        const int64_t v = input.shape[1];
        input.f32[3 * v + 17] = std::numeric_limits<float>::quiet_NaN();
        input.f32[130 * v + 2047] = std::numeric_limits<float>::infinity();
        input.f32[190 * v + 5] = -std::numeric_limits<float>::infinity();
      }
      const Observed odd = ExpectSameForEveryThreadCount(graph, inputs);
      EXPECT_TRUE(odd.status.ok()) << odd.status;
    }
  }
}

TEST(ParallelRunTest, DecoderWithAllReducesAndSendrecvIsTheSame) {
  std::vector<HostArray> inputs;
  const proto::Graph graph = TraceKernel(
      "transformer_tkg",
      {{"tp_degree", "2"}, {"num_layers", "1"}, {"sbuf_residual_and_cc", "1"}},
      &inputs);
  const Observed o = ExpectSameForEveryThreadCount(graph, inputs);
  EXPECT_TRUE(o.status.ok()) << o.status;
}

TEST(ParallelRunTest, TwoCoresOfOneRankWithDynamicOffsetsAreTheSame) {
  std::vector<HostArray> inputs;
  const proto::Graph graph = TraceKernel("bwmm_shard_on_H", {}, &inputs);
  ASSERT_EQ(graph.world().num_ranks(), 1);
  ASSERT_EQ(graph.world().num_cores(), 2);
  const Observed o = ExpectSameForEveryThreadCount(graph, inputs);
  EXPECT_TRUE(o.status.ok()) << o.status;
}

// --- Several failures: the one-thread order's first ----------------------

// 4 ranks x 2 cores. Each program copies row idx[rank][core] of a table
// into SBUF after `work[core]` memsets; an index past the table's 8 rows is
// an out-of-bounds error. After a core barrier, each does it again with
// idx2. Cores touch no common HBM block with a write, so they run side by
// side and a core with little work fails first in time.
struct TwoRounds {
  proto::Graph graph;
  int64_t first_read[2] = {-1, -1};   // instruction ids, by core
  int64_t second_read[2] = {-1, -1};  // after the barrier
  uint32_t tile_id = 0;
};

TwoRounds TraceTwoRounds(const int work[2]) {
  TwoRounds g;
  absl::StatusOr<proto::Graph> graph = TraceWorld(4, 2, [&](Tracer& t) {
    const int c = t.program_id();
    Tensor table = t.Input("table", {8, 64}, proto::FLOAT32, false);
    Tensor idx = t.Input("idx", {2}, proto::INT32);
    Tensor idx2 = t.Input("idx2", {2}, proto::INT32);
    Tensor flag = t.Allocate({1}, proto::INT32, Buffer::kSharedHbm, "flag");
    Tensor tile = builder::ndarray({1, 64}, proto::FLOAT32, Buffer::kSbuf, "t");
    g.tile_id = tile.id();
    for (int i = 0; i < work[c]; ++i) isa::memset(tile, static_cast<float>(i));
    g.first_read[c] = isa::dma_copy(tile, table.Slice(0, 0, 1).WithScalarOffset(
                                              idx.Slice(0, c, 1), 0))
                          .id;
    isa::core_barrier(flag);
    g.second_read[c] =
        isa::dma_copy(
            tile, table.Slice(0, 0, 1).WithScalarOffset(idx2.Slice(0, c, 1), 0))
            .id;
  });
  EXPECT_TRUE(graph.ok()) << graph.status();
  if (graph.ok()) g.graph = *std::move(graph);
  return g;
}

// idx and idx2 for 4 ranks x 2 cores; an entry of 99 is out of bounds.
std::vector<HostArray> Indices(std::vector<int32_t> idx,
                               std::vector<int32_t> idx2) {
  return {Ints("idx", {4, 2}, std::move(idx)),
          Ints("idx2", {4, 2}, std::move(idx2))};
}

TEST(ParallelRunTest, OfTwoFailingCoresTheLowerIsReportedThoughItFailsLater) {
  const int work[2] = {3000, 0};  // core 1 fails at once, core 0 much later
  const TwoRounds g = TraceTwoRounds(work);
  const Observed o = ExpectSameForEveryThreadCount(
      g.graph,
      Indices({99, 99, 0, 99, 0, 0, 0, 0}, std::vector<int32_t>(8, 0)));
  EXPECT_THAT(o.status.message(),
              AllOf(HasSubstr(absl::StrCat("rank 0 core 0 instruction #",
                                           g.first_read[0], " dma_copy")),
                    HasSubstr("out-of-bounds dynamic offset")));
}

TEST(ParallelRunTest, OfTwoFailingRanksTheLowerIsReported) {
  const int work[2] = {0, 3000};
  const TwoRounds g = TraceTwoRounds(work);
  // Rank 1 core 1 (after its work) and rank 3 core 0 (at once) fail.
  const Observed o = ExpectSameForEveryThreadCount(
      g.graph, Indices({0, 0, 0, 99, 0, 0, 99, 0}, std::vector<int32_t>(8, 0)));
  EXPECT_THAT(o.status.message(),
              HasSubstr(absl::StrCat("rank 1 core 1 instruction #",
                                     g.first_read[1], " dma_copy")));
}

TEST(ParallelRunTest, AnEarlierRoundsFailureIsReportedBeforeALowerRanksLater) {
  const int work[2] = {0, 0};
  const TwoRounds g = TraceTwoRounds(work);
  // Rank 0 core 0 fails after the barrier; rank 2 core 1 before it.
  const Observed o = ExpectSameForEveryThreadCount(
      g.graph, Indices({0, 0, 0, 0, 0, 99, 0, 0}, {99, 0, 0, 0, 0, 0, 0, 0}));
  EXPECT_THAT(o.status.message(),
              HasSubstr(absl::StrCat("rank 2 core 1 instruction #",
                                     g.first_read[1], " dma_copy")));
}

TEST(ParallelRunTest, TheStateAfterAnErrorIsTheSameOnEveryThreadCount) {
  const int work[2] = {5, 200};
  const TwoRounds g = TraceTwoRounds(work);
  const std::vector<HostArray> inputs =
      Indices({0, 1, 2, 3, 99, 5, 6, 7}, std::vector<int32_t>(8, 0));
  // Each program's tile: copied row for those that got there, or the
  // last memset's value.
  auto tiles = [&](const Observed& o) {
    std::vector<std::string> all;
    for (int r = 0; r < 4; ++r) {
      for (int c = 0; c < 2; ++c) {
        absl::StatusOr<HostArray> tile = o.interp->ReadTensor(g.tile_id, r, c);
        EXPECT_TRUE(tile.ok()) << tile.status();
        all.push_back(tile.ok() ? HostArrayBytes(*tile) : "");
      }
    }
    return all;
  };
  const Observed first = RunOn(g.graph, 1, inputs);
  ASSERT_THAT(first.status.message(), HasSubstr("rank 2 core 0"));
  const std::vector<std::string> want = tiles(first);
  for (int threads : kThreadCounts) {
    const Observed o = RunOn(g.graph, threads, inputs);
    EXPECT_EQ(o.status.ToString(), first.status.ToString());
    EXPECT_EQ(tiles(o), want) << threads << " threads";
  }
}

// --- Deadlocks and races -------------------------------------------------

TEST(ParallelRunTest, ADeadlockIsReportedAlikeOnEveryThreadCount) {
  int64_t extra = -1;
  absl::StatusOr<proto::Graph> graph = TraceWorld(4, 2, [&](Tracer& t) {
    const int c = t.program_id();
    Tensor flag = t.Allocate({1}, proto::INT32, Buffer::kSharedHbm, "flag");
    Tensor x = t.Input("x", {4, 64}, proto::FLOAT32);
    Tensor y = t.Allocate({4, 64}, proto::FLOAT32, Buffer::kSharedHbm, "y");
    Tensor tile = builder::ndarray({2, 64}, proto::FLOAT32, Buffer::kSbuf, "t");
    for (int i = 0; i < 50; ++i) isa::dma_copy(tile, x.Slice(0, 2 * c, 2));
    isa::dma_copy(y.Slice(0, 2 * c, 2), tile);
    isa::core_barrier(flag);
    if (c == 1) extra = isa::core_barrier(flag).id;  // core 0 never comes
  });
  ASSERT_TRUE(graph.ok()) << graph.status();
  const Observed o = ExpectSameForEveryThreadCount(*graph, {});
  ASSERT_FALSE(o.status.ok());
  const std::optional<Diagnostic> d = DiagnosticOf(o.status);
  ASSERT_TRUE(d.has_value());
  EXPECT_EQ(d->kind, DiagnosticKind::kDeadlock);
  ASSERT_EQ(d->notes.size(), 8u);
  for (int r = 0; r < 4; ++r) {
    EXPECT_EQ(d->notes[2 * r].message, "finished its stream");
    EXPECT_EQ(d->notes[2 * r + 1].instruction_id, extra);
    EXPECT_EQ(d->notes[2 * r + 1].rank, r);
  }
}

// Core 0 touches rows [0, 10) of a shared tensor, core 1 rows [5, 15),
// with no barrier between, on each of 3 ranks: every rank races; the
// report is the one-thread run's, rank 0's, at core 1's access to row 5.
TEST(ParallelRunTest, ARaceIsReportedAlikeOnEveryThreadCount) {
  for (const auto& [w0, w1, words] :
       {std::tuple{true, false, "this read on core 1 and a write on core 0"},
        std::tuple{false, true, "this write on core 1 and a read on core 0"},
        std::tuple{true, true, "this write on core 1 and a write on core 0"}}) {
    absl::StatusOr<proto::Graph> graph = TraceWorld(3, 2, [&](Tracer& t) {
      const int c = t.program_id();
      Tensor x = t.Input("x", {16, 64}, proto::FLOAT32);
      Tensor o = t.Allocate({16, 64}, proto::FLOAT32, Buffer::kSharedHbm, "o");
      Tensor tile =
          builder::ndarray({10, 64}, proto::FLOAT32, Buffer::kSbuf, "tile");
      Tensor flag = t.Allocate({1}, proto::INT32, Buffer::kSharedHbm, "flag");
      // Every row written once, ordered before what follows.
      if (c == 0) isa::dma_copy(o, x);
      isa::core_barrier(flag);
      for (int i = 0; i < 20; ++i) isa::dma_copy(tile, x.Slice(0, 0, 10));
      const Tensor rows = o.Slice(0, c == 0 ? 0 : 5, 10);
      if (c == 0 ? w0 : w1) {
        isa::dma_copy(rows, tile);
      } else {
        isa::dma_copy(tile, rows);
      }
    });
    ASSERT_TRUE(graph.ok()) << graph.status();
    const Observed o = ExpectSameForEveryThreadCount(*graph, {});
    const std::optional<Diagnostic> d = DiagnosticOf(o.status);
    ASSERT_TRUE(d.has_value()) << o.status;
    EXPECT_EQ(d->kind, DiagnosticKind::kRace);
    EXPECT_EQ(d->rank, 0);
    EXPECT_EQ(d->core, 1);
    EXPECT_THAT(
        o.status.message(),
        AllOf(HasSubstr("tensor 'o' element [5, 0]"), HasSubstr(words)));
  }
}

// --- Limits -------------------------------------------------------------

// Two ranks of two cores; each program makes 5 copies, meets its rank's
// other core at a barrier, then makes 5 more: 4 x 5 instructions a round.
proto::Graph FiveCopiesPerRound() {
  absl::StatusOr<proto::Graph> graph = TraceWorld(2, 2, [](Tracer& t) {
    Tensor x = t.Input("x", {4, 64}, proto::FLOAT32);
    Tensor tile =
        builder::ndarray({4, 64}, proto::FLOAT32, Buffer::kSbuf, "tile");
    Tensor flag = t.Allocate({1}, proto::INT32, Buffer::kSharedHbm, "flag");
    for (int i = 0; i < 5; ++i) isa::dma_copy(tile, x);
    isa::core_barrier(flag);
    for (int i = 0; i < 5; ++i) isa::dma_copy(tile, x);
  });
  EXPECT_TRUE(graph.ok()) << graph.status();
  return graph.ok() ? *std::move(graph) : proto::Graph();
}

TEST(ParallelRunTest, TheStepLimitStopsTheSameProgramOnEveryThreadCount) {
  const proto::Graph graph = FiveCopiesPerRound();
  // Per stream: copies at positions 0-4, the barrier at 5, copies 6-10.
  struct Case {
    int64_t max_steps;
    int rank, core, pc;
  };
  // In one-thread order the round runs (0,0) (0,1) (1,0) (1,1), 5 each:
  // 12 steps stop rank 1 core 0 before its third copy; 20 steps run the
  // first round whole and the 4 barriers pass the limit at the first; 27
  // (20 + 4 barriers + 3) stop rank 0 core 0 before its fourth copy after
  // the barrier.
  for (const Case& c :
       {Case{12, 1, 0, 2}, Case{20, 0, 0, 5}, Case{27, 0, 0, 9}}) {
    interp::RunOptions options;
    options.max_steps = c.max_steps;
    const Observed o = ExpectSameForEveryThreadCount(graph, {}, options);
    EXPECT_TRUE(absl::IsResourceExhausted(o.status)) << o.status;
    const std::optional<Diagnostic> d = DiagnosticOf(o.status);
    ASSERT_TRUE(d.has_value()) << o.status;
    EXPECT_EQ(d->kind, DiagnosticKind::kResource);
    EXPECT_EQ(d->rank, c.rank) << c.max_steps;
    EXPECT_EQ(d->core, c.core) << c.max_steps;
    EXPECT_EQ(d->instruction_id, graph.streams(c.core).instructions(c.pc).id())
        << c.max_steps;
    EXPECT_EQ(o.executed, c.max_steps);
    EXPECT_THAT(o.status.message(),
                HasSubstr(absl::StrCat("step limit of ", c.max_steps)));
  }
  // Exactly enough: every instruction (40 copies, 4 barriers) runs.
  interp::RunOptions enough;
  enough.max_steps = 44;
  const Observed o = ExpectSameForEveryThreadCount(graph, {}, enough);
  EXPECT_TRUE(o.status.ok()) << o.status;
  EXPECT_EQ(o.executed, 44);
}

TEST(ParallelRunTest, RaceStateOverTheLimitIsReportedAlikeOnEveryThreadCount) {
  // Every program's copy leaves one interval per element it touches: more
  // than its share of 1 MiB beyond the device memory.
  absl::StatusOr<proto::Graph> graph = testing::TraceInterleavedSharedCopy(2);
  ASSERT_TRUE(graph.ok()) << graph.status();
  absl::StatusOr<int64_t> device = interp::DeviceMemory::BytesNeeded(*graph);
  ASSERT_TRUE(device.ok());
  // Room for the device, the random input (2 ranks x 256 KiB, released
  // once loaded) and 1 MiB more.
  interp::RunOptions options;
  options.memory_limit_bytes = *device + (2 << 20);
  const Observed o = ExpectSameForEveryThreadCount(*graph, {}, options);
  // Found while executing an instruction: a device error whose
  // diagnostic says it is a resource.
  const std::optional<Diagnostic> d = DiagnosticOf(o.status);
  ASSERT_TRUE(d.has_value()) << o.status;
  EXPECT_EQ(d->kind, DiagnosticKind::kResource);
  EXPECT_EQ(d->rank, 0);
  EXPECT_EQ(d->core, 0);
  EXPECT_THAT(o.status.message(), AllOf(HasSubstr("race-detection state"),
                                        HasSubstr("raise --memory-limit")));
}

// --- What the run reports besides its result ----------------------------

TEST(ParallelRunTest, WriteEventsComeInTheOneThreadOrderOnEveryThreadCount) {
  std::vector<HostArray> inputs;
  const proto::Graph graph = TraceKernel(
      "fgcc", {{"tp_degree", "2"}, {"m", "128"}, {"k", "128"}, {"n", "128"}},
      &inputs);
  auto events = [&](int threads) {
    std::vector<std::string> seen;
    interp::RunOptions options;
    options.on_write = [&](const interp::RunOptions::WriteEvent& e) {
      seen.push_back(absl::StrCat(e.rank, ".", e.core, ".", e.instr->id(), ".",
                                  e.tensor->id()));
    };
    const Observed o = RunOn(graph, threads, inputs, 1, options);
    EXPECT_TRUE(o.status.ok()) << o.status;
    return seen;
  };
  const std::vector<std::string> want = events(1);
  EXPECT_GT(want.size(), 40u);
  EXPECT_EQ(events(2), want);
  EXPECT_EQ(events(8), want);
}

TEST(ParallelRunTest, ReachedOffsetsAreTheSameOnEveryThreadCount) {
  std::vector<HostArray> inputs;
  const proto::Graph graph = TraceKernel("bwmm_shard_on_H", {}, &inputs);
  auto reached = [&](int threads) {
    graph::ResolvedOffsets offsets;
    interp::RunOptions options;
    options.threads = threads;
    absl::StatusOr<std::unique_ptr<interp::Interpreter>> interp =
        interp::Interpreter::Create(graph, options);
    EXPECT_TRUE(interp.ok());
    for (const HostArray& input : inputs) {
      EXPECT_TRUE((*interp)->SetInput(input).ok());
    }
    EXPECT_TRUE((*interp)->FillRandomInputs(1).ok());
    (*interp)->RecordResolvedOffsets(&offsets);
    EXPECT_TRUE((*interp)->Run().ok());
    std::vector<std::string> sorted;
    for (const auto& [key, range] : offsets) {
      sorted.push_back(absl::StrCat(key.first, "/", key.second, ":", range.lo,
                                    "-", range.hi));
    }
    std::sort(sorted.begin(), sorted.end());
    return sorted;
  };
  const std::vector<std::string> want = reached(1);
  EXPECT_FALSE(want.empty());
  EXPECT_EQ(reached(2), want);
  EXPECT_EQ(reached(8), want);
}

TEST(ParallelRunTest, ProgressEndsWithEveryInstructionDone) {
  std::vector<HostArray> inputs;
  const proto::Graph graph = TraceKernel(
      "fgcc", {{"tp_degree", "2"}, {"m", "128"}, {"k", "128"}, {"n", "128"}},
      &inputs);
  int64_t total_instructions = 0;
  for (const proto::Stream& s : graph.streams()) {
    total_instructions += s.instructions_size();
  }
  absl::Mutex mu;
  std::vector<interp::RunOptions::Progress> seen;
  interp::RunOptions options;
  options.progress_interval_seconds = 0.01;
  options.on_progress = [&](const interp::RunOptions::Progress& p) {
    absl::MutexLock lock(&mu);
    seen.push_back(p);
  };
  const Observed o = RunOn(graph, 2, inputs, 1, options);
  ASSERT_TRUE(o.status.ok()) << o.status;
  absl::MutexLock lock(&mu);
  ASSERT_FALSE(seen.empty());
  EXPECT_TRUE(seen.back().finished);
  EXPECT_EQ(seen.back().total, 2 * total_instructions);
  EXPECT_EQ(seen.back().done, seen.back().total);
  for (size_t i = 0; i + 1 < seen.size(); ++i) {
    EXPECT_FALSE(seen[i].finished);
    EXPECT_LE(seen[i].done, seen[i + 1].done);
  }
}

TEST(ProgressTextTest, SaysDoneOfTotalRateAndTimeLeft) {
  EXPECT_EQ(FormatProgress(377600, 755200, 2.0),
            "377,600 of 755,200 instructions (50.0%), 188,800/s, 2 s left");
  EXPECT_EQ(FormatProgress(1000, 1000000, 0.5),
            "1,000 of 1,000,000 instructions (0.1%), 2,000/s, 8 min 20 s left");
  EXPECT_EQ(FormatProgress(0, 5, 0.0),
            "0 of 5 instructions (0.0%), 0/s, ? left");
  EXPECT_EQ(FormatProgress(5, 5, 1.0),
            "5 of 5 instructions (100.0%), 5/s, 0 s left");
  EXPECT_EQ(FormatDuration(7384), "2 h 03 min");
  EXPECT_EQ(FormatDuration(59.6), "1 min 00 s");
}

// --- Footprints ----------------------------------------------------------

TEST(SegmentFootprintTest, ACoreWaitsForTheLastConflictingInstruction) {
  absl::StatusOr<proto::Graph> graph = TraceWorld(1, 2, [&](Tracer& t) {
    const int c = t.program_id();
    Tensor x = t.Input("x", {16, 64}, proto::FLOAT32);
    Tensor r = t.Input("r", {16, 64}, proto::FLOAT32);
    Tensor idx = t.Input("i", {1}, proto::INT32);
    Tensor o = t.Allocate({16, 64}, proto::FLOAT32, Buffer::kSharedHbm, "o");
    Tensor p = t.Allocate({16, 64}, proto::FLOAT32, Buffer::kSharedHbm, "p");
    Tensor flag = t.Allocate({1}, proto::INT32, Buffer::kSharedHbm, "flag");
    Tensor tile = builder::ndarray({8, 64}, proto::FLOAT32, Buffer::kSbuf, "t");
    if (c == 0) {
      isa::dma_copy(tile, x.Slice(0, 0, 8));  // 0
      isa::dma_copy(o.Slice(0, 0, 8), tile);  // 1
      isa::dma_copy(tile, r.Slice(0, 0, 8));  // 2
      isa::dma_copy(p.Slice(0, 0, 8), tile);  // 3
      isa::dma_copy(o.Slice(0, 0, 1).WithScalarOffset(idx, 0),
                    tile.Slice(0, 0, 1));  // 4: reaches all of o
    } else {
      isa::dma_copy(tile, x.Slice(0, 0, 8));  // 0
      isa::dma_copy(tile, o.Slice(0, 8, 8));  // 1
      isa::dma_copy(tile, o.Slice(0, 0, 8));  // 2
      isa::dma_copy(r.Slice(0, 0, 8), tile);  // 3
      isa::dma_copy(tile, p.Slice(0, 8, 8));  // 4
      isa::dma_copy(p.Slice(0, 0, 8), tile);  // 5
    }
    isa::core_barrier(flag);
  });
  ASSERT_TRUE(graph.ok()) << graph.status();
  const interp::SegmentFootprints f(*graph);
  auto last = [&](int pc_b) { return f.LastConflict(0, 0, 1, pc_b); };
  EXPECT_EQ(last(0), -1);  // both read x
  EXPECT_EQ(last(1), 4);   // only the dynamic write reaches rows 8..15
  EXPECT_EQ(last(2), 4);   // the static write at 1, then the dynamic one
  EXPECT_EQ(last(3), 2);   // writing what core 0 read
  EXPECT_EQ(last(4), -1);  // other rows of p than core 0 wrote
  EXPECT_EQ(last(5), 3);
  // Core 0 at its barrier runs no segment.
  EXPECT_EQ(f.LastConflict(0, 5, 1, 2), -1);
  // The other way round: core 0's write of o at 1 after core 1's reads.
  EXPECT_EQ(f.LastConflict(1, 0, 0, 1), 2);
}

TEST(SegmentFootprintTest, BytesOfOneBlockConflict) {
  // Two 16-byte rows share a 64-byte block: writing one conflicts with
  // reading the other, as the shadow state may be kept per block.
  absl::StatusOr<proto::Graph> graph = TraceWorld(1, 2, [&](Tracer& t) {
    const int c = t.program_id();
    Tensor o = t.Allocate({2, 4}, proto::FLOAT32, Buffer::kSharedHbm, "o");
    Tensor tile = builder::ndarray({1, 4}, proto::FLOAT32, Buffer::kSbuf, "t");
    isa::memset(tile, 1.0f);
    if (c == 0) {
      isa::dma_copy(o.Slice(0, 0, 1), tile);
    } else {
      isa::dma_copy(tile, o.Slice(0, 1, 1));
    }
  });
  ASSERT_TRUE(graph.ok()) << graph.status();
  ASSERT_EQ(graph->tensors(0).address() % interp::kFootprintBlockBytes, 0u);
  EXPECT_EQ(interp::SegmentFootprints(*graph).LastConflict(0, 0, 1, 1), 1);
}

// --- The race detector from several threads -----------------------------

TEST(RaceDetectorThreadsTest, ConcurrentAccessesOfTwoRanksAndCoresAreExact) {
  interp::RaceDetector detector(2, 2);
  std::vector<std::thread> threads;
  for (int p = 0; p < 4; ++p) {
    threads.emplace_back([&detector, p] {
      const int rank = p / 2, core = p % 2;
      // Each core writes its own half in 4 KiB pieces, then reads it.
      for (int64_t i = 0; i < 2000; ++i) {
        const int64_t at = (core * 2000 + i) * 4096;
        EXPECT_FALSE(detector.Access(rank, core, at, 4096, true, 1));
        EXPECT_FALSE(detector.Access(rank, core, at, 4096, false, 2));
      }
    });
  }
  for (std::thread& t : threads) t.join();
  // Each program's accesses coalesce into one interval.
  for (int r = 0; r < 2; ++r) {
    for (int c = 0; c < 2; ++c) EXPECT_EQ(detector.intervals(r, c), 1);
  }
  // Unordered: rank 1's core 0 reading core 1's half races.
  const auto conflict = detector.Access(1, 0, 2000 * 4096 + 8, 4, false, 3);
  ASSERT_TRUE(conflict.has_value());
  EXPECT_EQ(conflict->other_core, 1);
  EXPECT_EQ(conflict->other_instr, 1u);
}

}  // namespace
}  // namespace nkigraph
