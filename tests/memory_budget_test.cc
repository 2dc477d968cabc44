// The memory budget every run shares (util/memory_budget.h) and what the
// interpreter charges to it: device memory, random inputs, race state.
#include "util/memory_budget.h"

#include <atomic>
#include <memory>
#include <thread>
#include <vector>

#include "builder/isa.h"
#include "builder/tracer.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "interp/byte_buffer.h"
#include "interp/device_memory.h"
#include "interp/interpreter.h"
#include "interp/shadow.h"
#include "tests/test_util.h"
#include "util/diagnostic.h"

namespace nkigraph {
namespace {

using builder::Buffer;
using builder::Tensor;
using builder::Tracer;
namespace isa = builder::isa;
using ::testing::AllOf;
using ::testing::HasSubstr;

TEST(MemoryBudgetTest, ChargesUpToTheLimitAndRefusesPastItNamingWhat) {
  MemoryBudget budget(100);
  EXPECT_TRUE(budget.Charge(60, "the first thing").ok());
  EXPECT_TRUE(budget.Charge(40, "the second thing").ok());
  EXPECT_EQ(budget.used(), 100);
  const absl::Status over = budget.Charge(1, "host memory for output 'out'");
  EXPECT_TRUE(absl::IsResourceExhausted(over));
  EXPECT_EQ(over.message(),
            "the run needs 1 more bytes of host memory for output 'out'; with "
            "the 100 bytes already held that is over the limit of 100 (raise "
            "--memory-limit)");
  const std::optional<Diagnostic> d = DiagnosticOf(over);
  ASSERT_TRUE(d.has_value());
  EXPECT_EQ(d->kind, DiagnosticKind::kResource);
  EXPECT_EQ(budget.used(), 100);  // a refused charge is not recorded
  budget.Release(60);
  EXPECT_EQ(budget.used(), 40);
  EXPECT_EQ(budget.peak(), 100);
  EXPECT_EQ(budget.available(), 60);
  EXPECT_FALSE(budget.Charge(-1, "nothing").ok());
}

TEST(MemoryBudgetTest, ScopedChargesReleaseWhenTheyEnd) {
  MemoryBudget budget(10);
  {
    ScopedCharge a(&budget, 7, "a");
    ASSERT_TRUE(a.status().ok());
    ScopedCharge b(&budget, 7, "b");  // refused: nothing to release
    EXPECT_FALSE(b.status().ok());
    EXPECT_EQ(budget.used(), 7);
    ScopedCharge moved = std::move(a);
    EXPECT_EQ(budget.used(), 7);
  }
  EXPECT_EQ(budget.used(), 0);
}

TEST(MemoryBudgetTest, ChargesFromManyThreadsAddUpExactly) {
  MemoryBudget budget(1000);
  std::vector<std::thread> threads;
  std::atomic<int> granted{0};
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&] {
      for (int i = 0; i < 1000; ++i) {
        if (budget.Charge(1, "one byte").ok()) ++granted;
      }
    });
  }
  for (std::thread& thread : threads) thread.join();
  EXPECT_EQ(granted.load(), 1000);
  EXPECT_EQ(budget.used(), 1000);
}

TEST(MemoryBudgetTest, HostArrayBytesSaturate) {
  EXPECT_EQ(HostArrayBytes(10), 40);
  EXPECT_EQ(HostArrayBytes(10, /*raw_bits16=*/true), 20);
  EXPECT_EQ(HostArrayBytes(int64_t{1} << 62), INT64_MAX);
  EXPECT_EQ(HostArrayBytes(-3), 0);
}

TEST(MemoryBudgetTest, DeviceBuffersAreChargedAsAllocatedAndReleasedWithThem) {
  MemoryBudget budget(1 << 20);
  {
    absl::StatusOr<interp::ByteBuffer> data =
        interp::ByteBuffer::Allocate(1000, &budget);
    ASSERT_TRUE(data.ok()) << data.status();
    EXPECT_EQ(budget.used(), 1000);
    // A shadow of 1000 bytes: a byte per byte and one per 64-byte block
    // (16 blocks, the last in part).
    EXPECT_EQ(interp::Shadow::AllocatedBytes(1000), 1016);
    absl::StatusOr<interp::Shadow> shadow =
        interp::Shadow::Allocate(1000, &budget);
    ASSERT_TRUE(shadow.ok()) << shadow.status();
    EXPECT_EQ(budget.used(), 2016);
    // Moving a buffer moves its charge: released once, by its last owner.
    interp::ByteBuffer moved = *std::move(data);
    EXPECT_EQ(budget.used(), 2016);
  }
  EXPECT_EQ(budget.used(), 0);
  // Refused before anything is mapped, naming what was asked for.
  MemoryBudget small(999);
  absl::StatusOr<interp::ByteBuffer> refused =
      interp::ByteBuffer::Allocate(1000, &small);
  ASSERT_FALSE(refused.ok());
  EXPECT_TRUE(absl::IsResourceExhausted(refused.status()));
  EXPECT_THAT(refused.status().message(),
              HasSubstr("1000 more bytes of device memory and its shadow "
                        "state"));
  EXPECT_EQ(small.used(), 0);
}

// x [4, 8] float32 copied to an output through SBUF.
proto::Graph CopyGraph() {
  absl::StatusOr<proto::Graph> graph = testing::Trace1([](Tracer& t) {
    Tensor x = t.Input("x", {4, 8}, proto::FLOAT32);
    Tensor out = t.Allocate({4, 8}, proto::FLOAT32, Buffer::kSharedHbm, "o");
    Tensor s = builder::ndarray({4, 8}, proto::FLOAT32, Buffer::kSbuf, "s");
    isa::dma_copy(s, x);
    isa::dma_copy(out, s);
    t.Output("out", out);
  });
  EXPECT_TRUE(graph.ok()) << graph.status();
  return *graph;
}

TEST(InterpreterBudgetTest, DeviceMemoryIsChargedToASharedBudgetAndReleased) {
  const proto::Graph graph = CopyGraph();
  absl::StatusOr<int64_t> device = interp::DeviceMemory::BytesNeeded(graph);
  ASSERT_TRUE(device.ok());
  MemoryBudget budget(*device + 1000);
  // What the caller already holds counts: with 1001 bytes held the device
  // no longer fits.
  ASSERT_TRUE(budget.Charge(1001, "host arrays").ok());
  interp::RunOptions options;
  options.budget = &budget;
  absl::StatusOr<std::unique_ptr<interp::Interpreter>> refused =
      interp::Interpreter::Create(graph, options);
  ASSERT_FALSE(refused.ok());
  EXPECT_TRUE(absl::IsResourceExhausted(refused.status()));
  EXPECT_THAT(refused.status().message(),
              AllOf(HasSubstr("bytes of device memory"),
                    HasSubstr("with the 1001 bytes already held"),
                    HasSubstr("raise --memory-limit")));
  budget.Release(1001);
  {
    absl::StatusOr<std::unique_ptr<interp::Interpreter>> created =
        interp::Interpreter::Create(graph, options);
    ASSERT_TRUE(created.ok()) << created.status();
    EXPECT_EQ(budget.used(), *device);
  }
  EXPECT_EQ(budget.used(), 0);
}

TEST(InterpreterBudgetTest, RandomInputsAreChargedAsHostArrays) {
  const proto::Graph graph = CopyGraph();
  absl::StatusOr<int64_t> device = interp::DeviceMemory::BytesNeeded(graph);
  ASSERT_TRUE(device.ok());
  // Create wants room for one instruction's operand buffers (2 x 128
  // bytes) beside the device; then the caller's own arrays take all but
  // `room` of it. x is 32 float32 values on the host before it is loaded:
  // 128 bytes.
  constexpr int64_t kSpare = 300;
  for (const int64_t room : {int64_t{127}, int64_t{128}}) {
    SCOPED_TRACE(room);
    MemoryBudget budget(*device + kSpare);
    interp::RunOptions options;
    options.budget = &budget;
    absl::StatusOr<std::unique_ptr<interp::Interpreter>> interp =
        interp::Interpreter::Create(graph, options);
    ASSERT_TRUE(interp.ok()) << interp.status();
    ASSERT_TRUE(budget.Charge(kSpare - room, "the caller's arrays").ok());
    const absl::Status filled = (*interp)->FillRandomInputs(1);
    if (room < 128) {
      EXPECT_TRUE(absl::IsResourceExhausted(filled));
      EXPECT_THAT(filled.message(),
                  HasSubstr("128 more bytes of host memory for random input "
                            "'x'"));
    } else {
      EXPECT_TRUE(filled.ok()) << filled;
      // Released once loaded.
      EXPECT_EQ(budget.used(), *device + kSpare - room);
      EXPECT_TRUE((*interp)->Run().ok());
    }
  }
}

TEST(InterpreterBudgetTest, MaxStepsStopsAtTheNextInstruction) {
  const proto::Graph graph = CopyGraph();
  interp::RunOptions options;
  options.max_steps = 1;
  absl::StatusOr<std::unique_ptr<interp::Interpreter>> interp =
      interp::Interpreter::Create(graph, options);
  ASSERT_TRUE(interp.ok()) << interp.status();
  ASSERT_TRUE((*interp)->FillRandomInputs(1).ok());
  const absl::Status status = (*interp)->Run();
  EXPECT_TRUE(absl::IsResourceExhausted(status));
  const std::optional<Diagnostic> d = DiagnosticOf(status);
  ASSERT_TRUE(d.has_value());
  EXPECT_EQ(d->kind, DiagnosticKind::kResource);
  EXPECT_EQ(d->instruction_id, 1);
  EXPECT_EQ(d->opcode, "dma_copy");
  EXPECT_EQ((*interp)->instructions_executed(), 1);
}

// Two cores of one rank each copy every other element of shared HBM:
// 32768 one-element intervals of race-detection state per core.
TEST(InterpreterBudgetTest, RaceStateIsChargedAsItGrowsAndReleased) {
  absl::StatusOr<proto::Graph> graph = testing::TraceInterleavedSharedCopy(1);
  ASSERT_TRUE(graph.ok()) << graph.status();
  absl::StatusOr<int64_t> device = interp::DeviceMemory::BytesNeeded(*graph);
  ASSERT_TRUE(device.ok());
  MemoryBudget budget(*device + (256 << 20));
  interp::RunOptions options;
  options.budget = &budget;
  {
    absl::StatusOr<std::unique_ptr<interp::Interpreter>> interp =
        interp::Interpreter::Create(*graph, options);
    ASSERT_TRUE(interp.ok()) << interp.status();
    ASSERT_TRUE((*interp)->FillRandomInputs(1).ok());
    const int64_t before_run = budget.used();
    ASSERT_TRUE((*interp)->Run().ok());
    // At least a byte per interval of each core's map, in 64 KiB steps.
    const int64_t race = budget.used() - before_run;
    EXPECT_GE(race, 2 * 32768);
    EXPECT_EQ(race % (64 << 10), 0);
  }
  EXPECT_EQ(budget.used(), 0);
}

}  // namespace
}  // namespace nkigraph
