// The interpreter's checks (what a device or compiler would refuse): each
// fires on a graph built to violate it and names the instruction (id,
// opcode, kernel source line); the legal variants pass.
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "graph/validate.h"
#include "gtest/gtest.h"
#include "tests/test_util.h"
#include "util/diagnostic.h"

namespace nkigraph {
namespace {

using builder::Buffer;
using builder::OobMode;
using builder::Tensor;
using builder::Tracer;
namespace isa = builder::isa;
using ::testing::AllOf;
using ::testing::ElementsAre;
using testing::Floats;
using ::testing::HasSubstr;
using testing::Ints;
using ::testing::Not;
using testing::RunGraph;
using testing::Trace1;
using testing::TraceWorld;

using Outputs = std::map<std::string, HostArray>;

// How messages name an instruction recorded from this file.
std::string Where(int64_t id, absl::string_view opcode, int line) {
  return absl::StrCat("instruction #", id, " ", opcode,
                      " at tests/check_test.cc:", line);
}

proto::Tensor* FindTensor(proto::Graph& graph, absl::string_view name) {
  for (proto::Tensor& t : *graph.mutable_tensors()) {
    if (t.name() == name) return &t;
  }
  ADD_FAILURE() << "no tensor " << name;
  return graph.mutable_tensors(0);
}

std::string AllProblems(const proto::Graph& graph) {
  std::string all;
  for (const Diagnostic& problem : graph::ValidateGraph(graph)) {
    absl::StrAppend(&all, Render(problem), "\n");
  }
  return all;
}

// ---------------------------------------------------------------------------
// Out-of-bounds dynamic offsets (run time)

TEST(CheckDynamicOffsetTest, OutOfBoundsScalarOffsetFailsTheRun) {
  int64_t id = -1;
  int line = 0;
  absl::StatusOr<proto::Graph> graph = Trace1([&](Tracer& t) {
    Tensor table = t.Input("table", {4, 3}, proto::FLOAT32);
    Tensor e = t.Input("e", {1}, proto::INT32);
    Tensor row = t.Allocate({1, 3}, proto::FLOAT32, Buffer::kSharedHbm, "r");
    Tensor src = table.Slice(0, 0, 1).WithScalarOffset(e, 0);
    id = isa::dma_copy(row, src).id;
    line = __LINE__ - 1;
    t.Output("row", row);
  });
  ASSERT_TRUE(graph.ok()) << graph.status();
  const HostArray table = Floats("table", {4, 3}, std::vector<float>(12, 1));
  for (int e : {4, -1, 1000}) {
    absl::StatusOr<Outputs> out =
        RunGraph(*graph, {table, Ints("e", {1}, {e})});
    ASSERT_FALSE(out.ok()) << "e = " << e;
    EXPECT_EQ(out.status().code(), interp::kDeviceErrorCode);
    EXPECT_THAT(out.status().message(),
                AllOf(HasSubstr(Where(id, "dma_copy", line)),
                      HasSubstr(absl::StrCat("out-of-bounds dynamic offset: "
                                             "index ",
                                             e,
                                             " along dim 0 of 'table' "
                                             "(size 4)"))));
  }
  // The last row is in bounds.
  absl::StatusOr<Outputs> out = RunGraph(*graph, {table, Ints("e", {1}, {3})});
  EXPECT_TRUE(out.ok()) << out.status();
}

TEST(CheckDynamicOffsetTest, OutOfBoundsScalarOffsetIsSkippedWithOobSkip) {
  absl::StatusOr<proto::Graph> graph = Trace1([&](Tracer& t) {
    Tensor table = t.Input("table", {4, 3}, proto::FLOAT32);
    Tensor e = t.Input("e", {1}, proto::INT32);
    Tensor row = t.Allocate({1, 3}, proto::FLOAT32, Buffer::kSharedHbm, "r");
    Tensor tile = builder::ndarray({1, 3}, proto::FLOAT32, Buffer::kSbuf, "t");
    isa::memset(tile, 7.0f);
    isa::dma_copy(tile,
                  table.Slice(0, 0, 1).WithScalarOffset(e, 0, OobMode::kSkip));
    isa::dma_copy(row, tile);
    t.Output("row", row);
  });
  ASSERT_TRUE(graph.ok()) << graph.status();
  absl::StatusOr<Outputs> out =
      RunGraph(*graph, {Floats("table", {4, 3}, std::vector<float>(12, 1)),
                        Ints("e", {1}, {4})});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_THAT(out->at("row").f32, ElementsAre(7, 7, 7));
}

// ---------------------------------------------------------------------------
// Reads of memory never written

TEST(CheckUninitializedTest, ReadingNeverWrittenPsumNamesTheElement) {
  int64_t id = -1;
  int line = 0;
  absl::StatusOr<proto::Graph> graph = Trace1([&](Tracer& t) {
    Tensor out = t.Allocate({2, 2}, proto::FLOAT32, Buffer::kSharedHbm, "o");
    Tensor acc = builder::ndarray({2, 2}, proto::FLOAT32, Buffer::kPsum, "acc");
    Tensor s = builder::ndarray({2, 2}, proto::FLOAT32, Buffer::kSbuf, "s");
    id = isa::tensor_copy(s, acc).id;
    line = __LINE__ - 1;
    isa::dma_copy(out, s);
    t.Output("out", out);
  });
  ASSERT_TRUE(graph.ok()) << graph.status();
  absl::StatusOr<Outputs> out = RunGraph(*graph, {});
  ASSERT_FALSE(out.ok());
  EXPECT_EQ(out.status().code(), interp::kDeviceErrorCode);
  EXPECT_THAT(out.status().message(),
              AllOf(HasSubstr(Where(id, "tensor_copy", line)),
                    HasSubstr("reads never-written psum tensor 'acc' element "
                              "[0, 0]")));
}

TEST(CheckUninitializedTest, ReadingAPartlyWrittenTileNamesTheFirstHole) {
  int64_t id = -1;
  int line = 0;
  absl::StatusOr<proto::Graph> graph = Trace1([&](Tracer& t) {
    Tensor out = t.Allocate({2, 3}, proto::FLOAT32, Buffer::kSharedHbm, "o");
    Tensor s = builder::ndarray({2, 3}, proto::FLOAT32, Buffer::kSbuf, "s");
    isa::memset(s.Slice(0, 0, 1), 1.0f);  // row 0
    isa::memset(s.Slice(1, 0, 2), 2.0f);  // columns 0..1 of both rows
    id = isa::dma_copy(out, s).id;
    line = __LINE__ - 1;
    t.Output("out", out);
  });
  ASSERT_TRUE(graph.ok()) << graph.status();
  absl::StatusOr<Outputs> out = RunGraph(*graph, {});
  ASSERT_FALSE(out.ok());
  EXPECT_THAT(out.status().message(),
              AllOf(HasSubstr(Where(id, "dma_copy", line)),
                    HasSubstr("reads never-written sbuf tensor 's' element "
                              "[1, 2]")));
}

TEST(CheckUninitializedTest, ReadingNeverWrittenHbmScratch) {
  int64_t id = -1;
  int line = 0;
  absl::StatusOr<proto::Graph> graph = Trace1([&](Tracer& t) {
    Tensor scratch =
        t.Allocate({4}, proto::FLOAT32, Buffer::kSharedHbm, "scratch");
    Tensor out = t.Allocate({4}, proto::FLOAT32, Buffer::kSharedHbm, "o");
    id = isa::dma_copy(out, scratch).id;
    line = __LINE__ - 1;
    t.Output("out", out);
  });
  ASSERT_TRUE(graph.ok()) << graph.status();
  absl::StatusOr<Outputs> out = RunGraph(*graph, {});
  ASSERT_FALSE(out.ok());
  EXPECT_THAT(out.status().message(),
              AllOf(HasSubstr(Where(id, "dma_copy", line)),
                    HasSubstr("reads never-written shared_hbm tensor "
                              "'scratch' element [0]")));
}

// ---------------------------------------------------------------------------
// PSUM accumulation groups

// A [2, 2] matmul whose accumulation starts after `prepare` ran on acc.
absl::StatusOr<Outputs> AccumulateAfter(
    const std::function<void(const Tensor& acc, const Tensor& st)>& prepare,
    int64_t* id, int* line) {
  absl::StatusOr<proto::Graph> graph = Trace1([&](Tracer& t) {
    Tensor x = t.Input("x", {2, 2}, proto::FLOAT32);
    Tensor out = t.Allocate({2, 2}, proto::FLOAT32, Buffer::kSharedHbm, "o");
    Tensor st = builder::ndarray({2, 2}, proto::FLOAT32, Buffer::kSbuf, "st");
    Tensor acc = builder::ndarray({2, 2}, proto::FLOAT32, Buffer::kPsum, "acc");
    Tensor s = builder::ndarray({2, 2}, proto::FLOAT32, Buffer::kSbuf, "s");
    isa::dma_copy(st, x);
    prepare(acc, st);
    *id = isa::nc_matmul(acc, st, st, /*accumulate=*/true).id;
    *line = __LINE__ - 1;
    isa::tensor_copy(s, acc);
    isa::dma_copy(out, s);
    t.Output("out", out);
  });
  if (!graph.ok()) return graph.status();
  return RunGraph(*graph, {Floats("x", {2, 2}, {1, 0, 0, 1})});
}

TEST(CheckPsumAccumulateTest, AccumulateIntoMemsetPsumNoMatmulStarted) {
  int64_t id = -1;
  int line = 0;
  absl::StatusOr<Outputs> out = AccumulateAfter(
      [](const Tensor& acc, const Tensor&) { isa::memset(acc, 0.0f); }, &id,
      &line);
  ASSERT_FALSE(out.ok());
  EXPECT_EQ(out.status().code(), interp::kDeviceErrorCode);
  EXPECT_THAT(out.status().message(),
              AllOf(HasSubstr(Where(id, "nc_matmul", line)),
                    HasSubstr("no matmul started"),
                    HasSubstr("psum tensor 'acc' element [0, 0]")));
}

TEST(CheckPsumAccumulateTest, AccumulateIntoNeverWrittenPsum) {
  int64_t id = -1;
  int line = 0;
  absl::StatusOr<Outputs> out =
      AccumulateAfter([](const Tensor&, const Tensor&) {}, &id, &line);
  ASSERT_FALSE(out.ok());
  EXPECT_THAT(out.status().message(),
              AllOf(HasSubstr(Where(id, "nc_matmul", line)),
                    HasSubstr("no matmul started")));
}

TEST(CheckPsumAccumulateTest, AMemsetBetweenMatmulsClosesTheGroup) {
  int64_t id = -1;
  int line = 0;
  absl::StatusOr<Outputs> out = AccumulateAfter(
      [](const Tensor& acc, const Tensor& st) {
        isa::nc_matmul(acc, st, st);
        isa::memset(acc.Slice(1, 1, 1), 0.0f);  // column 1 only
      },
      &id, &line);
  ASSERT_FALSE(out.ok());
  EXPECT_THAT(
      out.status().message(),
      AllOf(HasSubstr(Where(id, "nc_matmul", line)),
            HasSubstr("no matmul started"), HasSubstr("element [0, 1]")));
}

TEST(CheckPsumAccumulateTest, AccumulateAfterAnOverwritingMatmulIsFine) {
  int64_t id = -1;
  int line = 0;
  absl::StatusOr<Outputs> out = AccumulateAfter(
      [](const Tensor& acc, const Tensor& st) { isa::nc_matmul(acc, st, st); },
      &id, &line);
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_THAT(out->at("out").f32, ElementsAre(2, 0, 0, 2));  // I + I
}

// ---------------------------------------------------------------------------
// DMA and PSUM

TEST(CheckDmaPsumTest, TracingADmaFromPsumIsRefused) {
  int line = 0;
  absl::StatusOr<proto::Graph> graph = Trace1([&](Tracer& t) {
    Tensor out = t.Allocate({2, 2}, proto::FLOAT32, Buffer::kSharedHbm, "o");
    Tensor acc = builder::ndarray({2, 2}, proto::FLOAT32, Buffer::kPsum, "acc");
    isa::memset(acc, 1.0f);
    isa::dma_copy(out, acc);
    line = __LINE__ - 1;
  });
  ASSERT_FALSE(graph.ok());
  EXPECT_THAT(graph.status().message(),
              AllOf(HasSubstr(absl::StrCat("tests/check_test.cc:", line)),
                    HasSubstr("DMA cannot access psum ('acc')")));
}

TEST(CheckDmaPsumTest, ValidatorRefusesAHandEditedDmaFromPsum) {
  int64_t id = -1;
  int line = 0;
  uint32_t psum_id = 0;
  absl::StatusOr<proto::Graph> graph = Trace1([&](Tracer& t) {
    Tensor out = t.Allocate({2, 2}, proto::FLOAT32, Buffer::kSharedHbm, "o");
    Tensor s = builder::ndarray({2, 2}, proto::FLOAT32, Buffer::kSbuf, "s");
    Tensor acc = builder::ndarray({2, 2}, proto::FLOAT32, Buffer::kPsum, "acc");
    psum_id = acc.id();
    isa::memset(s, 1.0f);
    isa::memset(acc, 1.0f);
    id = isa::dma_copy(out, s).id;
    line = __LINE__ - 1;
    t.Output("out", out);
  });
  ASSERT_TRUE(graph.ok()) << graph.status();
  ASSERT_TRUE(graph::ValidateGraph(*graph).empty()) << AllProblems(*graph);
  proto::Instruction* dma = graph->mutable_streams(0)->mutable_instructions(2);
  ASSERT_EQ(dma->opcode(), proto::DMA_COPY);
  testing::MutableOperandOf(dma, "src")->set_tensor_id(psum_id);
  EXPECT_THAT(AllProblems(*graph),
              AllOf(HasSubstr(Where(id, "dma_copy", line)),
                    HasSubstr("DMA cannot access psum ('acc')")));
  absl::StatusOr<std::unique_ptr<interp::Interpreter>> interp =
      interp::Interpreter::Create(*graph);
  ASSERT_FALSE(interp.ok());
  EXPECT_EQ(interp.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(interp.status().message(),
              HasSubstr("DMA cannot access psum ('acc')"));
}

// ---------------------------------------------------------------------------
// On-chip capacity, clobbering and lifetimes (validator, hand-edited graphs)

// Two [2, 2] fp32 SBUF tiles, a then b (allocated after a's first use),
// both live to the end, and a PSUM tile.
proto::Graph TwoLiveTiles() {
  absl::StatusOr<proto::Graph> graph = Trace1([](Tracer& t) {
    Tensor out = t.Allocate({2, 2}, proto::FLOAT32, Buffer::kSharedHbm, "o");
    Tensor a = builder::ndarray({2, 2}, proto::FLOAT32, Buffer::kSbuf, "a");
    isa::memset(a, 1.0f);
    Tensor b = builder::ndarray({2, 2}, proto::FLOAT32, Buffer::kSbuf, "b");
    isa::memset(b, 2.0f);
    Tensor p = builder::ndarray({2, 2}, proto::FLOAT32, Buffer::kPsum, "p");
    isa::memset(p, 3.0f);
    isa::tensor_tensor(a, a, b, isa::Alu::kAdd);
    isa::tensor_tensor(a, a, p, isa::Alu::kAdd);
    isa::dma_copy(out, a);
    t.Output("out", out);
  });
  EXPECT_TRUE(graph.ok()) << graph.status();
  return graph.ok() ? *graph : proto::Graph();
}

TEST(CheckOnChipTest, UneditedGraphIsValidAndRuns) {
  proto::Graph graph = TwoLiveTiles();
  EXPECT_EQ(AllProblems(graph), "");
  absl::StatusOr<Outputs> out = RunGraph(graph, {});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_THAT(out->at("out").f32, ElementsAre(6, 6, 6, 6));
}

TEST(CheckOnChipTest, SbufAddressBeyondCapacityIsRefused) {
  proto::Graph graph = TwoLiveTiles();
  proto::Tensor* b = FindTensor(graph, "b");
  b->set_address(224 * 1024 - 4);  // an 8-byte row crosses the end
  EXPECT_THAT(AllProblems(graph),
              HasSubstr(absl::StrCat("tensor ", b->id(),
                                     " ('b'): sbuf capacity exceeded: bytes "
                                     "[229372, 229380) of each partition, "
                                     "which holds 229376 on trn2")));
  b->set_address(224 * 1024 - 8);  // exactly fits
  EXPECT_THAT(AllProblems(graph), Not(HasSubstr("capacity")));
}

TEST(CheckOnChipTest, PsumAddressBeyondCapacityIsRefused) {
  proto::Graph graph = TwoLiveTiles();
  proto::Tensor* p = FindTensor(graph, "p");
  p->set_address(16 * 1024);
  EXPECT_THAT(AllProblems(graph),
              HasSubstr("('p'): psum capacity exceeded: bytes [16384, 16392) "
                        "of each partition, which holds 16384 on trn2"));
}

TEST(CheckOnChipTest, CapacityComesFromTheTarget) {
  // A 200 KiB row fits trn2's 224 KiB partitions but not trn1's 192 KiB.
  absl::StatusOr<proto::Graph> graph = Trace1([](Tracer&) {
    Tensor big =
        builder::ndarray({1, 50 * 1024}, proto::FLOAT32, Buffer::kSbuf, "big");
    isa::memset(big, 0.0f);
  });
  ASSERT_TRUE(graph.ok()) << graph.status();
  EXPECT_EQ(AllProblems(*graph), "");
  graph->mutable_world()->set_target(proto::TARGET_TRN1);
  EXPECT_THAT(AllProblems(*graph),
              HasSubstr("sbuf capacity exceeded: bytes [0, 204800) of each "
                        "partition, which holds 196608 on trn1"));
}

TEST(CheckOnChipTest, PartitionsBeyond128AreRefused) {
  proto::Graph graph = TwoLiveTiles();
  FindTensor(graph, "a")->set_partition_offset(127);
  EXPECT_THAT(AllProblems(graph),
              HasSubstr("('a'): spans partitions [127, 129); the device has "
                        "128"));
}

TEST(CheckOnChipTest, OverlappingLiveTilesWouldClobber) {
  proto::Graph graph = TwoLiveTiles();
  proto::Tensor* a = FindTensor(graph, "a");
  proto::Tensor* b = FindTensor(graph, "b");
  ASSERT_NE(a->address(), b->address());
  b->set_address(a->address() + 4);
  EXPECT_THAT(AllProblems(graph),
              HasSubstr(absl::StrCat("tensor ", b->id(),
                                     " ('b'): allocated at sbuf bytes [4, 12) "
                                     "over live tensor ",
                                     a->id(),
                                     " ('a', bytes [0, 8)); it "
                                     "would clobber it")));
  absl::StatusOr<std::unique_ptr<interp::Interpreter>> interp =
      interp::Interpreter::Create(graph);
  ASSERT_FALSE(interp.ok());
  EXPECT_THAT(interp.status().message(), HasSubstr("would clobber"));
  // Disjoint partitions at the same bytes do not overlap.
  b->set_address(a->address());
  b->set_partition_offset(32);
  EXPECT_THAT(AllProblems(graph), Not(HasSubstr("clobber")));
}

TEST(CheckOnChipTest, TilesOfSuccessiveScopesShareAddressesLegally) {
  absl::StatusOr<proto::Graph> graph = Trace1([](Tracer& t) {
    Tensor out = t.Allocate({2, 2}, proto::FLOAT32, Buffer::kSharedHbm, "o");
    for (int i = 0; i < 2; ++i) {
      builder::Scope scope("tile");
      Tensor s = builder::ndarray({2, 2}, proto::FLOAT32, Buffer::kSbuf, "s");
      isa::memset(s, static_cast<float>(i));
      isa::dma_copy(out, s);
    }
    t.Output("out", out);
  });
  ASSERT_TRUE(graph.ok()) << graph.status();
  ASSERT_EQ(graph->tensors(1).address(), graph->tensors(2).address());
  EXPECT_EQ(AllProblems(*graph), "");
  // Stretching the first tile's lifetime over the second makes it a clobber.
  graph->mutable_tensors(1)->set_live_end(graph->tensors(2).live_end());
  EXPECT_THAT(AllProblems(*graph), HasSubstr("would clobber"));
}

TEST(CheckLifetimeTest, UseAfterTheTileWasFreedIsRefused) {
  int64_t id = -1;
  int line = 0;
  absl::StatusOr<proto::Graph> graph = Trace1([&](Tracer& t) {
    Tensor out = t.Allocate({2, 2}, proto::FLOAT32, Buffer::kSharedHbm, "o");
    Tensor a = builder::ndarray({2, 2}, proto::FLOAT32, Buffer::kSbuf, "a");
    isa::memset(a, 1.0f);
    id = isa::dma_copy(out, a).id;
    line = __LINE__ - 1;
    t.Output("out", out);
  });
  ASSERT_TRUE(graph.ok()) << graph.status();
  EXPECT_EQ(AllProblems(*graph), "");
  proto::Tensor* a = FindTensor(*graph, "a");
  a->set_live_end(1);  // freed before the dma_copy at position 1
  EXPECT_THAT(AllProblems(*graph),
              HasSubstr(absl::StrCat(Where(id, "dma_copy", line),
                                     ": uses sbuf tensor 'a' outside its "
                                     "lifetime (instructions [0, 1) of the "
                                     "stream)")));
  // Allocated only after its first use.
  a->set_live_end(2);
  a->set_live_begin(1);
  EXPECT_THAT(AllProblems(*graph),
              HasSubstr("uses sbuf tensor 'a' outside its lifetime "
                        "(instructions [1, 2) of the stream)"));
}

TEST(CheckLifetimeTest, ATileUsedAfterItsScopeEndedIsRefused) {
  absl::StatusOr<proto::Graph> graph = Trace1([](Tracer& t) {
    Tensor out = t.Allocate({2, 2}, proto::FLOAT32, Buffer::kSharedHbm, "o");
    Tensor escaped;
    {
      builder::Scope scope("inner");
      escaped = builder::ndarray({2, 2}, proto::FLOAT32, Buffer::kSbuf, "esc");
      isa::memset(escaped, 1.0f);
    }
    isa::dma_copy(out, escaped);
    t.Output("out", out);
  });
  // Refused when traced, or else when the graph is loaded.
  std::string message;
  if (!graph.ok()) {
    message = std::string(graph.status().message());
  } else {
    absl::StatusOr<std::unique_ptr<interp::Interpreter>> interp =
        interp::Interpreter::Create(*graph);
    ASSERT_FALSE(interp.ok());
    message = std::string(interp.status().message());
  }
  EXPECT_THAT(message, AllOf(HasSubstr("'esc'"), HasSubstr("lifetime")));
}

// ---------------------------------------------------------------------------
// Races between the two cores of a rank on shared HBM

TEST(CheckRaceTest, TwoCoresWritingTheSameBytesRace) {
  int64_t ids[2] = {-1, -1};
  int line = 0;
  absl::StatusOr<proto::Graph> graph = TraceWorld(1, 2, [&](Tracer& t) {
    Tensor x = t.Input("x", {2}, proto::FLOAT32);
    Tensor out = t.Allocate({2}, proto::FLOAT32, Buffer::kSharedHbm, "o");
    ids[t.program_id()] = isa::dma_copy(out, x).id;
    line = __LINE__ - 1;
    t.Output("out", out);
  });
  ASSERT_TRUE(graph.ok()) << graph.status();
  absl::StatusOr<Outputs> out = RunGraph(*graph, {Floats("x", {2}, {1, 2})});
  ASSERT_FALSE(out.ok());
  EXPECT_EQ(out.status().code(), interp::kDeviceErrorCode);
  EXPECT_THAT(
      out.status().message(),
      AllOf(HasSubstr(absl::StrCat("core 1 ", Where(ids[1], "dma_copy", line))),
            HasSubstr("data race on shared_hbm tensor 'out' element [0]"),
            HasSubstr(absl::StrCat("this write on core 1 and a write on core "
                                   "0 by instruction #",
                                   ids[0], " at tests/check_test.cc:", line))));
  // The same as a diagnostic: a race, at core 1's copy, on 'out'.
  const std::optional<Diagnostic> d = DiagnosticOf(out.status());
  ASSERT_TRUE(d.has_value());
  EXPECT_EQ(d->kind, DiagnosticKind::kRace);
  EXPECT_EQ(d->rank, -1);  // a one-rank world
  EXPECT_EQ(d->core, 1);
  EXPECT_EQ(d->instruction_id, ids[1]);
  EXPECT_EQ(d->opcode, "dma_copy");
  EXPECT_EQ(d->file, "tests/check_test.cc");
  EXPECT_EQ(d->line, line);
  EXPECT_EQ(d->tensor, "out");
}

TEST(CheckRaceTest, ACoreBarrierBetweenTheWritesOrdersThem) {
  absl::StatusOr<proto::Graph> graph = TraceWorld(1, 2, [&](Tracer& t) {
    const int c = t.program_id();
    Tensor x = t.Input("x", {2, 2}, proto::FLOAT32);
    Tensor out = t.Allocate({2}, proto::FLOAT32, Buffer::kSharedHbm, "o");
    Tensor flag = t.Allocate({1}, proto::INT32, Buffer::kSharedHbm, "flag");
    if (c == 0) isa::dma_copy(out, x.Select(0, 0));
    isa::core_barrier(flag);
    if (c == 1) isa::dma_copy(out, x.Select(0, 1));
    t.Output("out", out);
  });
  ASSERT_TRUE(graph.ok()) << graph.status();
  absl::StatusOr<Outputs> out =
      RunGraph(*graph, {Floats("x", {2, 2}, {1, 2, 3, 4})});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_THAT(out->at("out").f32, ElementsAre(3, 4));  // core 1 wrote last
}

TEST(CheckRaceTest, WritesToDisjointBytesDoNotRace) {
  absl::StatusOr<proto::Graph> graph = TraceWorld(1, 2, [&](Tracer& t) {
    const int c = t.program_id();
    Tensor x = t.Input("x", {2, 2}, proto::FLOAT32);
    Tensor out = t.Allocate({2, 2}, proto::FLOAT32, Buffer::kSharedHbm, "o");
    isa::dma_copy(out.Select(0, c), x.Select(0, 1 - c));
    t.Output("out", out);
  });
  ASSERT_TRUE(graph.ok()) << graph.status();
  absl::StatusOr<Outputs> out =
      RunGraph(*graph, {Floats("x", {2, 2}, {1, 2, 3, 4})});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_THAT(out->at("out").f32, ElementsAre(3, 4, 1, 2));
}

TEST(CheckRaceTest, InterleavedColumnsOfOneTensorDoNotRace) {
  absl::StatusOr<proto::Graph> graph = TraceWorld(1, 2, [&](Tracer& t) {
    const int c = t.program_id();
    Tensor x = t.Input("x", {2, 2}, proto::FLOAT32);
    Tensor out = t.Allocate({2, 2}, proto::FLOAT32, Buffer::kSharedHbm, "o");
    isa::dma_copy(out.Slice(1, c, 1), x.Slice(1, c, 1));
    t.Output("out", out);
  });
  ASSERT_TRUE(graph.ok()) << graph.status();
  absl::StatusOr<Outputs> out =
      RunGraph(*graph, {Floats("x", {2, 2}, {1, 2, 3, 4})});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_THAT(out->at("out").f32, ElementsAre(1, 2, 3, 4));
}

// Core 0 writes buf; core 1 reads it, after a sendrecv between the two
// cores if `sync`.
absl::StatusOr<Outputs> WriteThenReadOnTheOtherCore(bool sync) {
  absl::StatusOr<proto::Graph> graph = TraceWorld(1, 2, [&](Tracer& t) {
    const int c = t.program_id();
    Tensor x = t.Input("x", {2}, proto::FLOAT32);
    Tensor buf = t.Allocate({2}, proto::FLOAT32, Buffer::kSharedHbm, "buf");
    Tensor out = t.Allocate({2}, proto::FLOAT32, Buffer::kSharedHbm, "o");
    Tensor a = builder::ndarray({1, 1}, proto::FLOAT32, Buffer::kSbuf, "a");
    Tensor b = builder::ndarray({1, 1}, proto::FLOAT32, Buffer::kSbuf, "b");
    isa::memset(a, 0.0f);
    if (c == 0) isa::dma_copy(buf, x);
    if (sync) isa::sendrecv(b, a, 1 - c, 1 - c);
    if (c == 1) isa::dma_copy(out, buf);
    t.Output("out", out);
  });
  if (!graph.ok()) return graph.status();
  return RunGraph(*graph, {Floats("x", {2}, {5, 6})});
}

TEST(CheckRaceTest, AReadOnTheOtherCoreWithoutSyncRaces) {
  absl::StatusOr<Outputs> out = WriteThenReadOnTheOtherCore(false);
  ASSERT_FALSE(out.ok());
  EXPECT_THAT(out.status().message(),
              AllOf(HasSubstr("data race on shared_hbm tensor 'buf'"),
                    HasSubstr("this read on core 1 and a write on core 0")));
}

TEST(CheckRaceTest, SendRecvOrdersAWriteBeforeTheOtherCoresRead) {
  absl::StatusOr<Outputs> out = WriteThenReadOnTheOtherCore(true);
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_THAT(out->at("out").f32, ElementsAre(5, 6));
}

}  // namespace
}  // namespace nkigraph
