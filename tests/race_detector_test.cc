// The race detector's sparse state: the interval map it keeps per rank,
// its exact agreement with a byte-by-byte model, the static pass that
// decides which shared tensors it follows, and whole graphs whose races
// sit inside, across or beside earlier accesses.
#include "interp/race_detector.h"

#include <cstdint>
#include <map>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "interp/device_memory.h"
#include "interp/interval_map.h"
#include "interp/race_scope.h"
#include "tests/test_util.h"

namespace nkigraph {
namespace {

using builder::Buffer;
using builder::Tensor;
using builder::Tracer;
namespace isa = builder::isa;
using interp::IntervalMap;
using interp::RaceDetector;
using interp::RaceScope;
using ::testing::AllOf;
using testing::Floats;
using ::testing::HasSubstr;
using testing::RunGraph;
using testing::TraceWorld;

using Outputs = std::map<std::string, HostArray>;

// ---------------------------------------------------------------------------
// IntervalMap

struct Span {
  int64_t begin, end, value;
  bool operator==(const Span& o) const {
    return begin == o.begin && end == o.end && value == o.value;
  }
};

std::vector<Span> Contents(const IntervalMap<int64_t>& map) {
  std::vector<Span> spans;
  map.Visit(INT64_MIN, INT64_MAX, [&](int64_t b, int64_t e, int64_t v) {
    spans.push_back({b, e, v});
    return false;
  });
  return spans;
}

TEST(IntervalMapTest, UpdatesSplitAndRemergeIntervals) {
  IntervalMap<int64_t> map;
  map.Update(0, 1000, [](int64_t& v) { v = 7; });
  EXPECT_EQ(Contents(map), (std::vector<Span>{{0, 1000, 7}}));
  map.Update(400, 410, [](int64_t& v) { v += 1; });  // the middle
  EXPECT_EQ(Contents(map),
            (std::vector<Span>{{0, 400, 7}, {400, 410, 8}, {410, 1000, 7}}));
  map.Update(400, 410, [](int64_t& v) { v -= 1; });  // equal again: one run
  EXPECT_EQ(Contents(map), (std::vector<Span>{{0, 1000, 7}}));
  EXPECT_EQ(map.size(), 1);
}

TEST(IntervalMapTest, UpdatesFillGapsFromTheDefaultValue) {
  IntervalMap<int64_t> map;
  map.Update(10, 20, [](int64_t& v) { v = 1; });
  map.Update(30, 40, [](int64_t& v) { v = 1; });
  map.Update(0, 50, [](int64_t& v) { v += 2; });
  EXPECT_EQ(
      Contents(map),
      (std::vector<Span>{
          {0, 10, 2}, {10, 20, 3}, {20, 30, 2}, {30, 40, 3}, {40, 50, 2}}));
}

TEST(IntervalMapTest, VisitClipsToTheRangeAndStopsWhenAsked) {
  IntervalMap<int64_t> map;
  map.Update(0, 100, [](int64_t& v) { v = 1; });
  map.Update(100, 200, [](int64_t& v) { v = 2; });
  std::vector<Span> seen;
  map.Visit(50, 150, [&](int64_t b, int64_t e, int64_t v) {
    seen.push_back({b, e, v});
    return false;
  });
  EXPECT_EQ(seen, (std::vector<Span>{{50, 100, 1}, {100, 150, 2}}));
  seen.clear();
  map.Visit(50, 150, [&](int64_t b, int64_t e, int64_t v) {
    seen.push_back({b, e, v});
    return true;
  });
  EXPECT_EQ(seen, (std::vector<Span>{{50, 100, 1}}));
}

// Agrees with a plain array under random updates.
TEST(IntervalMapTest, MatchesAnArrayUnderRandomUpdates) {
  constexpr int kBytes = 96;
  std::mt19937 rng(5);
  IntervalMap<int64_t> map;
  std::vector<int64_t> plain(kBytes, 0);
  for (int step = 0; step < 4000; ++step) {
    const int b = static_cast<int>(rng() % kBytes);
    const int e = b + 1 + static_cast<int>(rng() % (kBytes - b));
    const int64_t value = rng() % 3;
    map.Update(b, e, [&](int64_t& v) { v = (v + value) % 3; });
    for (int i = b; i < e; ++i) plain[i] = (plain[i] + value) % 3;
    std::vector<int64_t> flat(kBytes, 0);
    int64_t previous_end = -1, previous_value = -1;
    for (const Span& s : Contents(map)) {
      // Coarsest: touching intervals always differ.
      if (s.begin == previous_end) {
        ASSERT_NE(s.value, previous_value);
      }
      for (int64_t i = s.begin; i < s.end; ++i) flat[i] = s.value;
      previous_end = s.end;
      previous_value = s.value;
    }
    ASSERT_EQ(flat, plain) << "step " << step;
  }
}

// ---------------------------------------------------------------------------
// RaceDetector against the byte-by-byte model it replaces

// The previous detector's rules, one state per byte. Checks a whole access
// before recording it, as RaceDetector does.
class ByteModel {
 public:
  ByteModel(int bytes) : state_(bytes) {}

  std::optional<RaceDetector::Conflict> Access(int core, int64_t offset,
                                               int64_t length, bool write,
                                               uint32_t instr) {
    for (int64_t i = offset; i < offset + length; ++i) {
      const State& s = state_[i];
      if (s.write_core >= 0 && s.write_core != core &&
          s.write_epoch > clock_[core][s.write_core]) {
        return RaceDetector::Conflict{i, s.write_core, s.write_instr, true};
      }
      if (write && s.read_epoch[1 - core] > clock_[core][1 - core]) {
        return RaceDetector::Conflict{i, 1 - core, s.read_instr[1 - core],
                                      false};
      }
    }
    for (int64_t i = offset; i < offset + length; ++i) {
      State& s = state_[i];
      if (write) {
        s.write_core = core;
        s.write_epoch = clock_[core][core];
        s.write_instr = instr;
      } else {
        s.read_epoch[core] = clock_[core][core];
        s.read_instr[core] = instr;
      }
    }
    return std::nullopt;
  }

  void Sync() {
    for (int o = 0; o < 2; ++o) {
      clock_[0][o] = clock_[1][o] = std::max(clock_[0][o], clock_[1][o]);
    }
    ++clock_[0][0];
    ++clock_[1][1];
  }

 private:
  struct State {
    int write_core = -1;
    uint32_t write_epoch = 0, write_instr = 0;
    uint32_t read_epoch[2] = {0, 0}, read_instr[2] = {0, 0};
  };
  std::vector<State> state_;
  uint32_t clock_[2][2] = {{1, 0}, {0, 1}};
};

TEST(RaceDetectorTest, AgreesWithTheByteModelOnRandomAccesses) {
  constexpr int kBytes = 64;
  for (uint32_t seed = 0; seed < 20; ++seed) {
    std::mt19937 rng(seed);
    RaceDetector detector(/*num_ranks=*/1, /*num_cores=*/2);
    ByteModel model(kBytes);
    int conflicts = 0;
    for (uint32_t instr = 1; instr < 600; ++instr) {
      if (rng() % 16 == 0) {
        const int cores[] = {0, 1};
        detector.Sync(0, cores);
        model.Sync();
        continue;
      }
      const int core = static_cast<int>(rng() % 2);
      const bool write = rng() % 3 == 0;
      const int64_t offset = rng() % kBytes;
      const int64_t length = 1 + rng() % std::min<int64_t>(16, kBytes - offset);
      const auto got = detector.Access(0, core, offset, length, write, instr);
      const auto want = model.Access(core, offset, length, write, instr);
      ASSERT_EQ(got.has_value(), want.has_value())
          << "seed " << seed << " instr " << instr;
      if (!got) continue;
      ++conflicts;
      EXPECT_EQ(got->offset, want->offset);
      EXPECT_EQ(got->other_core, want->other_core);
      EXPECT_EQ(got->other_instr, want->other_instr);
      EXPECT_EQ(got->other_was_write, want->other_was_write);
    }
    EXPECT_GT(conflicts, 0) << "seed " << seed << " exercised no race";
  }
}

TEST(RaceDetectorTest, FindsARaceInTheMiddleOfAWideWrite) {
  RaceDetector detector(1, 2);
  EXPECT_FALSE(detector.Access(0, 0, 0, 1 << 30, /*write=*/true, 1));
  const auto conflict = detector.Access(0, 1, 123456789, 4, false, 2);
  ASSERT_TRUE(conflict.has_value());
  EXPECT_EQ(conflict->offset, 123456789);
  EXPECT_EQ(conflict->other_core, 0);
  EXPECT_EQ(conflict->other_instr, 1u);
  EXPECT_TRUE(conflict->other_was_write);
  EXPECT_EQ(detector.intervals(), 1);  // a racing access is not recorded
}

TEST(RaceDetectorTest, PartialOverlapReportsTheFirstSharedByte) {
  RaceDetector detector(1, 2);
  EXPECT_FALSE(detector.Access(0, 0, 100, 100, /*write=*/false, 1));
  const auto conflict = detector.Access(0, 1, 50, 100, /*write=*/true, 2);
  ASSERT_TRUE(conflict.has_value());
  EXPECT_EQ(conflict->offset, 100);
  EXPECT_FALSE(conflict->other_was_write);
}

TEST(RaceDetectorTest, AdjacentAccessesOfTwoCoresDoNotRace) {
  RaceDetector detector(1, 2);
  EXPECT_FALSE(detector.Access(0, 0, 0, 4096, true, 1));
  EXPECT_FALSE(detector.Access(0, 1, 4096, 4096, true, 2));
  EXPECT_FALSE(detector.Access(0, 1, 4096, 4096, false, 3));
  EXPECT_FALSE(detector.Access(0, 0, 0, 4096, false, 4));
  EXPECT_EQ(detector.intervals(), 2);
}

TEST(RaceDetectorTest, RanksAreIndependent) {
  RaceDetector detector(2, 2);
  EXPECT_FALSE(detector.Access(0, 0, 0, 8, true, 1));
  EXPECT_FALSE(detector.Access(1, 1, 0, 8, true, 1));
  EXPECT_TRUE(detector.Access(0, 1, 0, 8, true, 2).has_value());
}

TEST(RaceDetectorTest, StateStaysSmallForAHugeTensorWrittenInRuns) {
  RaceDetector detector(1, 2);
  constexpr int64_t kRow = 1 << 20;
  // Two cores write alternate 1 MiB rows of a 1 GiB tensor, synchronise,
  // then each reads the whole tensor: in each core's own record, one
  // interval per row at most.
  for (int64_t row = 0; row < 1024; ++row) {
    ASSERT_FALSE(detector.Access(0, row % 2, row * kRow, kRow, true,
                                 static_cast<uint32_t>(row % 2 + 1)));
  }
  const int cores[] = {0, 1};
  detector.Sync(0, cores);
  ASSERT_FALSE(detector.Access(0, 0, 0, 1024 * kRow, false, 3));
  ASSERT_FALSE(detector.Access(0, 1, 0, 1024 * kRow, false, 4));
  EXPECT_LE(detector.intervals(0, 0), 1024);
  EXPECT_LE(detector.intervals(0, 1), 1024);
  EXPECT_LT(detector.StateBytes(), 1 << 20);
}

// ---------------------------------------------------------------------------
// ComputeRaceScopes

RaceScope ScopeOf(const proto::Graph& graph,
                  const std::vector<RaceScope>& scopes,
                  absl::string_view name) {
  for (const proto::Tensor& t : graph.tensors()) {
    if (t.name() == name) return scopes[t.id() - 1];
  }
  ADD_FAILURE() << "no tensor " << name;
  return RaceScope::kNone;
}

TEST(RaceScopeTest, FollowsOnlySharedTensorsTwoCoresNameAndOneWrites) {
  absl::StatusOr<proto::Graph> graph = TraceWorld(1, 2, [&](Tracer& t) {
    const int c = t.program_id();
    Tensor x = t.Input("x", {2, 4}, proto::FLOAT32);
    Tensor idx = t.Input("idx", {1}, proto::INT32);
    Tensor out = t.Allocate({2, 4}, proto::FLOAT32, Buffer::kSharedHbm, "o");
    Tensor mine = t.Allocate({4}, proto::FLOAT32, Buffer::kSharedHbm, "mine");
    Tensor sel = t.Allocate({1}, proto::INT32, Buffer::kSharedHbm, "sel");
    Tensor tile = builder::ndarray({1, 4}, proto::FLOAT32, Buffer::kSbuf, "t");
    isa::dma_copy(out.Select(0, c), x.Select(0, c));
    if (c == 0) {
      isa::dma_copy(mine, x.Select(0, 0));
      isa::dma_copy(sel, idx);
    }
    if (c == 1) {
      // Reads `sel` only as a dynamic offset: that still names it.
      isa::dma_copy(tile, x.Slice(0, 0, 1).WithScalarOffset(sel, 0));
    }
    t.Output("out", out);
  });
  ASSERT_TRUE(graph.ok()) << graph.status();
  const std::vector<RaceScope> scopes = interp::ComputeRaceScopes(*graph);
  EXPECT_EQ(ScopeOf(*graph, scopes, "x"), RaceScope::kReadOnly);
  EXPECT_EQ(ScopeOf(*graph, scopes, "idx"), RaceScope::kOneCore);
  EXPECT_EQ(ScopeOf(*graph, scopes, "out"), RaceScope::kTracked);
  EXPECT_EQ(ScopeOf(*graph, scopes, "mine"), RaceScope::kOneCore);
  EXPECT_EQ(ScopeOf(*graph, scopes, "sel"), RaceScope::kTracked);
  EXPECT_EQ(ScopeOf(*graph, scopes, "t"), RaceScope::kNone);
}

TEST(RaceScopeTest, OverlappingSharedTensorsShareOneVerdict) {
  absl::StatusOr<proto::Graph> graph = TraceWorld(1, 2, [&](Tracer& t) {
    const int c = t.program_id();
    Tensor x = t.Input("x", {4}, proto::FLOAT32);
    Tensor a = t.Allocate({4}, proto::FLOAT32, Buffer::kSharedHbm, "a");
    Tensor b = t.Allocate({4}, proto::FLOAT32, Buffer::kSharedHbm, "b");
    if (c == 0) isa::dma_copy(a, x);
    if (c == 1) isa::dma_copy(b, x);
    t.Output("a", a);
    t.Output("b", b);
  });
  ASSERT_TRUE(graph.ok()) << graph.status();
  std::vector<RaceScope> scopes = interp::ComputeRaceScopes(*graph);
  EXPECT_EQ(ScopeOf(*graph, scopes, "a"), RaceScope::kOneCore);
  EXPECT_EQ(ScopeOf(*graph, scopes, "b"), RaceScope::kOneCore);
  // Laid over the same bytes, each core's writes can race with the other's.
  int64_t a_address = 0;
  for (const proto::Tensor& t : graph->tensors()) {
    if (t.name() == "a") a_address = t.address();
  }
  for (proto::Tensor& t : *graph->mutable_tensors()) {
    if (t.name() == "b") t.set_address(a_address + 8);
  }
  scopes = interp::ComputeRaceScopes(*graph);
  EXPECT_EQ(ScopeOf(*graph, scopes, "a"), RaceScope::kTracked);
  EXPECT_EQ(ScopeOf(*graph, scopes, "b"), RaceScope::kTracked);
  absl::StatusOr<Outputs> out =
      RunGraph(*graph, {Floats("x", {4}, {1, 2, 3, 4})});
  ASSERT_FALSE(out.ok());
  EXPECT_THAT(out.status().message(),
              HasSubstr("data race on shared_hbm tensor 'b' element [0]"));
}

// ---------------------------------------------------------------------------
// Whole graphs

// Core 0 writes all of a [64, 64] shared tensor, then core 1 (unsynchronised)
// accesses rows `rows` from `first`, columns [17, 20).
absl::Status WideThenNarrow(int64_t first, int64_t rows, bool write) {
  absl::StatusOr<proto::Graph> graph = TraceWorld(1, 2, [&](Tracer& t) {
    const int c = t.program_id();
    Tensor x = t.Input("x", {64, 64}, proto::FLOAT32);
    Tensor out = t.Allocate({64, 64}, proto::FLOAT32, Buffer::kSharedHbm, "o");
    Tensor other =
        t.Allocate({64, 64}, proto::FLOAT32, Buffer::kSharedHbm, "p");
    if (c == 0) isa::dma_copy(out, x);
    if (c == 1) {
      Tensor cols = out.Slice(0, first, rows).Slice(1, 17, 3);
      Tensor mine = other.Slice(0, first, rows).Slice(1, 17, 3);
      if (write) {
        isa::dma_copy(cols, x.Slice(0, first, rows).Slice(1, 17, 3));
      } else {
        isa::dma_copy(mine, cols);
      }
    }
    t.Output("out", out);
    t.Output("other", other);
  });
  if (!graph.ok()) return graph.status();
  std::vector<float> values(64 * 64, 1.0f);
  return RunGraph(*graph, {Floats("x", {64, 64}, values)}).status();
}

TEST(RaceGraphTest, AReadInTheMiddleOfAnEarlierWideWriteRaces) {
  const absl::Status status = WideThenNarrow(40, 1, /*write=*/false);
  EXPECT_THAT(status.message(),
              AllOf(HasSubstr("data race on shared_hbm tensor 'out' element "
                              "[40, 17]"),
                    HasSubstr("this read on core 1 and a write on core 0")));
}

TEST(RaceGraphTest, AWriteInTheMiddleOfAnEarlierWideWriteRaces) {
  const absl::Status status = WideThenNarrow(63, 1, /*write=*/true);
  EXPECT_THAT(status.message(),
              AllOf(HasSubstr("element [63, 17]"),
                    HasSubstr("this write on core 1 and a write on core 0")));
}

// Core 0 writes rows [a, a + 10), then core 1 rows [b, b + 10).
absl::Status OverlappingRows(int64_t a, int64_t b, bool barrier) {
  absl::StatusOr<proto::Graph> graph = TraceWorld(1, 2, [&](Tracer& t) {
    const int c = t.program_id();
    Tensor x = t.Input("x", {32, 8}, proto::FLOAT32);
    Tensor out = t.Allocate({32, 8}, proto::FLOAT32, Buffer::kSharedHbm, "o");
    Tensor flag = t.Allocate({1}, proto::INT32, Buffer::kSharedHbm, "flag");
    if (c == 0) isa::dma_copy(out.Slice(0, a, 10), x.Slice(0, a, 10));
    if (barrier) isa::core_barrier(flag);
    if (c == 1) isa::dma_copy(out.Slice(0, b, 10), x.Slice(0, b, 10));
    t.Output("out", out);
  });
  if (!graph.ok()) return graph.status();
  return RunGraph(*graph, {Floats("x", {32, 8}, std::vector<float>(256, 2))})
      .status();
}

TEST(RaceGraphTest, PartialOverlapsRaceAtTheFirstSharedElement) {
  EXPECT_THAT(OverlappingRows(0, 6, false).message(),
              HasSubstr("tensor 'out' element [6, 0]"));
  EXPECT_THAT(OverlappingRows(6, 0, false).message(),
              HasSubstr("tensor 'out' element [6, 0]"));
  EXPECT_TRUE(OverlappingRows(0, 6, true).ok());
}

TEST(RaceGraphTest, AdjacentRowsOfTwoCoresDoNotRace) {
  EXPECT_TRUE(OverlappingRows(0, 10, false).ok());
  EXPECT_TRUE(OverlappingRows(10, 0, false).ok());
}

// Each core writes half of a 16 MiB shared tensor and, after a barrier,
// copies the other half. Dense per-byte race state would need 28 bytes per
// byte of HBM (over 1 GiB here); the device memory plus room for one
// instruction's operand buffers is plenty now.
TEST(RaceGraphTest, ALargeSharedTensorNeedsLittleRaceState) {
  constexpr int64_t kRows = 2048, kCols = 2048;
  absl::StatusOr<proto::Graph> graph = TraceWorld(1, 2, [&](Tracer& t) {
    const int c = t.program_id();
    Tensor x = t.Input("x", {kRows / 2, kCols}, proto::FLOAT32);
    Tensor out =
        t.Allocate({kRows, kCols}, proto::FLOAT32, Buffer::kSharedHbm, "o");
    Tensor copy =
        t.Allocate({kRows, kCols}, proto::FLOAT32, Buffer::kSharedHbm, "copy");
    Tensor flag = t.Allocate({1}, proto::INT32, Buffer::kSharedHbm, "flag");
    isa::dma_copy(out.Slice(0, c * kRows / 2, kRows / 2), x);
    isa::core_barrier(flag);
    isa::dma_copy(copy.Slice(0, (1 - c) * kRows / 2, kRows / 2),
                  out.Slice(0, (1 - c) * kRows / 2, kRows / 2));
    t.Output("out", copy);
  });
  ASSERT_TRUE(graph.ok()) << graph.status();
  absl::StatusOr<int64_t> device = interp::DeviceMemory::BytesNeeded(*graph);
  ASSERT_TRUE(device.ok());
  interp::RunOptions options;
  options.memory_limit_bytes = *device + (20 << 20);
  absl::StatusOr<std::unique_ptr<interp::Interpreter>> interp =
      interp::Interpreter::Create(*graph, options);
  ASSERT_TRUE(interp.ok()) << interp.status();
  ASSERT_TRUE((*interp)->FillRandomInputs(1).ok());
  const absl::Status status = (*interp)->Run();
  EXPECT_TRUE(status.ok()) << status;
}

// A pattern that leaves one interval per element grows the state; past
// the memory limit the run stops with a clear error instead of swapping.
TEST(RaceGraphTest, RaceStateBeyondTheMemoryLimitIsAnError) {
  // Every other element per core: 65536 one-element intervals.
  absl::StatusOr<proto::Graph> graph = testing::TraceInterleavedSharedCopy(1);
  ASSERT_TRUE(graph.ok()) << graph.status();
  absl::StatusOr<int64_t> device = interp::DeviceMemory::BytesNeeded(*graph);
  ASSERT_TRUE(device.ok());
  interp::RunOptions options;
  options.memory_limit_bytes = *device + (1 << 20);
  absl::StatusOr<std::unique_ptr<interp::Interpreter>> interp =
      interp::Interpreter::Create(*graph, options);
  ASSERT_TRUE(interp.ok()) << interp.status();
  ASSERT_TRUE((*interp)->FillRandomInputs(1).ok());
  const absl::Status status = (*interp)->Run();
  EXPECT_THAT(status.message(), AllOf(HasSubstr("race-detection state"),
                                      HasSubstr("raise --memory-limit")));
  // With room, the same graph runs.
  options.memory_limit_bytes = *device + (64 << 20);
  interp = interp::Interpreter::Create(*graph, options);
  ASSERT_TRUE(interp.ok()) << interp.status();
  ASSERT_TRUE((*interp)->FillRandomInputs(1).ok());
  EXPECT_TRUE((*interp)->Run().ok());
}

}  // namespace
}  // namespace nkigraph
