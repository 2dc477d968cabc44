// The cost model: per-instruction durations against the cost table's
// formulas (hand-worked from the trn2 figures), how the scheduler overlaps
// and serialises, synchronisation, the roofline invariant on every
// registered kernel, the Chrome trace, and the seed's mechanisms as time.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <map>
#include <memory>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "builder/isa.h"
#include "builder/tracer.h"
#include "cost/cost_table.h"
#include "cost/report.h"
#include "cost/schedule.h"
#include "cost/trace_json.h"
#include "graph/dependencies.h"
#include "graph/graph_index.h"
#include "graph/regions.h"
#include "gtest/gtest.h"
#include "interp/interpreter.h"
#include "kernels/registry.h"
#include "nlohmann/json.hpp"
#include "ops/device_profile.h"
#include "ops/instr_facts.h"
#include "tests/test_util.h"

namespace nkigraph {
namespace {

using builder::Buffer;
using builder::Tensor;
using builder::Tracer;
namespace isa = builder::isa;

// A graph, its index and its schedule, kept together (each points into the
// one before).
struct Scheduled {
  proto::Graph traced;
  std::unique_ptr<graph::GraphIndex> index;
  cost::Schedule schedule;

  const cost::Slot& slot(int i) const { return schedule.slots[i]; }
  double duration(int i) const { return slot(i).end_ns - slot(i).start_ns; }
  // Index of the n-th instruction of `opcode` on `core`.
  int Nth(proto::Opcode opcode, int n = 0, int core = 0) const {
    for (int i : index->stream(core)) {
      if (index->instr(i).opcode() == opcode && n-- == 0) return i;
    }
    ADD_FAILURE() << "no such instruction";
    return 0;
  }
};

std::unique_ptr<Scheduled> ScheduleOf(absl::StatusOr<proto::Graph> traced) {
  EXPECT_TRUE(traced.ok()) << traced.status();
  if (!traced.ok()) return nullptr;
  auto s = std::make_unique<Scheduled>();
  s->traced = *std::move(traced);
  absl::StatusOr<std::unique_ptr<graph::GraphIndex>> index =
      graph::GraphIndex::Build(s->traced);
  EXPECT_TRUE(index.ok()) << index.status();
  if (!index.ok()) return nullptr;
  s->index = *std::move(index);
  absl::StatusOr<cost::Schedule> schedule = cost::ScheduleGraph(
      *s->index, cost::CostTableFor(s->traced.world().target()));
  EXPECT_TRUE(schedule.ok()) << schedule.status();
  if (!schedule.ok()) return nullptr;
  s->schedule = *std::move(schedule);
  return s;
}

std::unique_ptr<Scheduled> ScheduleKernel(
    const std::string& name,
    const std::vector<std::pair<std::string, std::string>>& settings) {
  return ScheduleOf(kernels::KernelRegistry::Global().Trace(name, settings));
}

// Trn2 figures and the ISA reference's instruction cost estimates,
// restated by hand (not read from the table): TensorE 2.4 GHz, VectorE
// 0.96 GHz, ScalarE 1.2 GHz, GpSimd 1.2 GHz; matmul max(min(64, M), N)
// cycles (x4 fp32, x0.5 fp8 on trn2); MIN_II 64 cycles (ScalarE's 266 on
// trn2, the performance guide's observed interval); GPSIMD_START 150.
constexpr double kPeGhz = 2.4, kDveGhz = 0.96, kActGhz = 1.2, kPoolGhz = 1.2;

TEST(CostModelTest, MatmulTakesIssueIntervalTimesDtypeFactor) {
  struct Case {
    int64_t m;  // stationary free size
    int64_t n;  // moving free size
    proto::DType dtype;
    double cycles;  // max(min(64, m), n) x factor, worked by hand
  };
  for (const Case& c :
       {Case{128, 32, proto::BFLOAT16, 64}, Case{128, 64, proto::BFLOAT16, 64},
        Case{128, 200, proto::BFLOAT16, 200},
        Case{128, 512, proto::BFLOAT16, 512},
        Case{128, 128, proto::FLOAT32, 512}, Case{128, 16, proto::FLOAT32, 256},
        Case{128, 512, proto::FLOAT8_E4M3, 256},
        // A narrow stationary (a decode step's few tokens) issues in
        // max(M, N): the 64-cycle floor is min(64, M).
        Case{1, 32, proto::BFLOAT16, 32}, Case{16, 8, proto::BFLOAT16, 16}}) {
    auto s = ScheduleOf(testing::Trace1([&](Tracer& t) {
      Tensor st = t.Allocate({128, c.m}, c.dtype, Buffer::kSbuf, "st");
      Tensor mv = t.Allocate({128, c.n}, c.dtype, Buffer::kSbuf, "mv");
      Tensor out = t.Allocate({c.m, c.n}, proto::FLOAT32, Buffer::kPsum, "out");
      isa::nc_matmul(out, st, mv);
    }));
    ASSERT_NE(s, nullptr);
    const int mm = s->Nth(proto::NC_MATMUL);
    EXPECT_DOUBLE_EQ(s->duration(mm), c.cycles / kPeGhz)
        << "M=" << c.m << " N=" << c.n << " dtype " << c.dtype;
    EXPECT_DOUBLE_EQ(s->schedule.costs[mm].flops, 2.0 * 128 * c.m * c.n);
  }
}

TEST(CostModelTest, EnginesTakeTheIsaEstimateOfEachInstruction) {
  for (int64_t f : {1, 64, 1000}) {
    for (proto::DType dtype : {proto::BFLOAT16, proto::FLOAT32}) {
      auto s = ScheduleOf(testing::Trace1([&](Tracer& t) {
        Tensor a = t.Allocate({128, f}, dtype, Buffer::kSbuf, "a");
        Tensor b = t.Allocate({128, f}, dtype, Buffer::kSbuf, "b");
        Tensor c = t.Allocate({128, f}, dtype, Buffer::kSbuf, "c");
        Tensor z = t.Allocate({128, f}, dtype, Buffer::kSbuf, "z");
        Tensor i = t.Allocate({128, f}, proto::INT32, Buffer::kSbuf, "i");
        isa::memset(a, 1.0f);
        isa::memset(b, 2.0f);
        isa::tensor_tensor(c, a, b, isa::Alu::kAdd);
        isa::activation(a, isa::ActFunc::kExp, c);
        isa::memset(z, 0.0f);
        isa::iota(i, {{1, f}});
      }));
      ASSERT_NE(s, nullptr);
      const double n = static_cast<double>(f);
      // tensor_tensor: max(64, N) for bf16 add in SBUF, else max(64, 2N).
      const double tt =
          dtype == proto::BFLOAT16 ? std::max(64.0, n) : std::max(64.0, 2 * n);
      EXPECT_DOUBLE_EQ(s->duration(s->Nth(proto::TENSOR_TENSOR)), tt / kDveGhz)
          << "f=" << f;
      // memset: max(64, N), or max(64, N/2) for zero in bf16.
      EXPECT_DOUBLE_EQ(s->duration(s->Nth(proto::MEMSET, 0)),
                       std::max(64.0, n) / kDveGhz);
      const double zero =
          dtype == proto::BFLOAT16 ? std::max(64.0, n / 2) : std::max(64.0, n);
      EXPECT_DOUBLE_EQ(s->duration(s->Nth(proto::MEMSET, 2)), zero / kDveGhz);
      // activation on ScalarE: max(MIN_II, N), MIN_II 266 on trn2.
      EXPECT_DOUBLE_EQ(s->duration(s->Nth(proto::ACTIVATION)),
                       std::max(266.0, n) / kActGhz);
      // iota on GpSimd: 150 + N.
      EXPECT_DOUBLE_EQ(s->duration(s->Nth(proto::IOTA)), (150 + n) / kPoolGhz);
    }
  }
}

TEST(CostModelTest, ScanStatisticsAndSelectOpsAreChargedAsVectorWork) {
  // The ISA reference gives no estimate for them: the Vector Engine's
  // default charges one cycle per element per full-size input, at least
  // MIN_II (64 cycles).
  constexpr int64_t f = 300;
  auto s = ScheduleOf(testing::Trace1([&](Tracer& t) {
    auto tile = [&](std::vector<int64_t> shape, proto::DType dtype,
                    const char* name) {
      return t.Allocate(shape, dtype, Buffer::kSbuf, name);
    };
    Tensor a = tile({128, f}, proto::FLOAT32, "a");
    Tensor b = tile({128, f}, proto::FLOAT32, "b");
    Tensor y = tile({128, f}, proto::FLOAT32, "y");
    Tensor r = tile({128, 1}, proto::FLOAT32, "r");
    Tensor st = tile({128, 6}, proto::FLOAT32, "st");
    Tensor mv = tile({128, 2}, proto::FLOAT32, "mv");
    Tensor p = tile({128, f}, proto::UINT32, "p");
    isa::memset(a, 1.0f);
    isa::memset(b, 2.0f);
    isa::memset(p, 1.0f);
    isa::tensor_tensor_scan(y, a, b, 0.0f, isa::Alu::kMultiply, isa::Alu::kAdd);
    isa::tensor_scalar_reduce(y, a, isa::Alu::kAdd, 1.0f, isa::Alu::kAdd, r);
    isa::bn_stats(st, a);
    isa::bn_aggr(mv, st);
    isa::tensor_copy_predicated(y, b, p);
  }));
  ASSERT_NE(s, nullptr);
  // (Each duration is an end minus a start: equal to a few ulps.)
  const auto expect_vector_ns = [&](proto::Opcode op, double elements) {
    EXPECT_NEAR(s->duration(s->Nth(op)), std::max(64.0, elements) / kDveGhz,
                1e-9)
        << ops::OpcodeName(op);
  };
  expect_vector_ns(proto::TENSOR_TENSOR_SCAN, 2.0 * f);
  expect_vector_ns(proto::TENSOR_SCALAR_REDUCE, f);
  expect_vector_ns(proto::BN_STATS, f);
  expect_vector_ns(proto::BN_AGGR, 6);
  // dst is read too (kept where the predicate is false): three inputs.
  expect_vector_ns(proto::TENSOR_COPY_PREDICATED, 3.0 * f);
}

// A DMA over 128 partitions is spread over all 16 DMA engines (8
// partitions each), 16 x 23 = 368 B/ns on trn2; its HBM bytes also pass
// the core's part of its HBM stack, 725 / 2 = 362.5 B/ns, from the end of
// the 600 ns fixed cost. It ends at the later of the two.
TEST(CostModelTest, DmaTakesFixedPlusChargedBytesOverItsEnginesBandwidth) {
  struct Case {
    int64_t rows, cols, step;
    double charged, rate, hbm_bytes;
    int engines;
  };
  // [128, 1024] bf16: 2 KiB runs, 256 KiB in all, full rate. [128, 16]
  // bf16: 32-byte runs charged as 512 B each. Every 8th fp32 column: a
  // 32-byte minor stride halves the rate, rows of 8 x 4 B charged 512 B.
  // [4, 4096] bf16 (the DMA guide's example): 4 partitions, one engine.
  for (const Case& c :
       {Case{128, 1024, 1, 128.0 * 2048, 23.0, 128.0 * 2048, 16},
        Case{128, 16, 1, 128.0 * 512, 23.0, 128.0 * 32, 16},
        Case{128, 64, 8, 128.0 * 512, 11.5, 128.0 * 32, 16},
        Case{4, 4096, 1, 4.0 * 8192, 23.0, 4.0 * 8192, 1}}) {
    const proto::DType dtype = c.step == 1 ? proto::BFLOAT16 : proto::FLOAT32;
    auto s = ScheduleOf(testing::Trace1([&](Tracer& t) {
      Tensor x = t.Input("x", {c.rows, c.cols}, dtype);
      Tensor src = c.step == 1 ? x : x.Slice(1, 0, c.cols / c.step, c.step);
      Tensor tile =
          t.Allocate({c.rows, c.cols / c.step}, dtype, Buffer::kSbuf, "tile");
      isa::dma_copy(tile, src);
    }));
    ASSERT_NE(s, nullptr);
    const int dma = s->Nth(proto::DMA_COPY);
    const double engines = 600.0 + c.charged / (c.engines * c.rate);
    const double hbm = 600.0 + c.hbm_bytes / 362.5;
    EXPECT_DOUBLE_EQ(s->duration(dma), std::max(engines, hbm))
        << c.cols << " step " << c.step;
    EXPECT_EQ(s->slot(dma).lane, cost::kFirstDmaLane);
    EXPECT_EQ(s->slot(dma).lanes, c.engines);
  }
}

// A bitcast view moves the same bytes: [128, 512] bf16 read as [128, 256]
// int32 is 1 KiB per partition either way, charged and counted as such.
TEST(CostModelTest, ABitcastViewMovesTheBytesOfItsTensor) {
  auto s = ScheduleOf(testing::Trace1([&](Tracer& t) {
    Tensor x = t.Input("x", {128, 512}, proto::BFLOAT16);
    Tensor tile = t.Allocate({128, 256}, proto::INT32, Buffer::kSbuf, "tile");
    isa::dma_copy(tile, x.Bitcast(proto::INT32));
  }));
  ASSERT_NE(s, nullptr);
  const int dma = s->Nth(proto::DMA_COPY);
  EXPECT_DOUBLE_EQ(s->duration(dma), 600.0 + std::max(128.0 * 1024 / 368.0,
                                                      128.0 * 1024 / 362.5));
  const cost::Report report = cost::BuildReport(s->schedule, 0);
  EXPECT_EQ(report.traffic.hbm(), 128 * 1024);
}

TEST(CostModelTest, IndependentWorkOverlapsAcrossEnginesAndSerialisesOnOne) {
  auto s = ScheduleOf(testing::Trace1([&](Tracer& t) {
    Tensor st = t.Allocate({128, 128}, proto::BFLOAT16, Buffer::kSbuf, "st");
    Tensor mv = t.Allocate({128, 512}, proto::BFLOAT16, Buffer::kSbuf, "mv");
    Tensor out = t.Allocate({128, 512}, proto::FLOAT32, Buffer::kPsum, "out");
    Tensor a = t.Allocate({128, 256}, proto::FLOAT32, Buffer::kSbuf, "a");
    Tensor b = t.Allocate({128, 256}, proto::FLOAT32, Buffer::kSbuf, "b");
    isa::nc_matmul(out, st, mv);
    isa::memset(a, 0.0f);
    isa::memset(b, 0.0f);
  }));
  ASSERT_NE(s, nullptr);
  const int mm = s->Nth(proto::NC_MATMUL);
  const int a = s->Nth(proto::MEMSET, 0), b = s->Nth(proto::MEMSET, 1);
  EXPECT_EQ(s->slot(mm).start_ns, 0);
  EXPECT_EQ(s->slot(a).start_ns, 0);  // another engine: overlaps the matmul
  EXPECT_DOUBLE_EQ(s->slot(b).start_ns, s->slot(a).end_ns);  // same engine
  EXPECT_DOUBLE_EQ(s->schedule.makespan_ns,
                   std::max(s->slot(mm).end_ns, s->slot(b).end_ns));
}

TEST(CostModelTest, ReadAfterWriteSerialisesAcrossEngines) {
  auto s = ScheduleOf(testing::Trace1([&](Tracer& t) {
    Tensor a = t.Allocate({128, 256}, proto::FLOAT32, Buffer::kSbuf, "a");
    Tensor b = t.Allocate({128, 256}, proto::FLOAT32, Buffer::kSbuf, "b");
    Tensor other = t.Allocate({128, 256}, proto::FLOAT32, Buffer::kSbuf, "o");
    isa::memset(a, 1.0f);                            // vector
    isa::activation(b, isa::ActFunc::kExp, a);       // scalar reads a
    isa::memset(other, 0.0f, isa::Engine::kGpSimd);  // independent
  }));
  ASSERT_NE(s, nullptr);
  const int write = s->Nth(proto::MEMSET, 0);
  const int read = s->Nth(proto::ACTIVATION);
  const int free = s->Nth(proto::MEMSET, 1);
  EXPECT_DOUBLE_EQ(s->slot(read).start_ns, s->slot(write).end_ns);
  EXPECT_EQ(s->slot(read).critical, write);
  EXPECT_EQ(s->slot(free).start_ns, 0);
}

TEST(CostModelTest, CoreBarrierWaitsForTheLaterCore) {
  auto s = ScheduleOf(testing::TraceWorld(1, 2, [&](Tracer& t) {
    Tensor sem = t.Allocate({1}, proto::INT32, Buffer::kSharedHbm, "sem");
    Tensor a = t.Allocate({128, 4096}, proto::FLOAT32, Buffer::kSbuf, "a");
    if (t.program_id() == 1) isa::memset(a, 0.0f);  // core 1 is late
    isa::core_barrier(sem);
    isa::memset(a, 1.0f);
  }));
  ASSERT_NE(s, nullptr);
  const int late = s->Nth(proto::MEMSET, 0, 1);
  const int b0 = s->Nth(proto::CORE_BARRIER, 0, 0);
  const int b1 = s->Nth(proto::CORE_BARRIER, 0, 1);
  EXPECT_GT(s->slot(late).end_ns, 0);
  EXPECT_DOUBLE_EQ(s->slot(b0).start_ns, s->slot(late).end_ns);
  EXPECT_DOUBLE_EQ(s->slot(b1).start_ns, s->slot(late).end_ns);
  EXPECT_DOUBLE_EQ(s->duration(b0), 1300.0);
  const int after0 = s->Nth(proto::MEMSET, 0, 0);
  EXPECT_DOUBLE_EQ(s->slot(after0).start_ns, s->slot(b0).end_ns);
  ASSERT_EQ(s->schedule.waits.size(), 1u);
  EXPECT_EQ(s->schedule.waits[0].from, b1);
  EXPECT_EQ(s->schedule.waits[0].to, b0);
}

TEST(CostModelTest, CoreBarrierWaitsForTheLaterCoreWhenItIsCoreZero) {
  // The late core comes first in core order: core 1's wait and critical
  // predecessor are still core 0's barrier.
  auto s = ScheduleOf(testing::TraceWorld(1, 2, [&](Tracer& t) {
    Tensor sem = t.Allocate({1}, proto::INT32, Buffer::kSharedHbm, "sem");
    Tensor a = t.Allocate({128, 4096}, proto::FLOAT32, Buffer::kSbuf, "a");
    if (t.program_id() == 0) isa::memset(a, 0.0f);  // core 0 is late
    isa::core_barrier(sem);
  }));
  ASSERT_NE(s, nullptr);
  const int late = s->Nth(proto::MEMSET, 0, 0);
  const int b0 = s->Nth(proto::CORE_BARRIER, 0, 0);
  const int b1 = s->Nth(proto::CORE_BARRIER, 0, 1);
  EXPECT_DOUBLE_EQ(s->slot(b1).start_ns, s->slot(late).end_ns);
  EXPECT_EQ(s->slot(b0).critical, late);
  EXPECT_EQ(s->slot(b1).critical, b0);
  ASSERT_EQ(s->schedule.waits.size(), 1u);
  EXPECT_EQ(s->schedule.waits[0].from, b0);
  EXPECT_EQ(s->schedule.waits[0].to, b1);
}

TEST(CostModelTest, ConcurrentDmasShareTheCoresHbmBandwidth) {
  // trn3: 16 queues at 33 B/ns (528 B/ns) exceed the core's HBM part
  // (trn2's, 725 / 2 = 362.5 B/ns), so for 32 independent 256 KiB loads
  // HBM, not the queues, decides.
  auto s = ScheduleOf(testing::TraceWorld(
      1, 1,
      [&](Tracer& t) {
        Tensor x = t.Input("x", {32 * 128, 1024}, proto::BFLOAT16);
        for (int i = 0; i < 32; ++i) {
          Tensor tile =
              t.Allocate({128, 1024}, proto::BFLOAT16, Buffer::kSbuf, "tile");
          isa::dma_copy(tile, x.Slice(0, i * 128, 128));
        }
      },
      proto::TARGET_TRN3));
  ASSERT_NE(s, nullptr);
  const double bytes = 32.0 * 128 * 1024 * 2;
  const double queues_alone = 2 * (600.0 + 128.0 * 1024 * 2 / 33.0);
  EXPECT_GE(s->schedule.makespan_ns, bytes / 362.5);
  EXPECT_GT(s->schedule.makespan_ns, queues_alone);
  // The queues still overlap: far below one queue doing all 32.
  EXPECT_LT(s->schedule.makespan_ns, 16 * queues_alone / 2);
}

// Every registered kernel, at its default (or example) parameters: the
// schedule ends no earlier than the roofline bound.
TEST(CostModelTest, EstimateIsNeverBelowTheRooflineOnAnyKernel) {
  for (const kernels::KernelDef& def :
       kernels::KernelRegistry::Global().kernels()) {
    for (const char* target : {"trn1", "trn2", "trn3"}) {
      SCOPED_TRACE(def.name + " " + target);
      auto s = ScheduleKernel(def.name, def.example);
      ASSERT_NE(s, nullptr);
      const proto::Target t = *ops::ParseTarget(target);
      absl::StatusOr<cost::Schedule> schedule =
          cost::ScheduleGraph(*s->index, cost::CostTableFor(t));
      ASSERT_TRUE(schedule.ok()) << schedule.status();
      const cost::Report report = cost::BuildReport(*schedule, 5);
      EXPECT_GT(report.latency_ns, 0);
      EXPECT_GE(report.latency_ns, report.roofline_ns * (1 - 1e-12));
      if (report.roofline_ns > 0) {
        EXPECT_GE(report.roofline_ratio, 1 - 1e-12);
      }
      // The critical path, every line of it, accounts for the latency: each
      // instruction on it starts when its predecessor on it ends.
      const cost::Report all = cost::BuildReport(*schedule, 0);
      EXPECT_NEAR(all.critical_ns, report.latency_ns, 1e-6 * report.latency_ns);
    }
  }
}

TEST(CostModelTest, ChromeTraceParsesNestsPerThreadAndIsDeterministic) {
  auto s = ScheduleKernel(
      "fgcc", {{"tp_degree", "4"}, {"m", "64"}, {"k", "256"}, {"n", "256"}});
  ASSERT_NE(s, nullptr);
  std::ostringstream first, second;
  ASSERT_TRUE(cost::WriteChromeTrace(s->schedule, first).ok());
  ASSERT_TRUE(cost::WriteChromeTrace(s->schedule, second).ok());
  EXPECT_EQ(first.str(), second.str());
  const nlohmann::json doc = nlohmann::json::parse(first.str());
  ASSERT_TRUE(doc.contains("traceEvents"));
  std::map<std::pair<int, int>, std::vector<std::pair<int64_t, int64_t>>> spans;
  int complete = 0;
  for (const nlohmann::json& e : doc["traceEvents"]) {
    for (const char* key : {"ph", "ts", "pid", "tid"}) {
      ASSERT_TRUE(e.contains(key)) << key << " missing in " << e.dump();
    }
    if (e["ph"] == "X") {
      ++complete;
      ASSERT_TRUE(e["args"].contains("id"));
      ASSERT_TRUE(e["args"].contains("source"));
      const int64_t ts = std::llround(e["ts"].get<double>() * 1e6);
      const int64_t dur = std::llround(e["dur"].get<double>() * 1e6);
      spans[{e["pid"].get<int>(), e["tid"].get<int>()}].push_back(
          {ts, ts + dur});
    }
  }
  EXPECT_EQ(complete, s->index->size());
  for (auto& [thread, list] : spans) {
    std::sort(list.begin(), list.end());
    for (size_t i = 1; i < list.size(); ++i) {
      EXPECT_LE(list[i - 1].second, list[i].first)
          << "overlap on pid " << thread.first << " tid " << thread.second;
    }
  }
}

TEST(CostModelTest, BlockwiseMmBwdCoresOverlapBetweenBarriers) {
  auto s = ScheduleKernel("blockwise_mm_bwd", {});
  ASSERT_NE(s, nullptr);
  ASSERT_EQ(s->index->num_cores(), 2);
  // Between consecutive barriers, some work of core 0 runs while core 1's
  // does.
  const std::vector<int>& s0 = s->index->stream(0);
  const std::vector<int>& s1 = s->index->stream(1);
  int overlapping_intervals = 0, intervals = 0;
  size_t p0 = 0, p1 = 0;
  while (p0 < s0.size() && p1 < s1.size()) {
    std::vector<int> w0, w1;
    for (; p0 < s0.size() &&
           s->index->instr(s0[p0]).opcode() != proto::CORE_BARRIER;
         ++p0) {
      w0.push_back(s0[p0]);
    }
    for (; p1 < s1.size() &&
           s->index->instr(s1[p1]).opcode() != proto::CORE_BARRIER;
         ++p1) {
      w1.push_back(s1[p1]);
    }
    ++p0, ++p1;
    if (w0.empty() || w1.empty()) continue;
    ++intervals;
    bool overlap = false;
    for (int a : w0) {
      for (int b : w1) {
        if (s->slot(a).start_ns < s->slot(b).end_ns &&
            s->slot(b).start_ns < s->slot(a).end_ns) {
          overlap = true;
          break;
        }
      }
      if (overlap) break;
    }
    overlapping_intervals += overlap;
  }
  EXPECT_GT(intervals, 0);
  EXPECT_EQ(overlapping_intervals, intervals);
}

// Whether some instruction of `a_op` overlaps in time some of `b_op` on the
// same core.
bool AnyOverlap(const Scheduled& s, proto::Opcode a_op, proto::Opcode b_op) {
  for (int core = 0; core < s.index->num_cores(); ++core) {
    for (int a : s.index->stream(core)) {
      if (s.index->instr(a).opcode() != a_op) continue;
      for (int b : s.index->stream(core)) {
        if (s.index->instr(b).opcode() != b_op) continue;
        if (s.slot(a).start_ns < s.slot(b).end_ns &&
            s.slot(b).start_ns < s.slot(a).end_ns) {
          return true;
        }
      }
    }
  }
  return false;
}

// The seed's claim: the ring is double-buffered so that step s + 1's
// permute overlaps step s's matmul.
// One core and one channel (tp 6), so a single buffer is one region, and a
// wide k with a narrow n, so the ring rather than the output stores (whose
// dynamic slot offsets statically touch all of `out`, chaining them) is
// what the steps wait for.
TEST(CostModelTest, FgccDoubleBufferOverlapsPermuteWithMatmulAndIsFaster) {
  const std::vector<std::pair<std::string, std::string>> base = {
      {"tp_degree", "6"},
      {"lnc", "1"},
      {"m", "256"},
      {"k", "2048"},
      {"n", "128"}};
  auto with = [&](const char* buffers) {
    auto settings = base;
    settings.push_back({"num_buffers", buffers});
    return ScheduleKernel("fgcc", settings);
  };
  auto two = with("2"), one = with("1");
  ASSERT_NE(two, nullptr);
  ASSERT_NE(one, nullptr);
  EXPECT_TRUE(
      AnyOverlap(*two, proto::COLLECTIVE_PERMUTE_IMPLICIT, proto::NC_MATMUL));
  EXPECT_FALSE(
      AnyOverlap(*one, proto::COLLECTIVE_PERMUTE_IMPLICIT, proto::NC_MATMUL));
  EXPECT_LT(two->schedule.makespan_ns, one->schedule.makespan_ns);
}

// The SBUF ring is faster than the shared-HBM one because of the HBM
// traffic the model counts: the same table, more bytes through HBM.
TEST(CostModelTest, SbufRingBeatsHbmRingByItsCountedHbmTraffic) {
  const std::vector<std::pair<std::string, std::string>> base = {
      {"tp_degree", "8"}, {"m", "256"}, {"k", "512"}, {"n", "512"}};
  auto sbuf = ScheduleKernel("fgcc", base);
  auto settings = base;
  settings.push_back({"force_hbm_cc", "1"});
  auto hbm = ScheduleKernel("fgcc", settings);
  ASSERT_NE(sbuf, nullptr);
  ASSERT_NE(hbm, nullptr);
  const cost::Report rs = cost::BuildReport(sbuf->schedule, 0);
  const cost::Report rh = cost::BuildReport(hbm->schedule, 0);
  EXPECT_GT(rh.traffic.hbm(), rs.traffic.hbm());
  EXPECT_GT(rh.latency_ns, rs.latency_ns);
}

// The seed's claim for decode: per-stage HBM round trips dominate decode
// latency, so keeping the residual and the all-reduce buffers in SBUF
// (sbuf_residual_and_cc=1) moves fewer bytes through HBM, as the profile
// counts them, and the same table then estimates a lower latency.
// A small shape (tp 2, 2 layers) keeps it fast. (At this shape the bytes
// saved are about 1% of the HBM traffic, which the weights dominate; the
// time saved is mostly the round trips' DMAs themselves — small,
// transposing transfers that pay the fixed latency and the small-run and
// strided penalties on the critical path — not their bytes.)
TEST(CostModelTest, DecodeSbufResidualMovesFewerHbmBytesAndIsFaster) {
  const std::vector<std::pair<std::string, std::string>> base = {
      {"batch", "2"},       {"seq_tkg", "1"},        {"hidden", "512"},
      {"q_heads", "2"},     {"kv_heads", "1"},       {"head_dim", "64"},
      {"cache_len", "128"}, {"intermediate", "256"}, {"num_layers", "2"},
      {"tp_degree", "2"}};
  auto with = [&](const char* sbuf) {
    auto settings = base;
    settings.push_back({"sbuf_residual_and_cc", sbuf});
    return ScheduleKernel("transformer_tkg", settings);
  };
  auto sbuf = with("1"), hbm = with("0");
  ASSERT_NE(sbuf, nullptr);
  ASSERT_NE(hbm, nullptr);
  const cost::Report rs = cost::BuildReport(sbuf->schedule, 0);
  const cost::Report rh = cost::BuildReport(hbm->schedule, 0);
  EXPECT_LT(rs.traffic.hbm(), rh.traffic.hbm());
  EXPECT_LT(rs.traffic.hbm_write, rh.traffic.hbm_write);
  EXPECT_LT(rs.latency_ns, rh.latency_ns);
}

// Taken to touch its whole tensor, a dynamic offset chains two stores
// through runtime slots; scheduled with the rows the run really reached
// (recorded by the interpreter), disjoint slots overlap, and so they do
// statically, the slots being constants known before the run
// (cost/known_values.h).
TEST(CostModelTest, RunResolvedOffsetsLetDisjointDynamicStoresOverlap) {
  absl::StatusOr<proto::Graph> traced = testing::Trace1([&](Tracer& t) {
    Tensor out =
        t.Allocate({4, 256}, proto::FLOAT32, Buffer::kSharedHbm, "out");
    // Sources 8 partitions apart: the two stores use different DMA
    // engines, so only a dependency can order them.
    Tensor src = t.Allocate({16, 256}, proto::FLOAT32, Buffer::kSbuf, "src");
    Tensor slot0 = t.Allocate({1, 1}, proto::INT32, Buffer::kSbuf, "slot0");
    Tensor slot2 = t.Allocate({1, 1}, proto::INT32, Buffer::kSbuf, "slot2");
    isa::memset(src, 1.0f);
    isa::memset(slot0, 0.0f);
    isa::memset(slot2, 2.0f);
    isa::dma_copy(out.Slice(0, 0, 1).WithScalarOffset(slot0, 0),
                  src.Slice(0, 0, 1));
    isa::dma_copy(out.Slice(0, 0, 1).WithScalarOffset(slot2, 0),
                  src.Slice(0, 8, 1));
    t.Output("out", out);
  });
  auto statically = ScheduleOf(traced);
  ASSERT_NE(statically, nullptr);
  const int first = statically->Nth(proto::DMA_COPY, 0);
  const int second = statically->Nth(proto::DMA_COPY, 1);
  const cost::CostTable& table = cost::CostTableFor(proto::TARGET_TRN2);
  const std::vector<graph::Dependency> whole =
      graph::AnalyzeDependencies(*statically->index, {.drop_implied = false});
  absl::StatusOr<cost::Schedule> chained =
      cost::ScheduleGraph(*statically->index, table, whole);
  ASSERT_TRUE(chained.ok()) << chained.status();
  EXPECT_GE(chained->slots[second].start_ns, chained->slots[first].end_ns);
  EXPECT_LT(statically->slot(second).start_ns, statically->slot(first).end_ns);
  EXPECT_EQ(statically->schedule.dynamic_operands, 2);
  EXPECT_EQ(statically->schedule.data_dependent_offsets, 0);

  absl::StatusOr<std::unique_ptr<interp::Interpreter>> interp =
      interp::Interpreter::Create(*traced);
  ASSERT_TRUE(interp.ok()) << interp.status();
  graph::ResolvedOffsets reached;
  (*interp)->RecordResolvedOffsets(&reached);
  ASSERT_TRUE((*interp)->Run().ok());
  // Each store reached one row of 256 elements: rows 0 and 2.
  const uint32_t id0 = statically->index->instr(first).id();
  const uint32_t id1 = statically->index->instr(second).id();
  ASSERT_TRUE(reached.contains({id0, 0}));
  EXPECT_EQ(reached.at({id0, 0}).lo, 0);
  EXPECT_EQ(reached.at({id0, 0}).hi, 255);
  EXPECT_EQ(reached.at({id1, 0}).lo, 512);
  EXPECT_EQ(reached.at({id1, 0}).hi, 767);
  const std::vector<graph::Dependency> deps = graph::AnalyzeDependencies(
      *statically->index, {.drop_implied = false, .resolved = &reached});
  absl::StatusOr<cost::Schedule> run =
      cost::ScheduleGraph(*statically->index, table, deps);
  ASSERT_TRUE(run.ok()) << run.status();
  EXPECT_LT(run->slots[second].start_ns, run->slots[first].end_ns);
  EXPECT_LT(run->makespan_ns, chained->makespan_ns);
  EXPECT_DOUBLE_EQ(run->makespan_ns, statically->schedule.makespan_ns);
}

// One scope-instance row per entry into a scope: the decode transformer's
// one call is one transformer_tkg instance per core, each layer one
// instance, however its inner scopes allocate and free; and ring steps,
// entered back to back under one path, stay apart (tp 4: four).
TEST(CostModelTest, ScopeInstancesAreOnePerEntry) {
  auto count = [](const cost::Report& r, const std::string& path, int core) {
    int n = 0;
    for (const cost::ScopeInstance& s : r.scopes) {
      n += s.core == core && r.scope_paths[s.path] == path;
    }
    return n;
  };
  auto tkg = ScheduleKernel("transformer_tkg", {{"num_layers", "2"}});
  ASSERT_NE(tkg, nullptr);
  const cost::Report r = cost::BuildReport(tkg->schedule, 0);
  for (int core = 0; core < tkg->index->num_cores(); ++core) {
    EXPECT_EQ(count(r, "transformer_tkg", core), 1) << "core " << core;
    EXPECT_EQ(count(r, "transformer_tkg/layer0", core), 1);
    EXPECT_EQ(count(r, "transformer_tkg/layer1", core), 1);
  }
  auto ring = ScheduleKernel("fgcc", {{"tp_degree", "4"}});
  ASSERT_NE(ring, nullptr);
  const cost::Report f = cost::BuildReport(ring->schedule, 0);
  EXPECT_EQ(count(f, "fgcc", 0), 1);
  EXPECT_EQ(count(f, "fgcc/ring_step", 0), 4);
}

}  // namespace
}  // namespace nkigraph
