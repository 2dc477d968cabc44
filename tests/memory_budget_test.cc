// The memory budget every run shares (util/memory_budget.h) and what the
// interpreter charges to it: device memory, random inputs, race state.
#include "util/memory_budget.h"

#include <atomic>
#include <fstream>
#include <memory>
#include <random>
#include <string>
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
#include "util/mapped_file.h"

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

// Touched memory is recorded past the limit; the budget then names the
// first charge that went over and what it was for, the figure held then.
TEST(MemoryBudgetTest, TouchedChargesPastTheLimitNameTheFirstOver) {
  MemoryBudget budget(100);
  budget.ChargeTouched(60, "pages of a");
  EXPECT_TRUE(budget.Overdrawn().ok());
  budget.ChargeTouched(50, "pages of b");
  budget.ChargeTouched(30, "pages of c");
  EXPECT_EQ(budget.used(), 140);
  EXPECT_EQ(budget.peak(), 140);
  EXPECT_EQ(budget.Overdrawn().message(),
            "the run needed 110 bytes (pages of b), over the limit of 100 "
            "(raise --memory-limit)");
  budget.Release(140);
  EXPECT_EQ(budget.used(), 0);
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

TEST(InterpreterBudgetTest, RandomInputsAreDrawnInPlaceAChunkAtATime) {
  const proto::Graph graph = CopyGraph();
  absl::StatusOr<int64_t> device = interp::DeviceMemory::BytesNeeded(graph);
  ASSERT_TRUE(device.ok());
  // Create wants room for one instruction's operand buffers (2 x 128
  // bytes) beside the device; then the caller's own arrays take all but
  // `room` of it. The values go straight into device memory: the host
  // holds one chunk of 16,384 float32 and int32 draws, 131,072 bytes,
  // however large the inputs.
  constexpr int64_t kChunkBytes = 16384 * 8;
  constexpr int64_t kSpare = kChunkBytes + 300;
  for (const int64_t room : {kChunkBytes - 1, kChunkBytes}) {
    SCOPED_TRACE(room);
    MemoryBudget budget(*device + kSpare);
    interp::RunOptions options;
    options.budget = &budget;
    absl::StatusOr<std::unique_ptr<interp::Interpreter>> interp =
        interp::Interpreter::Create(graph, options);
    ASSERT_TRUE(interp.ok()) << interp.status();
    ASSERT_TRUE(budget.Charge(kSpare - room, "the caller's arrays").ok());
    const absl::Status filled = (*interp)->FillRandomInputs(1);
    if (room < kChunkBytes) {
      EXPECT_TRUE(absl::IsResourceExhausted(filled));
      EXPECT_THAT(filled.message(),
                  HasSubstr("131072 more bytes of host memory for drawing "
                            "random inputs"));
    } else {
      EXPECT_TRUE(filled.ok()) << filled;
      // Released once drawn.
      EXPECT_EQ(budget.used(), *device + kSpare - room);
      EXPECT_TRUE((*interp)->Run().ok());
    }
  }
}

// The first 32 values of x as the generator draws them: one mt19937_64
// call per value, its top 24 bits scaled to [-1, 1).
TEST(InterpreterBudgetTest, RandomInputsKeepTheirDraws) {
  const proto::Graph graph = CopyGraph();
  absl::StatusOr<std::unique_ptr<interp::Interpreter>> interp =
      interp::Interpreter::Create(graph);
  ASSERT_TRUE(interp.ok()) << interp.status();
  ASSERT_TRUE((*interp)->FillRandomInputs(5).ok());
  absl::StatusOr<HostArray> x = (*interp)->ReadTensor(1, 0, 0);
  ASSERT_TRUE(x.ok()) << x.status();
  std::mt19937_64 rng(5);
  ASSERT_EQ(x->f32.size(), 32u);
  for (float v : x->f32) {
    EXPECT_EQ(v, static_cast<float>(rng() >> 40) / 8388608.0f - 1.0f);
  }
}

// A memory of 4 MiB or more charges its per-byte shadow pages as writes
// in part first touch them, a 4 KiB page at a time; past the limit the
// charge is recorded and the budget says it is overdrawn.
TEST(MemoryBudgetTest, LargeShadowsChargeTheirPagesAsTouched) {
  constexpr int64_t kBytes = int64_t{8} << 20;
  // A summary byte per 64-byte block, nothing per byte up front.
  EXPECT_EQ(interp::Shadow::AllocatedBytes(kBytes), kBytes / 64);
  MemoryBudget budget(kBytes / 64 + 8192);
  {
    absl::StatusOr<interp::Shadow> shadow =
        interp::Shadow::Allocate(kBytes, &budget);
    ASSERT_TRUE(shadow.ok()) << shadow.status();
    EXPECT_EQ(budget.used(), kBytes / 64);
    // Whole blocks keep one state: no page touched.
    shadow->Set(0, 4096, interp::kInitialized);
    EXPECT_EQ(budget.used(), kBytes / 64);
    // A block written in part touches its page of per-byte states, once.
    shadow->Set(4096 + 3, 10, interp::kInitialized);
    EXPECT_EQ(budget.used(), kBytes / 64 + 4096);
    shadow->Set(4096 + 100, 7, interp::kInitialized);
    EXPECT_EQ(budget.used(), kBytes / 64 + 4096);
    EXPECT_TRUE(shadow->All(4096 + 3, 10, interp::kInitialized));
    EXPECT_FALSE(shadow->All(4096, 10, interp::kInitialized));
    EXPECT_TRUE(budget.Overdrawn().ok());
    // Two more pages: the second goes past the limit, recorded anyway.
    shadow->Set(3 * 4096 + 1, 1, interp::kInitialized);
    shadow->Set(5 * 4096 + 1, 1, interp::kInitialized);
    EXPECT_EQ(budget.used(), kBytes / 64 + 3 * 4096);
    EXPECT_TRUE(absl::IsResourceExhausted(budget.Overdrawn()));
    EXPECT_THAT(budget.Overdrawn().message(),
                HasSubstr("raise --memory-limit"));
  }
  EXPECT_EQ(budget.used(), 0);
}

// An input file's pages mapped into device memory hold its bytes; writing
// them changes the device's copy, never the file. Where the file's bytes
// cannot line up with pages they are copied.
TEST(MemoryBudgetTest, FilePagesMapIntoDeviceMemoryCopyOnWrite) {
  // As /proc/self/maps names it: no doubled slash.
  std::string dir = ::testing::TempDir();
  while (!dir.empty() && dir.back() == '/') dir.pop_back();
  const std::string path = absl::StrCat(dir, "/map_file_test.bin");
  std::string contents(5 * 4096, '\0');
  for (size_t i = 0; i < contents.size(); ++i) {
    contents[i] = static_cast<char>(i * 7 + 1);
  }
  {
    std::ofstream out(path, std::ios::binary);
    out << contents;
  }
  absl::StatusOr<MappedFile> file = MappedFile::Open(path);
  ASSERT_TRUE(file.ok()) << file.status();
  const auto* mapped = reinterpret_cast<const uint8_t*>(file->bytes().data());
  // The mappings of the file in this process.
  const auto mappings_of_file = [&] {
    std::ifstream maps("/proc/self/maps");
    int count = 0;
    for (std::string line; std::getline(maps, line);) {
      count += line.find(path) != std::string::npos;
    }
    return count;
  };
  ASSERT_EQ(mappings_of_file(), 1);  // MappedFile's own
  // {device byte, file byte}: 100 and 4196 lie as far into their pages
  // (the whole pages between are mapped); 4096 and 4160 do not (copied).
  for (const auto& [at, file_offset] :
       {std::pair<int64_t, int64_t>{100, 4196}, {4096, 4160}}) {
    SCOPED_TRACE(at);
    absl::StatusOr<interp::ByteBuffer> device =
        interp::ByteBuffer::Allocate(6 * 4096);
    ASSERT_TRUE(device.ok());
    const int64_t length = 3 * 4096 + 50;
    ASSERT_TRUE(
        device
            ->MapFile(at, length, file->fd(), file_offset, mapped + file_offset)
            .ok());
    EXPECT_EQ(mappings_of_file(), at == 100 ? 2 : 1);
    for (int64_t k = 0; k < length; ++k) {
      ASSERT_EQ((*device)[at + k], mapped[file_offset + k]) << k;
    }
    EXPECT_EQ((*device)[at - 1], 0);
    EXPECT_EQ((*device)[at + length], 0);
    (*device)[at + 5000] ^= 0xFF;
    EXPECT_NE((*device)[at + 5000], mapped[file_offset + 5000]);
  }
  EXPECT_EQ(std::string(file->bytes()), contents);
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
