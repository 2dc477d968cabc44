// What a front-end in another language traces with: on-chip tensors on a
// heap it frees itself (OnChipHeap, Tracer::Release), views from raw
// patterns (Tracer::View), and its own source locations
// (Tracer::SetSourceOverride).
#include <cstdint>
#include <vector>

#include "builder/allocator.h"
#include "builder/emitter.h"
#include "builder/isa.h"
#include "builder/tracer.h"
#include "graph/validate.h"
#include "gtest/gtest.h"
#include "ops/device_profile.h"

namespace nkigraph {
namespace {

using builder::Buffer;
using builder::OnChipHeap;
using builder::Tensor;
using builder::TraceConfig;
using builder::Tracer;

const ops::DeviceProfile& Trn2() { return ops::ProfileFor(proto::TARGET_TRN2); }

TEST(OnChipHeapTest, FirstFitReusesFreedBytesAndKeepsAlignment) {
  OnChipHeap heap;
  heap.Reset();
  // SBUF tensors start on 64-byte boundaries.
  EXPECT_EQ(heap.Allocate(proto::SBUF, 100, 1, Trn2()).address, 0);
  EXPECT_EQ(heap.Allocate(proto::SBUF, 100, 2, Trn2()).address, 128);
  EXPECT_EQ(heap.Allocate(proto::SBUF, 100, 3, Trn2()).address, 256);
  ASSERT_TRUE(heap.Free(2));
  EXPECT_FALSE(heap.Free(2));
  // 64 bytes fit the gap tensor 2 left; 200 do not, and go after 3.
  EXPECT_EQ(heap.Allocate(proto::SBUF, 64, 4, Trn2()).address, 128);
  EXPECT_EQ(heap.Allocate(proto::SBUF, 200, 5, Trn2()).address, 384);
  EXPECT_EQ(heap.Live(), (std::vector<uint32_t>{1, 4, 3, 5}));
}

TEST(OnChipHeapTest, PsumTilesDoNotStraddleBanksAndOverflowIsReported) {
  OnChipHeap heap;
  heap.Reset();
  const int64_t bank = Trn2().psum_bank_bytes;  // 2 KiB
  EXPECT_EQ(heap.Allocate(proto::PSUM, 1500, 1, Trn2()).address, 0);
  // 1000 bytes from 1500 would cross into the second bank: it starts there.
  EXPECT_EQ(heap.Allocate(proto::PSUM, 1000, 2, Trn2()).address, bank);
  ASSERT_TRUE(heap.Free(1));
  EXPECT_EQ(heap.Allocate(proto::PSUM, 2048, 3, Trn2()).address, 0);
  // Nothing is left for a tile of the whole PSUM partition.
  const builder::OnChipStack::Placement full =
      heap.Allocate(proto::PSUM, Trn2().psum_partition_bytes, 4, Trn2());
  EXPECT_FALSE(full.fits(Trn2().psum_partition_bytes));
}

TEST(ExplicitReleaseTest, AReleasedTileEndsItsLiveRangeAndLendsItsBytes) {
  TraceConfig config;
  config.explicit_release = true;
  Tracer tracer(config);
  absl::StatusOr<proto::Graph> graph = tracer.Trace([](Tracer& t) {
    const int64_t half = Trn2().sbuf_partition_bytes / 2 / 4;
    Tensor a = t.Allocate({128, half}, proto::FLOAT32, Buffer::kSbuf, "a");
    Tensor b = t.Allocate({128, 8}, proto::FLOAT32, Buffer::kSbuf, "b");
    builder::isa::memset(a, 1.0f);
    builder::isa::memset(b, 2.0f);
    t.Release(a.id());
    // Half the partition again fits only because a's bytes came back.
    Tensor c = t.Allocate({128, half}, proto::FLOAT32, Buffer::kSbuf, "c");
    builder::isa::memset(c, 3.0f);
  });
  ASSERT_TRUE(graph.ok()) << graph.status();
  const proto::Tensor& a = graph->tensors(0);
  const proto::Tensor& c = graph->tensors(2);
  EXPECT_EQ(c.address(), a.address());
  EXPECT_EQ(a.live_begin(), 0u);
  EXPECT_EQ(a.live_end(), 2u);  // released after the two memsets
  EXPECT_EQ(c.live_begin(), 2u);
  EXPECT_EQ(c.live_end(), 3u);  // still live at the end of the stream
  EXPECT_TRUE(graph::ValidateGraph(*graph).empty());
}

TEST(ExplicitReleaseTest, ReleasingTwiceOrWithoutTheModeIsAnError) {
  TraceConfig config;
  config.explicit_release = true;
  Tracer tracer(config);
  absl::StatusOr<proto::Graph> graph = tracer.Trace([](Tracer& t) {
    Tensor a = t.Allocate({4, 4}, proto::FLOAT32, Buffer::kSbuf, "a");
    t.Release(a.id());
    t.Release(a.id());
  });
  ASSERT_FALSE(graph.ok());
  EXPECT_NE(graph.status().message().find("not a live on-chip tensor"),
            absl::string_view::npos)
      << graph.status();

  Tracer scoped(TraceConfig{});
  graph = scoped.Trace([](Tracer& t) {
    Tensor a = t.Allocate({4, 4}, proto::FLOAT32, Buffer::kSbuf, "a");
    t.Release(a.id());
  });
  ASSERT_FALSE(graph.ok());
  EXPECT_NE(graph.status().message().find("explicit_release"),
            absl::string_view::npos);
}

TEST(SourceOverrideTest, InstructionsAndErrorsNameTheFrontEndsLine) {
  Tracer tracer(TraceConfig{});
  absl::StatusOr<proto::Graph> graph = tracer.Trace([](Tracer& t) {
    Tensor a = t.Allocate({8, 4}, proto::FLOAT32, Buffer::kSbuf, "a");
    t.SetSourceOverride("kernel.py", 12);
    builder::isa::memset(a, 1.0f);
    // A view from a raw pattern: rows 2..5, columns 1..2.
    Tensor v = t.View(a.id(), 2 * 4 + 1, std::vector<int64_t>{4, 4, 1, 2});
    EXPECT_EQ(v.shape(), (builder::Shape{4, 2}));
    t.SetSourceOverride("kernel.py", 13);
    builder::isa::memset(v, 2.0f);
  });
  ASSERT_TRUE(graph.ok()) << graph.status();
  const auto& stream = graph->streams(0).instructions();
  ASSERT_EQ(stream.size(), 2);
  EXPECT_EQ(graph->files(static_cast<int>(stream[0].file())), "kernel.py");
  EXPECT_EQ(stream[0].line(), 12u);
  EXPECT_EQ(stream[1].line(), 13u);

  Tracer failing(TraceConfig{});
  graph = failing.Trace([](Tracer& t) {
    Tensor a = t.Allocate({8, 4}, proto::FLOAT32, Buffer::kSbuf, "a");
    t.SetSourceOverride("kernel.py", 40);
    // 5 partitions from partition 4 of 8: past the tensor.
    builder::isa::memset(
        t.View(a.id(), 4 * 4, std::vector<int64_t>{4, 5, 1, 4}), 0.0f);
  });
  ASSERT_FALSE(graph.ok());
  EXPECT_NE(graph.status().message().find("kernel.py:40"),
            absl::string_view::npos)
      << graph.status();
}

}  // namespace
}  // namespace nkigraph
