// A run spread over processes (interp/transport.h), its processes threads
// of this test over testing::ThreadedWorld: every process count gives the
// single process's outputs bit for bit, its first error, its deadlock
// report, its step-limit stop and its tensor dumps (every write's sequence
// number and bytes, and the state when the run stopped), uneven splits
// included; each process holds device memory for its ranks only.
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "interp/device_memory.h"
#include "interp/interpreter.h"
#include "interp/transport.h"
#include "kernels/registry.h"
#include "tests/test_util.h"
#include "tests/threaded_transport.h"
#include "util/diagnostic.h"

namespace nkigraph {
namespace {

using builder::Buffer;
using builder::Tensor;
using builder::Tracer;
namespace isa = builder::isa;
using ::testing::HasSubstr;
using testing::HostArrayBytes;
using testing::Ints;
using testing::TraceKernel;
using testing::TraceWorld;

// One process's run: status, its outputs' bytes (its ranks' rows), the
// instruction count.
struct Observed {
  absl::Status status;
  std::vector<std::pair<std::string, std::string>> outputs;
  int64_t executed = 0;
  int64_t device_bytes = 0;
};

Observed RunOne(const proto::Graph& graph, const std::vector<HostArray>& inputs,
                interp::RunOptions options) {
  Observed o;
  absl::StatusOr<std::unique_ptr<interp::Interpreter>> created =
      interp::Interpreter::Create(graph, options);
  if (!created.ok()) {
    o.status = created.status();
    return o;
  }
  interp::Interpreter& interp = **created;
  o.device_bytes = interp.budget().used();
  if (absl::Status s = testing::GiveInputs(interp, inputs); !s.ok()) {
    o.status = s;
    return o;
  }
  o.status = interp.Run();
  o.executed = interp.instructions_executed();
  if (!o.status.ok()) return o;
  for (const std::string& name : interp.OutputNames()) {
    absl::StatusOr<HostArray> out =
        interp.GetOutput(name, interp::Interpreter::HostForm::kRawBits16);
    EXPECT_TRUE(out.ok()) << out.status();
    if (out.ok()) o.outputs.emplace_back(name, HostArrayBytes(*out));
  }
  return o;
}

// The run in `processes` threads, one Interpreter each.
std::vector<Observed> RunSpread(const proto::Graph& graph,
                                const std::vector<HostArray>& inputs,
                                int processes,
                                interp::RunOptions options = {}) {
  testing::ThreadedWorld world(processes);
  std::vector<Observed> observed(processes);
  std::vector<std::thread> threads;
  for (int p = 0; p < processes; ++p) {
    threads.emplace_back([&, p] {
      interp::RunOptions mine = options;
      mine.transport = &world.at(p);
      mine.threads = 1;
      observed[p] = RunOne(graph, inputs, mine);
    });
  }
  for (std::thread& t : threads) t.join();
  return observed;
}

// Every process reports the single process's status and count, and the
// processes' rows, stacked, are its outputs.
Observed ExpectSameAsOneProcess(const proto::Graph& graph,
                                const std::vector<HostArray>& inputs,
                                std::vector<int> counts,
                                interp::RunOptions options = {}) {
  options.threads = 1;
  Observed one = RunOne(graph, inputs, options);
  for (int processes : counts) {
    const std::vector<Observed> spread =
        RunSpread(graph, inputs, processes, options);
    for (int p = 0; p < processes; ++p) {
      EXPECT_EQ(spread[p].status.ToString(), one.status.ToString())
          << "process " << p << " of " << processes;
      EXPECT_EQ(spread[p].executed, one.executed)
          << "process " << p << " of " << processes;
    }
    if (!one.status.ok()) continue;
    for (size_t i = 0; i < one.outputs.size(); ++i) {
      std::string joined;
      bool per_rank = false;
      for (const proto::Tensor& t : graph.tensors()) {
        per_rank |= (t.name() == one.outputs[i].first ||
                     t.output_name() == one.outputs[i].first) &&
                    t.per_rank();
      }
      for (int p = 0; p < (per_rank ? processes : 1); ++p) {
        EXPECT_EQ(spread[p].outputs.size(), one.outputs.size());
        if (i < spread[p].outputs.size()) joined += spread[p].outputs[i].second;
      }
      EXPECT_TRUE(joined == one.outputs[i].second)
          << "output " << one.outputs[i].first << " differs over " << processes
          << " processes";
    }
  }
  return one;
}

// --- Kernels: outputs bit for bit -----------------------------------------

TEST(AcrossProcessesTest, RingKernelsGiveTheSingleProcessOutputs) {
  for (const char* kernel : {"fgcc", "fg_allgather"}) {
    std::vector<HostArray> inputs;
    std::vector<std::pair<std::string, std::string>> settings = {
        {"tp_degree", "4"}, {"m", "64"}, {"k", "128"}};
    if (std::string(kernel) == "fgcc") settings.push_back({"n", "128"});
    const proto::Graph graph = TraceKernel(kernel, settings, &inputs);
    const Observed o = ExpectSameAsOneProcess(graph, inputs, {2, 3, 4});
    EXPECT_TRUE(o.status.ok()) << kernel << ": " << o.status;
  }
}

TEST(AcrossProcessesTest, AllGatherAndAllReduceGiveTheSingleProcessOutputs) {
  std::vector<HostArray> inputs;
  const proto::Graph gather = TraceKernel("sb2sb_allgather",
                                          {{"tp_degree", "4"},
                                           {"num_groups", "2"},
                                           {"rows", "32"},
                                           {"width", "64"}},
                                          &inputs);
  EXPECT_TRUE(ExpectSameAsOneProcess(gather, inputs, {2, 3, 8}).status.ok());
  const proto::Graph decoder = TraceKernel(
      "transformer_tkg", {{"tp_degree", "4"}, {"num_layers", "1"}}, &inputs);
  EXPECT_TRUE(ExpectSameAsOneProcess(decoder, inputs, {2, 4}).status.ok());
}

TEST(AcrossProcessesTest, EachProcessHoldsDeviceMemoryForItsRanksOnly) {
  std::vector<HostArray> inputs;
  const proto::Graph graph = TraceKernel(
      "fgcc", {{"tp_degree", "4"}, {"m", "64"}, {"k", "128"}, {"n", "128"}},
      &inputs);
  absl::StatusOr<int64_t> all = interp::DeviceMemory::BytesNeeded(graph);
  ASSERT_TRUE(all.ok());
  const std::vector<Observed> spread = RunSpread(graph, inputs, 4);
  for (const Observed& o : spread) {
    ASSERT_TRUE(o.status.ok()) << o.status;
    EXPECT_EQ(o.device_bytes, *all / 4);
  }
}

// The race-detection state's share of the memory limit is split over the
// programs a process runs, not over every program of the run.
TEST(AcrossProcessesTest, RaceStateSharesAreSplitOverTheLocalPrograms) {
  absl::StatusOr<proto::Graph> graph = TraceWorld(4, 2, [&](Tracer& t) {
    const int c = t.program_id();
    Tensor y = t.Allocate({64, 64}, proto::FLOAT32, Buffer::kSharedHbm, "y");
    Tensor tile = builder::ndarray({1, 64}, proto::FLOAT32, Buffer::kSbuf, "t");
    isa::memset(tile, 1.0f);
    // Rows interleaved with the other core's: one interval each.
    for (int i = 0; i < 32; ++i) isa::dma_copy(y.Slice(0, 2 * i + c, 1), tile);
  });
  ASSERT_TRUE(graph.ok()) << graph.status();
  absl::StatusOr<int64_t> device = interp::DeviceMemory::BytesNeeded(*graph, 2);
  ASSERT_TRUE(device.ok());
  interp::RunOptions options;
  options.memory_limit_bytes = *device + 2048;
  const std::vector<Observed> spread = RunSpread(*graph, {}, 2, options);
  for (const Observed& o : spread) {
    // "... needs more than N bytes for this program, its share of the M".
    const std::string message(o.status.message());
    const size_t at = message.find("needs more than ");
    ASSERT_NE(at, std::string::npos) << o.status;
    int64_t share = 0;
    int64_t total = 0;
    ASSERT_EQ(std::sscanf(message.c_str() + at,
                          "needs more than %ld bytes for this program, its "
                          "share of the %ld",
                          &share, &total),
              2)
        << message;
    EXPECT_EQ(share, total / 4) << message;  // 2 ranks x 2 cores here
  }
}

// --- Errors: the single process's first ----------------------------------

// 4 ranks x 2 cores; each program copies row idx[rank][core] of an 8-row
// table, then after a core barrier row idx2[rank][core]: 99 is out of
// bounds. `work` memsets come before the first copy.
struct TwoRounds {
  proto::Graph graph;
  int64_t first_read[2] = {-1, -1};
};

TwoRounds TraceTwoRounds(int work) {
  TwoRounds g;
  absl::StatusOr<proto::Graph> graph = TraceWorld(4, 2, [&](Tracer& t) {
    const int c = t.program_id();
    Tensor table = t.Input("table", {8, 64}, proto::FLOAT32, false);
    Tensor idx = t.Input("idx", {2}, proto::INT32);
    Tensor idx2 = t.Input("idx2", {2}, proto::INT32);
    Tensor flag = t.Allocate({1}, proto::INT32, Buffer::kSharedHbm, "flag");
    Tensor tile = builder::ndarray({1, 64}, proto::FLOAT32, Buffer::kSbuf, "t");
    for (int i = 0; i < work * c; ++i) {
      isa::memset(tile, static_cast<float>(i));
    }
    g.first_read[c] = isa::dma_copy(tile, table.Slice(0, 0, 1).WithScalarOffset(
                                              idx.Slice(0, c, 1), 0))
                          .id;
    isa::core_barrier(flag);
    isa::dma_copy(
        tile, table.Slice(0, 0, 1).WithScalarOffset(idx2.Slice(0, c, 1), 0));
  });
  EXPECT_TRUE(graph.ok()) << graph.status();
  if (graph.ok()) g.graph = *std::move(graph);
  return g;
}

TEST(AcrossProcessesTest, TheFirstFailingProgramInOneThreadOrderIsReported) {
  const TwoRounds g = TraceTwoRounds(200);
  // Rank 3 (the last process's) fails at once, rank 1 core 1 after its
  // work: every process reports rank 1's.
  const Observed o =
      ExpectSameAsOneProcess(g.graph,
                             {Ints("idx", {4, 2}, {0, 0, 0, 99, 0, 0, 99, 0}),
                              Ints("idx2", {4, 2}, std::vector<int32_t>(8, 0))},
                             {2, 3, 4});
  EXPECT_THAT(o.status.message(),
              HasSubstr(absl::StrCat("rank 1 core 1 instruction #",
                                     g.first_read[1], " dma_copy")));
  // An earlier round's failure in a later process comes first.
  const Observed later =
      ExpectSameAsOneProcess(g.graph,
                             {Ints("idx", {4, 2}, {0, 0, 0, 0, 0, 0, 0, 99}),
                              Ints("idx2", {4, 2}, {99, 0, 0, 0, 0, 0, 0, 0})},
                             {2, 4});
  EXPECT_THAT(later.status.message(), HasSubstr("rank 3 core 1"));
}

TEST(AcrossProcessesTest, ACollectiveReadingUnwrittenMemoryFailsAlike) {
  int64_t gather = -1;
  absl::StatusOr<proto::Graph> graph = TraceWorld(4, 1, [&](Tracer& t) {
    Tensor src = builder::ndarray({4, 8}, proto::FLOAT32, Buffer::kSbuf, "s");
    Tensor dst = builder::ndarray({4, 32}, proto::FLOAT32, Buffer::kSbuf, "d");
    Tensor out = t.Allocate({4, 32}, proto::FLOAT32, Buffer::kSharedHbm, "o");
    gather = isa::all_gather(dst, src, 1).id;
    isa::dma_copy(out, dst);
    t.Output("out", out);
  });
  ASSERT_TRUE(graph.ok()) << graph.status();
  const Observed o = ExpectSameAsOneProcess(*graph, {}, {2, 3, 4});
  EXPECT_THAT(o.status.message(),
              HasSubstr(absl::StrCat("instruction #", gather, " all_gather")));
}

// Core 0 of every rank all-gathers into a shared tensor core 1 of its rank
// read with no barrier between: every member's write races. Each process
// sees only its own members' writes fail; all report rank 0's, the first
// a single process meets.
TEST(AcrossProcessesTest, ACollectiveWriteFailingInOneProcessIsReportedByAll) {
  int64_t gather = -1;
  absl::StatusOr<proto::Graph> graph = TraceWorld(4, 2, [&](Tracer& t) {
    const int c = t.program_id();
    Tensor x = t.Input("x", {8}, proto::FLOAT32);
    Tensor y = t.Allocate({32}, proto::FLOAT32, Buffer::kSharedHbm, "y");
    Tensor tile = builder::ndarray({1, 32}, proto::FLOAT32, Buffer::kSbuf, "t");
    if (c == 1) {
      isa::memset(tile, 0.0f);
      isa::dma_copy(y.Reshape({1, 32}), tile);
    } else {
      gather = isa::all_gather(y, x, 0).id;
    }
  });
  ASSERT_TRUE(graph.ok()) << graph.status();
  const Observed o = ExpectSameAsOneProcess(*graph, {}, {2, 4});
  const std::optional<Diagnostic> d = DiagnosticOf(o.status);
  ASSERT_TRUE(d.has_value()) << o.status;
  EXPECT_EQ(d->kind, DiagnosticKind::kRace) << o.status;
  EXPECT_EQ(d->rank, 0) << o.status;
  EXPECT_EQ(d->instruction_id, gather) << o.status;
}

TEST(AcrossProcessesTest, ADeadlockIsReportedAsInOneProcess) {
  int64_t extra = -1;
  absl::StatusOr<proto::Graph> graph = TraceWorld(4, 2, [&](Tracer& t) {
    const int c = t.program_id();
    Tensor flag = t.Allocate({1}, proto::INT32, Buffer::kSharedHbm, "flag");
    Tensor x = t.Input("x", {4, 64}, proto::FLOAT32);
    Tensor tile = builder::ndarray({2, 64}, proto::FLOAT32, Buffer::kSbuf, "t");
    isa::dma_copy(tile, x.Slice(0, 2 * c, 2));
    isa::core_barrier(flag);
    if (c == 1) extra = isa::core_barrier(flag).id;  // core 0 never comes
  });
  ASSERT_TRUE(graph.ok()) << graph.status();
  const Observed o = ExpectSameAsOneProcess(*graph, {}, {2, 3, 4});
  const std::optional<Diagnostic> d = DiagnosticOf(o.status);
  ASSERT_TRUE(d.has_value()) << o.status;
  EXPECT_EQ(d->kind, DiagnosticKind::kDeadlock);
  ASSERT_EQ(d->notes.size(), 8u);
  EXPECT_EQ(d->notes[7].instruction_id, extra);
  EXPECT_EQ(d->notes[7].rank, 3);
}

TEST(AcrossProcessesTest, TheStepLimitStopsAtTheSameInstruction) {
  std::vector<HostArray> inputs;
  const proto::Graph graph = TraceKernel(
      "fgcc", {{"tp_degree", "4"}, {"m", "64"}, {"k", "128"}, {"n", "128"}},
      &inputs);
  for (int64_t steps : {37, 200}) {
    interp::RunOptions options;
    options.max_steps = steps;
    const Observed o = ExpectSameAsOneProcess(graph, inputs, {2, 3}, options);
    EXPECT_THAT(o.status.message(), HasSubstr("--max-steps"));
  }
}

// --- Dumps: every write as one thread reports it ---------------------------

// What a dump sees in one process: each write reported, keyed by its
// sequence number, tensor, instruction and program, with the tensor's
// bytes then; after the run, every tensor the filter passes as each
// program this process holds sees it.
struct Dumped {
  absl::Status status;
  std::map<std::string, std::string> files;
  int64_t events = 0;
};

using TensorFilter = std::function<bool(const proto::Tensor&)>;

Dumped RunDumped(const proto::Graph& graph,
                 const std::vector<HostArray>& inputs,
                 interp::Transport* transport, const TensorFilter& filter,
                 int64_t max_steps) {
  Dumped d;
  interp::RunOptions options;
  options.transport = transport;
  options.max_steps = max_steps;
  options.write_filter = filter;
  const interp::Interpreter* reader = nullptr;
  options.on_write = [&](const interp::RunOptions::WriteEvent& e) {
    ++d.events;
    absl::StatusOr<HostArray> array =
        reader->ReadTensor(e.tensor->id(), e.rank, e.core,
                           interp::Interpreter::HostForm::kRawBits16);
    ASSERT_TRUE(array.ok()) << array.status();
    const std::string key =
        absl::StrCat(e.sequence, " ", e.tensor->name(), " i", e.instr->id(),
                     " r", e.rank, " c", e.core);
    EXPECT_TRUE(d.files.emplace(key, HostArrayBytes(*array)).second) << key;
  };
  absl::StatusOr<std::unique_ptr<interp::Interpreter>> created =
      interp::Interpreter::Create(graph, options);
  if (!created.ok()) {
    d.status = created.status();
    return d;
  }
  interp::Interpreter& interp = **created;
  reader = &interp;
  if (absl::Status s = testing::GiveInputs(interp, inputs); !s.ok()) {
    d.status = s;
    return d;
  }
  d.status = interp.Run();
  const interp::RankBlock held = interp.HeldRanks();
  for (const proto::Tensor& t : graph.tensors()) {
    if (filter && !filter(t)) continue;
    const int core =
        t.space() == proto::SHARED_HBM ? 0 : static_cast<int>(t.core());
    for (int rank = held.first; rank < held.end; ++rank) {
      absl::StatusOr<HostArray> array = interp.ReadTensor(
          t.id(), rank, core, interp::Interpreter::HostForm::kRawBits16);
      EXPECT_TRUE(array.ok()) << array.status();
      if (array.ok()) {
        d.files[absl::StrCat("final ", t.name(), " t", t.id(), " r", rank, " c",
                             core)] = HostArrayBytes(*array);
      }
    }
  }
  return d;
}

// Over each count of processes (threads), the processes' dumps together
// are the single process's, and each reports its status; returns the
// single process's.
Dumped ExpectSameDumps(const proto::Graph& graph,
                       const std::vector<HostArray>& inputs,
                       const std::vector<int>& counts,
                       const TensorFilter& filter = nullptr,
                       int64_t max_steps = 0) {
  const Dumped one = RunDumped(graph, inputs, nullptr, filter, max_steps);
  // The sequence numbers are 0, 1, ... in one process.
  std::vector<bool> seen(one.events, false);
  for (const auto& [key, bytes] : one.files) {
    int64_t sequence = -1;
    if (absl::SimpleAtoi(key.substr(0, key.find(' ')), &sequence)) {
      EXPECT_TRUE(sequence >= 0 && sequence < one.events) << key;
      if (sequence >= 0 && sequence < one.events) seen[sequence] = true;
    }
  }
  EXPECT_EQ(std::count(seen.begin(), seen.end(), true), one.events);
  for (int processes : counts) {
    testing::ThreadedWorld world(processes);
    std::vector<Dumped> spread(processes);
    std::vector<std::thread> threads;
    for (int p = 0; p < processes; ++p) {
      threads.emplace_back([&, p] {
        spread[p] = RunDumped(graph, inputs, &world.at(p), filter, max_steps);
      });
    }
    for (std::thread& t : threads) t.join();
    std::map<std::string, std::string> joined;
    for (int p = 0; p < processes; ++p) {
      EXPECT_EQ(spread[p].status.ToString(), one.status.ToString())
          << "process " << p << " of " << processes;
      for (const auto& [key, bytes] : spread[p].files) {
        EXPECT_TRUE(joined.emplace(key, bytes).second)
            << key << " dumped twice over " << processes << " processes";
      }
    }
    EXPECT_EQ(joined.size(), one.files.size()) << processes << " processes";
    for (const auto& [key, bytes] : one.files) {
      const auto it = joined.find(key);
      if (it == joined.end()) {
        ADD_FAILURE() << key << " missing over " << processes << " processes";
      } else if (it->second != bytes) {
        ADD_FAILURE() << key << " differs over " << processes << " processes";
      }
    }
    for (const auto& [key, bytes] : joined) {
      EXPECT_TRUE(one.files.count(key))
          << key << " only over " << processes << " processes";
    }
  }
  return one;
}

TEST(AcrossProcessesTest, DumpsAreTheSingleProcesss) {
  std::vector<HostArray> inputs;
  const proto::Graph graph = TraceKernel(
      "fgcc", {{"tp_degree", "4"}, {"m", "64"}, {"k", "128"}, {"n", "128"}},
      &inputs);
  const Dumped one = ExpectSameDumps(graph, inputs, {2, 3, 4});
  EXPECT_TRUE(one.status.ok()) << one.status;
  EXPECT_GT(one.events, 0);
  // A filter: only the named tensors' writes are numbered.
  const Dumped out =
      ExpectSameDumps(graph, inputs, {3},
                      [](const proto::Tensor& t) { return t.name() == "out"; });
  EXPECT_GT(out.events, 0);
  EXPECT_LT(out.events, one.events);
  // Stopped at the step limit, in the middle of a round.
  for (int64_t steps : {37, 200}) {
    const Dumped stopped =
        ExpectSameDumps(graph, inputs, {2, 3}, nullptr, steps);
    EXPECT_THAT(stopped.status.message(), HasSubstr("--max-steps"));
  }
}

// The first error in the first round is rank 1's, in a middle process: the
// programs after it in one-thread order (ranks 2 and 3) never run, and the
// state they are left in is dumped as one process leaves it.
TEST(AcrossProcessesTest, DumpsStopAtAnErrorInAMiddleProcess) {
  const TwoRounds g = TraceTwoRounds(3);
  const Dumped first =
      ExpectSameDumps(g.graph,
                      {Ints("idx", {4, 2}, {0, 1, 2, 99, 4, 5, 6, 7}),
                       Ints("idx2", {4, 2}, std::vector<int32_t>(8, 0))},
                      {2, 3, 4});
  EXPECT_THAT(first.status.message(), HasSubstr("rank 1 core 1"));
  // In the second round: rank 3 has not run it when rank 2 fails.
  const Dumped second =
      ExpectSameDumps(g.graph,
                      {Ints("idx", {4, 2}, {0, 1, 2, 3, 4, 5, 6, 7}),
                       Ints("idx2", {4, 2}, {0, 0, 0, 0, 0, 99, 0, 0})},
                      {2, 3, 4});
  EXPECT_THAT(second.status.message(), HasSubstr("rank 2 core 1"));
}

TEST(AcrossProcessesTest, DumpsOfADeadlockedRunAreTheSingleProcesss) {
  absl::StatusOr<proto::Graph> graph = TraceWorld(4, 2, [&](Tracer& t) {
    const int c = t.program_id();
    Tensor flag = t.Allocate({1}, proto::INT32, Buffer::kSharedHbm, "flag");
    Tensor x = t.Input("x", {4, 64}, proto::FLOAT32);
    Tensor tile = builder::ndarray({2, 64}, proto::FLOAT32, Buffer::kSbuf, "t");
    isa::dma_copy(tile, x.Slice(0, 2 * c, 2));
    isa::core_barrier(flag);
    isa::memset(tile, 1.0f);
    if (c == 1) isa::core_barrier(flag);  // core 0 never comes
  });
  ASSERT_TRUE(graph.ok()) << graph.status();
  const Dumped one = ExpectSameDumps(*graph, {}, {2, 3, 4});
  EXPECT_THAT(one.status.message(), HasSubstr("deadlock"));
}

// Rank 0's member of an all-gather fails (its shared destination races
// with core 1's write); one process stops there, before the other members
// are written. A process holding later members has written them by the
// time it learns of the failure, and puts them back.
TEST(AcrossProcessesTest, DumpsOfACollectiveFailingInAnEarlyMember) {
  int64_t gather = -1;
  absl::StatusOr<proto::Graph> graph = TraceWorld(4, 2, [&](Tracer& t) {
    const int c = t.program_id();
    Tensor x = t.Input("x", {1, 32}, proto::FLOAT32);
    Tensor idx = t.Input("idx", {1}, proto::INT32);
    Tensor y = t.Allocate({8, 32}, proto::FLOAT32, Buffer::kSharedHbm, "y");
    Tensor tile = builder::ndarray({1, 32}, proto::FLOAT32, Buffer::kSbuf, "t");
    if (c == 1) {
      // Row idx of y: one core 0 gathers into where idx is below 4.
      isa::memset(tile, 2.0f);
      isa::dma_copy(y.Slice(0, 0, 1).WithScalarOffset(idx.Slice(0, 0, 1), 0),
                    tile);
    } else {
      gather = isa::all_gather(y.Slice(0, 0, 4), x, 0).id;
    }
  });
  ASSERT_TRUE(graph.ok()) << graph.status();
  const Dumped one =
      ExpectSameDumps(*graph, {Ints("idx", {4, 1}, {0, 4, 4, 4})}, {2, 3, 4});
  const std::optional<Diagnostic> d = DiagnosticOf(one.status);
  ASSERT_TRUE(d.has_value()) << one.status;
  EXPECT_EQ(d->kind, DiagnosticKind::kRace) << one.status;
  EXPECT_EQ(d->rank, 0) << one.status;
  EXPECT_EQ(d->instruction_id, gather) << one.status;
}

// A process whose peer never answers fails with the transport's error at
// its timeout instead of waiting for ever.
TEST(AcrossProcessesTest, AProcessWhosePeerIsGoneStopsAtTheTimeout) {
  std::vector<HostArray> inputs;
  const proto::Graph graph = TraceKernel(
      "fgcc", {{"tp_degree", "4"}, {"m", "64"}, {"k", "128"}, {"n", "128"}},
      &inputs);
  testing::ThreadedWorld world(2, /*timeout_seconds=*/0.5);
  world.Stop(1);  // process 1 never runs
  interp::RunOptions options;
  options.transport = &world.at(0);
  const auto start = std::chrono::steady_clock::now();
  const Observed o = RunOne(graph, inputs, options);
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
          .count();
  EXPECT_TRUE(absl::IsDeadlineExceeded(o.status)) << o.status;
  EXPECT_THAT(o.status.message(), HasSubstr("no answer from process 1"));
  EXPECT_LT(seconds, 10);
}

// Process 1 writes one element in every fourth row of a 4 MiB HBM tensor
// (each a block written in part: a page of per-byte shadow state charged
// as touched) under a limit 32 KiB above its device memory, and goes over
// it; process 0 has room. Both stop at the end of the first round with
// process 1's error, the same instruction count: none waits for the other
// at the next round until its timeout.
TEST(AcrossProcessesTest, AProcessOverItsMemoryBudgetStopsWithTheOthers) {
  absl::StatusOr<proto::Graph> graph = TraceWorld(2, 1, [&](Tracer& t) {
    Tensor y =
        t.Allocate({1024, 1024}, proto::FLOAT32, Buffer::kSharedHbm, "y");
    Tensor x = t.Allocate({1, 1}, proto::FLOAT32, Buffer::kSharedHbm, "x");
    Tensor z = t.Allocate({1, 1}, proto::FLOAT32, Buffer::kSharedHbm, "z");
    Tensor tile = builder::ndarray({1, 1}, proto::FLOAT32, Buffer::kSbuf, "t");
    isa::memset(tile, 1.0f);
    for (int i = 0; i < 64; ++i) {
      isa::dma_copy(y.Slice(0, 4 * i, 1).Slice(1, 0, 1), tile);
    }
    isa::dma_copy(x, tile);
    isa::all_reduce(z, x);
    isa::dma_copy(x, z);  // a second round
    isa::all_reduce(z, x);
    t.Output("z", z);
  });
  ASSERT_TRUE(graph.ok()) << graph.status();
  absl::StatusOr<int64_t> device = interp::DeviceMemory::BytesNeeded(*graph, 1);
  ASSERT_TRUE(device.ok()) << device.status();
  testing::ThreadedWorld world(2, /*timeout_seconds=*/5);
  std::vector<Observed> observed(2);
  std::vector<std::thread> threads;
  const auto start = std::chrono::steady_clock::now();
  for (int p = 0; p < 2; ++p) {
    threads.emplace_back([&, p] {
      interp::RunOptions options;
      options.transport = &world.at(p);
      options.threads = 1;
      if (p == 1) options.memory_limit_bytes = *device + 32 * 1024;
      observed[p] = RunOne(*graph, {}, options);
    });
  }
  for (std::thread& t : threads) t.join();
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
          .count();
  for (int p = 0; p < 2; ++p) {
    EXPECT_TRUE(absl::IsResourceExhausted(observed[p].status))
        << "process " << p << ": " << observed[p].status;
    EXPECT_THAT(
        observed[p].status.message(),
        HasSubstr("over the limit of " + std::to_string(*device + 32 * 1024)))
        << "process " << p;
    // The memset, the 65 copies and the all-reduce of each rank.
    EXPECT_EQ(observed[p].executed, 2 * 67) << "process " << p;
  }
  EXPECT_EQ(observed[0].status, observed[1].status);
  EXPECT_LT(seconds, 5);
}

// --- What a run across processes refuses ---------------------------------

TEST(AcrossProcessesTest, MoreProcessesThanRanksAreRefused) {
  absl::StatusOr<proto::Graph> graph = testing::TraceWorld(2, 1, [](Tracer& t) {
    Tensor x = t.Input("x", {4}, proto::FLOAT32);
    Tensor out = t.Allocate({4}, proto::FLOAT32, Buffer::kSharedHbm, "o");
    isa::dma_copy(out, x);
    t.Output("out", out);
  });
  ASSERT_TRUE(graph.ok());
  EXPECT_THAT(RunSpread(*graph, {}, 3)[0].status.message(),
              HasSubstr("3 processes but the graph only 2 rank(s)"));
}

TEST(AcrossProcessesTest, BlocksAreContiguousAndEven) {
  EXPECT_EQ(interp::BlockOf(0, 3, 4).first, 0);
  EXPECT_EQ(interp::BlockOf(0, 3, 4).end, 1);
  EXPECT_EQ(interp::BlockOf(1, 3, 4).end, 2);
  EXPECT_EQ(interp::BlockOf(2, 3, 4).first, 2);
  EXPECT_EQ(interp::BlockOf(2, 3, 4).end, 4);
  for (int rank = 0; rank < 4; ++rank) {
    const int p = interp::ProcessOfRank(rank, 3, 4);
    EXPECT_TRUE(interp::BlockOf(p, 3, 4).Holds(rank)) << rank;
  }
}

}  // namespace
}  // namespace nkigraph
