// The fine-grained collective kernels (KERNELS.md "Family 2"): fgcc,
// fg_allgather, sb2sb_allgather and sb2sb_allgather_tiled, run by the
// interpreter against their references, and the mechanisms their graphs
// must show.
#include <cstdint>
#include <map>
#include <memory>
#include <random>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "interp/interpreter.h"
#include "kernels/collective_ring.h"
#include "kernels/compare.h"
#include "kernels/fg_allgather.h"
#include "kernels/fgcc.h"
#include "kernels/registry.h"
#include "proto/nkigraph.pb.h"
#include "tests/test_util.h"
#include "util/dtype.h"

namespace nkigraph::kernels {
namespace {

using nkigraph::testing::InstructionsOf;
using nkigraph::testing::IntAttr;
using nkigraph::testing::OperandOf;
using nkigraph::testing::OperandTensor;
using nkigraph::testing::TensorOf;
using ::testing::HasSubstr;
using Settings = std::vector<std::pair<std::string, std::string>>;

std::string Describe(const Settings& settings) {
  return absl::StrJoin(settings, " ", [](std::string* out, const auto& kv) {
    absl::StrAppend(out, kv.first, "=", kv.second);
  });
}

absl::StatusOr<proto::Graph> Trace(const std::string& kernel,
                                   const Settings& settings) {
  return KernelRegistry::Global().Trace(kernel, settings);
}

const proto::Stream& StreamOf(const proto::Graph& graph, int core) {
  for (const proto::Stream& stream : graph.streams()) {
    if (static_cast<int>(stream.core()) == core) return stream;
  }
  return graph.streams(0);
}

// Random per-rank inputs in the kernel's declared shapes (with the leading
// [num_ranks] axis when there are several ranks), rounded to their dtype.
std::vector<HostArray> RandomInputs(const proto::Graph& graph, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  std::vector<HostArray> inputs;
  const int64_t ranks = graph.world().num_ranks();
  for (const proto::Tensor& t : graph.tensors()) {
    if (t.role() != proto::ROLE_INPUT) continue;
    HostArray a;
    a.name = t.name();
    a.dtype = proto::FLOAT32;
    if (t.per_rank() && ranks > 1) a.shape.push_back(ranks);
    a.shape.insert(a.shape.end(), t.shape().begin(), t.shape().end());
    a.f32.resize(a.num_elements());
    for (float& v : a.f32) v = RoundTo(t.dtype(), dist(rng), 240.0f);
    inputs.push_back(std::move(a));
  }
  return inputs;
}

// Traces `kernel`, runs it on random inputs and compares every output with
// the reference: exactly when `exact`, else within the kernel's tolerance.
void ExpectMatchesReference(const std::string& kernel, const Settings& settings,
                            bool exact) {
  SCOPED_TRACE(absl::StrCat(kernel, " ", Describe(settings)));
  const KernelRegistry& registry = KernelRegistry::Global();
  const KernelDef* def = registry.Find(kernel);
  ASSERT_NE(def, nullptr);
  absl::StatusOr<ParamValues> values = registry.ParseParams(*def, settings);
  ASSERT_TRUE(values.ok()) << values.status();
  absl::StatusOr<proto::Graph> graph = registry.Trace(kernel, settings);
  ASSERT_TRUE(graph.ok()) << graph.status();
  const std::vector<HostArray> inputs = RandomInputs(*graph, 1234);

  absl::StatusOr<std::unique_ptr<interp::Interpreter>> interp =
      interp::Interpreter::Create(*graph);
  ASSERT_TRUE(interp.ok()) << interp.status();
  for (const HostArray& input : inputs) {
    absl::Status status = (*interp)->SetInput(input);
    ASSERT_TRUE(status.ok()) << status;
  }
  absl::Status run = (*interp)->Run();
  ASSERT_TRUE(run.ok()) << run;

  absl::StatusOr<std::vector<HostArray>> want = def->reference(*values, inputs);
  ASSERT_TRUE(want.ok()) << want.status();
  ASSERT_EQ(want->size(), def->outputs.size());
  const double tol = def->tolerance(*values);
  for (const HostArray& expected : *want) {
    absl::StatusOr<HostArray> got = (*interp)->GetOutput(expected.name);
    ASSERT_TRUE(got.ok()) << got.status();
    // Exact: no error at all, under either measure.
    absl::StatusOr<OutputComparison> c =
        CompareOutput(*got, expected, def->comparison, exact ? 0.0 : tol);
    ASSERT_TRUE(c.ok()) << c.status();
    EXPECT_EQ(c->failures, 0)
        << expected.name << ": first mismatch at flat index "
        << c->first_failure << ": got " << c->first_got << ", want "
        << c->first_want;
  }
}

// --- fgcc: numerics ----------------------------------------------------

TEST(FgccInterpretedTest, MatchesReferenceAcrossTpLncAndDtypes) {
  for (const Settings& s : {
           Settings{{"tp_degree", "2"},
                    {"lnc", "1"},
                    {"m", "5"},
                    {"k", "7"},
                    {"n", "9"},
                    {"dtype", "float32"}},
           Settings{{"tp_degree", "2"},
                    {"lnc", "2"},
                    {"m", "6"},
                    {"k", "16"},
                    {"n", "8"}},
           Settings{{"tp_degree", "4"},
                    {"lnc", "1"},
                    {"m", "8"},
                    {"k", "32"},
                    {"n", "24"},
                    {"dtype", "float32"}},
           Settings{{"tp_degree", "4"},
                    {"lnc", "2"},
                    {"m", "12"},
                    {"k", "24"},
                    {"n", "40"}},
           Settings{{"tp_degree", "8"},
                    {"lnc", "2"},
                    {"m", "8"},
                    {"k", "16"},
                    {"n", "12"},
                    {"dtype", "float32"}},
           Settings{{"tp_degree", "8"},
                    {"lnc", "1"},
                    {"m", "4"},
                    {"k", "8"},
                    {"n", "8"}},
       }) {
    ExpectMatchesReference("fgcc", s, /*exact=*/false);
  }
}

TEST(FgccInterpretedTest, MatchesReferenceWithTwoReplicaGroups) {
  ExpectMatchesReference("fgcc",
                         {{"tp_degree", "4"},
                          {"num_groups", "2"},
                          {"m", "8"},
                          {"k", "20"},
                          {"n", "16"},
                          {"dtype", "float32"}},
                         /*exact=*/false);
  ExpectMatchesReference("fgcc",
                         {{"tp_degree", "2"},
                          {"num_groups", "2"},
                          {"m", "4"},
                          {"k", "8"},
                          {"n", "8"},
                          {"force_hbm_cc", "1"}},
                         /*exact=*/false);
}

// m beyond one 128-row tile, k beyond one 128-row contraction tile and n
// beyond one 512-column PSUM tile, none of them multiples.
TEST(FgccInterpretedTest, MatchesReferenceWithTailsOnEveryDim) {
  ExpectMatchesReference("fgcc",
                         {{"tp_degree", "2"},
                          {"lnc", "1"},
                          {"m", "130"},
                          {"k", "130"},
                          {"n", "520"},
                          {"dtype", "float32"}},
                         /*exact=*/false);
  ExpectMatchesReference("fgcc",
                         {{"tp_degree", "4"},
                          {"lnc", "2"},
                          {"m", "10"},
                          {"k", "200"},
                          {"n", "515"}},
                         /*exact=*/false);
}

TEST(FgccInterpretedTest, MatchesReferenceOverTheSharedHbmRing) {
  for (const Settings& s : {
           Settings{{"tp_degree", "2"},
                    {"lnc", "1"},
                    {"m", "5"},
                    {"k", "130"},
                    {"n", "9"},
                    {"force_hbm_cc", "1"},
                    {"dtype", "float32"}},
           Settings{{"tp_degree", "4"},
                    {"lnc", "2"},
                    {"m", "10"},
                    {"k", "24"},
                    {"n", "520"},
                    {"force_hbm_cc", "1"}},
           Settings{{"tp_degree", "8"},
                    {"lnc", "2"},
                    {"m", "8"},
                    {"k", "8"},
                    {"n", "8"},
                    {"force_hbm_cc", "1"},
                    {"dtype", "float32"}},
       }) {
    ExpectMatchesReference("fgcc", s, /*exact=*/false);
  }
}

// The single-buffered ring (num_buffers=1) computes the same, over both
// transports, for both ring kernels; exact for fp32 (the same sums in the
// same order).
TEST(FgccInterpretedTest, SingleBufferedRingMatchesReference) {
  for (const char* hbm : {"0", "1"}) {
    SCOPED_TRACE(absl::StrCat("force_hbm_cc=", hbm));
    const Settings ring = {{"tp_degree", "4"},   {"lnc", "2"},
                           {"m", "10"},          {"k", "130"},
                           {"num_buffers", "1"}, {"force_hbm_cc", hbm},
                           {"dtype", "float32"}};
    Settings fgcc = ring;
    fgcc.push_back({"n", "9"});
    ExpectMatchesReference("fgcc", fgcc, /*exact=*/false);
    ExpectMatchesReference("fg_allgather", ring, /*exact=*/true);
  }
}

// --- fgcc and fg_allgather: the ring in the graph -----------------------

// The resolver's iteration per channel, and the permutes' channels, in one
// core's stream.
struct RingCounts {
  std::map<int64_t, int64_t> permutes_per_channel;
  std::map<int64_t, std::vector<int64_t>> iterations_per_channel;
};

RingCounts CountRing(const proto::Graph& graph, int core) {
  RingCounts counts;
  for (const proto::Instruction& instr : StreamOf(graph, core).instructions()) {
    if (instr.opcode() == proto::COLLECTIVE_PERMUTE_IMPLICIT) {
      ++counts.permutes_per_channel[IntAttr(instr, "channel")];
    } else if (instr.opcode() ==
               proto::COLLECTIVE_PERMUTE_IMPLICIT_CURRENT_PROCESSING_RANK_ID) {
      counts.iterations_per_channel[IntAttr(instr, "channel")].push_back(
          IntAttr(instr, "iteration"));
    }
  }
  return counts;
}

TEST(FgccRingTest, EachChannelOfEachCoreRunsTpStepsWithTpMinusOnePermutes) {
  for (const std::string kernel : {"fgcc", "fg_allgather"}) {
    for (const char* force_hbm : {"0", "1"}) {
      SCOPED_TRACE(absl::StrCat(kernel, " force_hbm_cc=", force_hbm));
      absl::StatusOr<proto::Graph> graph =
          Trace(kernel, {{"tp_degree", "8"},
                         {"lnc", "2"},
                         {"m", "16"},
                         {"k", "16"},
                         {"force_hbm_cc", force_hbm}});
      ASSERT_TRUE(graph.ok()) << graph.status();
      ASSERT_EQ(graph->streams_size(), 2);
      for (int core = 0; core < 2; ++core) {
        const RingCounts counts = CountRing(*graph, core);
        // tp 8: two channels per core; step 0 is the local rows.
        EXPECT_EQ(counts.permutes_per_channel,
                  (std::map<int64_t, int64_t>{{0, 7}, {1, 7}}));
        const std::vector<int64_t> steps = {0, 1, 2, 3, 4, 5, 6, 7};
        EXPECT_EQ(
            counts.iterations_per_channel,
            (std::map<int64_t, std::vector<int64_t>>{{0, steps}, {1, steps}}));
      }
    }
  }
}

TEST(FgccRingTest, ChannelCountFollowsTheTable) {
  struct Case {
    int tp;
    int nc_version;
    int64_t channels;
  };
  for (const Case& c : std::vector<Case>{{2, 3, 1},
                                         {4, 3, 2},
                                         {6, 3, 1},
                                         {8, 3, 2},
                                         {16, 3, 2},
                                         {32, 3, 2},
                                         {32, 4, 2},
                                         {32, 2, 4},
                                         {64, 3, 4},
                                         {128, 2, 4},
                                         {10, 3, 1}}) {
    SCOPED_TRACE(absl::StrCat("tp ", c.tp, " nc_version ", c.nc_version));
    EXPECT_EQ(ChannelCount(c.tp, c.nc_version), c.channels);
    for (const std::string kernel : {"fgcc", "fg_allgather"}) {
      absl::StatusOr<proto::Graph> graph =
          Trace(kernel, {{"tp_degree", absl::StrCat(c.tp)},
                         {"nc_version", absl::StrCat(c.nc_version)},
                         {"lnc", "1"},
                         {"m", "8"},
                         {"k", "8"},
                         {"dtype", "float32"}});
      ASSERT_TRUE(graph.ok()) << graph.status();
      const RingCounts counts = CountRing(*graph, 0);
      ASSERT_EQ(static_cast<int64_t>(counts.permutes_per_channel.size()),
                c.channels)
          << kernel;
      for (const auto& [channel, permutes] : counts.permutes_per_channel) {
        EXPECT_LT(channel, c.channels);
        EXPECT_EQ(permutes, c.tp - 1) << kernel << " channel " << channel;
      }
      // The channels split the 8 rows between them.
      int64_t elements = 0;
      for (const proto::Instruction* permute :
           InstructionsOf(*graph, proto::COLLECTIVE_PERMUTE_IMPLICIT)) {
        int64_t n = 1;
        const auto& pattern = OperandOf(*permute, "src").pattern();
        for (int i = 1; i < pattern.size(); i += 2) n *= pattern[i];
        elements += n;
      }
      EXPECT_EQ(elements, (c.tp - 1) * 8 * 8) << kernel;
    }
  }
}

// Walks core `core`'s stream; for each instruction reports the ring step
// whose resolver came last (-1 before the first).
template <typename Fn>
void ForEachWithStep(const proto::Graph& graph, int core, Fn&& fn) {
  int64_t step = -1;
  for (const proto::Instruction& instr : StreamOf(graph, core).instructions()) {
    if (instr.opcode() ==
        proto::COLLECTIVE_PERMUTE_IMPLICIT_CURRENT_PROCESSING_RANK_ID) {
      step = IntAttr(instr, "iteration");
    }
    fn(instr, step);
  }
}

// The ids of the ring buffers buf0 and buf1 seen by core `core`'s permutes.
std::pair<uint32_t, uint32_t> RingBufferIds(const proto::Graph& graph,
                                            int core) {
  uint32_t ids[2] = {0, 0};
  for (const proto::Instruction* permute :
       InstructionsOf(graph, proto::COLLECTIVE_PERMUTE_IMPLICIT, core)) {
    for (int i = 0; i < 2; ++i) {
      const proto::Tensor& t =
          OperandTensor(graph, *permute, i == 0 ? "dst" : "src");
      if (t.name() == "buf0") ids[0] = t.id();
      if (t.name() == "buf1") ids[1] = t.id();
    }
  }
  return {ids[0], ids[1]};
}

TEST(FgccRingTest, DoubleBufferSbufPermuteOfNextStepWritesTheOtherBuffer) {
  absl::StatusOr<proto::Graph> graph = Trace(
      "fgcc",
      {{"tp_degree", "4"}, {"lnc", "1"}, {"m", "8"}, {"k", "16"}, {"n", "8"}});
  ASSERT_TRUE(graph.ok()) << graph.status();
  const auto [buf0, buf1] = RingBufferIds(*graph, 0);
  ASSERT_NE(buf0, 0u);
  ASSERT_NE(buf1, 0u);
  ASSERT_NE(buf0, buf1);
  const uint32_t buf[2] = {buf0, buf1};
  // Disjoint SBUF bytes: one buffer's writes cannot clobber the other.
  const proto::Tensor& t0 = TensorOf(*graph, buf0);
  const proto::Tensor& t1 = TensorOf(*graph, buf1);
  EXPECT_EQ(t0.space(), proto::SBUF);
  EXPECT_EQ(t1.space(), proto::SBUF);
  const int64_t row_bytes = t0.shape(1) * t0.shape(2) * DTypeSize(t0.dtype());
  EXPECT_TRUE(t0.address() + row_bytes <= t1.address() ||
              t1.address() + row_bytes <= t0.address());

  // Permute p (1-based, per channel) moves buf[(p-1) % 2] into buf[p % 2]
  // and is issued before step p - 1's matmuls, which read buf[(p-1) % 2].
  std::map<int64_t, int64_t> permutes_seen;
  std::map<int64_t, uint32_t> permute_dst_after_step;  // step -> dst
  int matmuls = 0;
  ForEachWithStep(
      *graph, 0, [&](const proto::Instruction& instr, int64_t step) {
        if (instr.opcode() == proto::COLLECTIVE_PERMUTE_IMPLICIT) {
          const int64_t p = ++permutes_seen[IntAttr(instr, "channel")];
          EXPECT_EQ(OperandOf(instr, "dst").tensor_id(), buf[p % 2])
              << "permute " << p;
          EXPECT_EQ(OperandOf(instr, "src").tensor_id(), buf[(p - 1) % 2])
              << "permute " << p;
          permute_dst_after_step[step + 1] =
              OperandOf(instr, "dst").tensor_id();
        } else if (instr.opcode() == proto::NC_MATMUL) {
          ++matmuls;
          ASSERT_GE(step, 0);
          const uint32_t stationary =
              OperandOf(instr, "stationary").tensor_id();
          EXPECT_EQ(stationary, buf[step % 2]) << "step " << step;
          // The permute launched for step + 1 writes the other buffer.
          if (step + 1 < 4) {
            ASSERT_TRUE(permute_dst_after_step.count(step)) << "step " << step;
            EXPECT_NE(permute_dst_after_step[step], stationary);
          }
        }
      });
  EXPECT_EQ(matmuls, 4 * 2);  // 4 steps x 2 channels x 1 tile
}

TEST(FgccRingTest, DoubleBufferOverSharedHbmStagesFromTheCurrentBuffer) {
  absl::StatusOr<proto::Graph> graph = Trace("fgcc", {{"tp_degree", "4"},
                                                      {"lnc", "2"},
                                                      {"m", "8"},
                                                      {"k", "16"},
                                                      {"n", "8"},
                                                      {"force_hbm_cc", "1"}});
  ASSERT_TRUE(graph.ok()) << graph.status();
  for (int core = 0; core < 2; ++core) {
    const auto [buf0, buf1] = RingBufferIds(*graph, core);
    ASSERT_NE(buf0, 0u);
    ASSERT_NE(buf1, 0u);
    const uint32_t buf[2] = {buf0, buf1};
    EXPECT_EQ(TensorOf(*graph, buf0).space(), proto::SHARED_HBM);
    EXPECT_EQ(TensorOf(*graph, buf1).space(), proto::SHARED_HBM);
    int staged = 0;
    ForEachWithStep(
        *graph, core, [&](const proto::Instruction& instr, int64_t step) {
          if (instr.opcode() != proto::DMA_COPY || step < 0) return;
          const uint32_t src = OperandOf(instr, "src").tensor_id();
          if (src != buf0 && src != buf1) return;
          ++staged;  // lhs^T tile loaded for a matmul of this step
          EXPECT_EQ(src, buf[step % 2]) << "core " << core << " step " << step;
          EXPECT_EQ(OperandTensor(*graph, instr, "dst").space(), proto::SBUF);
        });
    EXPECT_EQ(staged, 4 * 2);  // 4 steps x 2 channels x 1 tile
  }
}

TEST(FgccRingTest, SlotWritesUseTheResolverOfTheirStepAsScalarOffset) {
  for (const char* force_hbm : {"0", "1"}) {
    SCOPED_TRACE(absl::StrCat("force_hbm_cc=", force_hbm));
    absl::StatusOr<proto::Graph> graph =
        Trace("fgcc", {{"tp_degree", "4"},
                       {"lnc", "2"},
                       {"m", "12"},
                       {"k", "16"},
                       {"n", "600"},
                       {"force_hbm_cc", force_hbm}});
    ASSERT_TRUE(graph.ok()) << graph.status();
    for (int core = 0; core < 2; ++core) {
      // resolver dst -> its iteration; tensor_scalar dst -> resolver dst.
      std::map<uint32_t, int64_t> resolver_iteration;
      std::map<uint32_t, uint32_t> slot_row_source;
      int writes = 0;
      ForEachWithStep(
          *graph, core, [&](const proto::Instruction& instr, int64_t step) {
            if (instr.opcode() ==
                proto::COLLECTIVE_PERMUTE_IMPLICIT_CURRENT_PROCESSING_RANK_ID) {
              resolver_iteration[OperandOf(instr, "dst").tensor_id()] =
                  IntAttr(instr, "iteration");
            } else if (instr.opcode() == proto::TENSOR_SCALAR) {
              slot_row_source[OperandOf(instr, "dst").tensor_id()] =
                  OperandOf(instr, "data").tensor_id();
            } else if (instr.opcode() == proto::DMA_COPY &&
                       OperandTensor(*graph, instr, "dst").name() == "out") {
              ++writes;
              const proto::AccessPattern& dst = OperandOf(instr, "dst");
              ASSERT_TRUE(dst.has_dynamic());
              EXPECT_EQ(dst.dynamic().kind(), proto::DynamicOffset::SCALAR);
              EXPECT_EQ(dst.dynamic().indirect_dim(), 0u);
              const uint32_t slot_row = dst.dynamic().tensor_id();
              ASSERT_TRUE(slot_row_source.count(slot_row));
              const uint32_t numerator = slot_row_source[slot_row];
              ASSERT_TRUE(resolver_iteration.count(numerator));
              // Tensor ids are unique per allocation: the resolver of this
              // very step.
              EXPECT_EQ(resolver_iteration[numerator], step);
            }
          });
      // 4 steps x 2 channels x 2 n tiles (512 + 88).
      EXPECT_EQ(writes, 4 * 2 * 2) << "core " << core;
    }
  }
}

TEST(FgccRingTest, SlotRowIsTheResolverTimesRowsPerRank) {
  absl::StatusOr<proto::Graph> graph = Trace(
      "fgcc",
      {{"tp_degree", "2"}, {"lnc", "1"}, {"m", "24"}, {"k", "8"}, {"n", "8"}});
  ASSERT_TRUE(graph.ok()) << graph.status();
  const auto scalars = InstructionsOf(*graph, proto::TENSOR_SCALAR);
  ASSERT_EQ(scalars.size(), 2u);
  for (const proto::Instruction* ts : scalars) {
    EXPECT_EQ(OperandTensor(*graph, *ts, "dst").dtype(), proto::INT32);
    std::string op0;
    double scalar0 = 0.0;
    for (const proto::Attr& attr : ts->attrs()) {
      if (attr.name() == "op0") op0 = attr.s();
      if (attr.name() == "scalar0") scalar0 = attr.f();
    }
    EXPECT_EQ(op0, "multiply");
    EXPECT_EQ(scalar0, 24.0);
  }
}

TEST(FgccRingTest, CoresSplitTheRowsAndRunTheirOwnCollectives) {
  absl::StatusOr<proto::Graph> graph = Trace(
      "fgcc",
      {{"tp_degree", "4"}, {"lnc", "2"}, {"m", "16"}, {"k", "8"}, {"n", "8"}});
  ASSERT_TRUE(graph.ok()) << graph.status();
  ASSERT_EQ(graph->world().num_cores(), 2u);
  // Each core's SBUF buffer holds its half of the 16 rows.
  for (int core = 0; core < 2; ++core) {
    const auto [buf0, buf1] = RingBufferIds(*graph, core);
    ASSERT_NE(buf0, 0u);
    EXPECT_EQ(TensorOf(*graph, buf0).core(), static_cast<uint32_t>(core));
    EXPECT_EQ(TensorOf(*graph, buf0).shape(2), 8);
    EXPECT_EQ(TensorOf(*graph, buf1).shape(2), 8);
  }
}

TEST(FgccPathTest, RingInSbufWhileTheDoubleBufferFitsTheBudget) {
  // fp32, k = n = 128, lnc 1: rhs is 64 KiB and held in SBUF, leaving
  // 24 MiB - 64 KiB for 2 x (m x 128 x 4) bytes: m <= 24512.
  auto space = [](const std::string& m, const std::string& force) {
    absl::StatusOr<proto::Graph> graph = Trace("fgcc", {{"tp_degree", "2"},
                                                        {"lnc", "1"},
                                                        {"m", m},
                                                        {"k", "128"},
                                                        {"n", "128"},
                                                        {"force_hbm_cc", force},
                                                        {"dtype", "float32"}});
    EXPECT_TRUE(graph.ok()) << graph.status();
    if (!graph.ok()) return proto::MEMORY_SPACE_UNSPECIFIED;
    const auto permutes =
        InstructionsOf(*graph, proto::COLLECTIVE_PERMUTE_IMPLICIT);
    EXPECT_EQ(permutes.size(), 1u);
    if (permutes.empty()) return proto::MEMORY_SPACE_UNSPECIFIED;
    EXPECT_EQ(OperandTensor(*graph, *permutes[0], "dst").space(),
              OperandTensor(*graph, *permutes[0], "src").space());
    return OperandTensor(*graph, *permutes[0], "dst").space();
  };
  EXPECT_EQ(space("8", "0"), proto::SBUF);
  EXPECT_EQ(space("24512", "0"), proto::SBUF);
  EXPECT_EQ(space("24513", "0"), proto::SHARED_HBM);
  EXPECT_EQ(space("8", "1"), proto::SHARED_HBM);
}

TEST(FgccPathTest, RingPathFunctionAgreesWithTheBudget) {
  FgccParams params;
  params.tp_degree = 2;
  params.lnc = 1;
  params.k = 128;
  params.n = 128;
  params.dtype = proto::FLOAT32;
  params.m = 24512;
  EXPECT_EQ(FgccRingPath(params), RingPath::kSbuf);
  params.m = 24513;
  EXPECT_EQ(FgccRingPath(params), RingPath::kHbm);
  // A narrow k packs many rows into each partition of lhs^T: 2 buffers x
  // 32768 rows x 4 bytes exceed the 192 KiB per-partition share even though
  // 2 x lhs bytes (2 MiB) fit the budget.
  params.k = 8;
  params.m = 32768;
  EXPECT_EQ(FgccRingPath(params), RingPath::kHbm);
  params.lnc = 2;  // half the rows per core: fits
  EXPECT_EQ(FgccRingPath(params), RingPath::kSbuf);
}

TEST(FgccPathTest, RhsHeldInSbufWhenTwiceItFitsSixteenMiB) {
  // fp32 k = 1024: n = 2048 is 8 MiB of rhs (2x = 16 MiB, held); n = 2049
  // is over (streamed per tile).
  for (const auto& [n, held] : std::vector<std::pair<std::string, bool>>{
           {"2048", true}, {"2049", false}}) {
    SCOPED_TRACE(absl::StrCat("n=", n));
    absl::StatusOr<proto::Graph> graph = Trace("fgcc", {{"tp_degree", "2"},
                                                        {"lnc", "1"},
                                                        {"m", "4"},
                                                        {"k", "1024"},
                                                        {"n", n},
                                                        {"dtype", "float32"}});
    ASSERT_TRUE(graph.ok()) << graph.status();
    int rhs_loads = 0;
    for (const proto::Instruction* dma :
         InstructionsOf(*graph, proto::DMA_COPY)) {
      if (OperandTensor(*graph, *dma, "src").name() == "rhs") ++rhs_loads;
    }
    const auto matmuls = InstructionsOf(*graph, proto::NC_MATMUL);
    for (const proto::Instruction* mm : matmuls) {
      EXPECT_EQ(OperandTensor(*graph, *mm, "moving").name(),
                held ? "rhs_sb" : "rhs_tile");
    }
    // Held: one load per k tile. Streamed: one per matmul.
    EXPECT_EQ(rhs_loads, held ? 8 : static_cast<int>(matmuls.size()));
    EXPECT_EQ(matmuls.size(), 2u * (held ? 4 : 5) * 8);
  }
}

TEST(FgccPathTest, MatmulsRespectTileLimitsAndEvacuatePsumBeforeDma) {
  absl::StatusOr<proto::Graph> graph = Trace("fgcc", {{"tp_degree", "2"},
                                                      {"lnc", "1"},
                                                      {"m", "300"},
                                                      {"k", "300"},
                                                      {"n", "700"}});
  ASSERT_TRUE(graph.ok()) << graph.status();
  const auto matmuls = InstructionsOf(*graph, proto::NC_MATMUL);
  // 2 steps x m tiles (128, 128, 44) x n tiles (512, 188) x k tiles (3).
  EXPECT_EQ(matmuls.size(), 2u * 3 * 2 * 3);
  for (const proto::Instruction* mm : matmuls) {
    const proto::Tensor& psum = OperandTensor(*graph, *mm, "dst");
    EXPECT_EQ(psum.space(), proto::PSUM);
    EXPECT_EQ(psum.dtype(), proto::FLOAT32);
    EXPECT_LE(psum.shape(0), 128);
    EXPECT_LE(psum.shape(1), 512);
  }
  for (const proto::Instruction* dma :
       InstructionsOf(*graph, proto::DMA_COPY)) {
    EXPECT_NE(OperandTensor(*graph, *dma, "dst").space(), proto::PSUM);
    EXPECT_NE(OperandTensor(*graph, *dma, "src").space(), proto::PSUM);
  }
  EXPECT_EQ(InstructionsOf(*graph, proto::ACTIVATION).size(), 2u * 3 * 2);
}

TEST(FgccValidationTest, RefusesBadParametersNamingThem) {
  struct Case {
    Settings settings;
    std::string message;
  };
  for (const Case& c : std::vector<Case>{
           {{{"tp_degree", "3"}}, "parameter 'tp_degree' is 3"},
           {{{"tp_degree", "0"}}, "parameter 'tp_degree' is 0"},
           {{{"tp_degree", "5000"}}, "parameter 'tp_degree' is 5000"},
           {{{"num_groups", "0"}}, "parameter 'num_groups' is 0"},
           {{{"tp_degree", "64"}, {"num_groups", "65"}},
            "parameter 'num_groups' is 65"},
           {{{"m", "0"}}, "parameter 'm' is 0"},
           {{{"k", "65537"}}, "parameter 'k' is 65537"},
           {{{"n", "-1"}}, "parameter 'n' is -1"},
           {{{"lnc", "3"}}, "parameter 'lnc' is 3"},
           {{{"nc_version", "1"}}, "parameter 'nc_version' is 1"},
           {{{"force_hbm_cc", "2"}}, "parameter 'force_hbm_cc' is 2"},
           {{{"m", "65536"}, {"k", "65536"}, {"n", "65536"}}, "matmul tiles"},
       }) {
    absl::StatusOr<proto::Graph> graph = Trace("fgcc", c.settings);
    ASSERT_FALSE(graph.ok()) << Describe(c.settings);
    EXPECT_THAT(graph.status().message(), HasSubstr(c.message));
  }
}

TEST(FgccInterfaceTest, WorldInputsAndOutputMatchTheContract) {
  absl::StatusOr<proto::Graph> graph = Trace("fgcc", {{"tp_degree", "4"},
                                                      {"num_groups", "2"},
                                                      {"m", "6"},
                                                      {"k", "5"},
                                                      {"n", "7"},
                                                      {"dtype", "float32"}});
  ASSERT_TRUE(graph.ok()) << graph.status();
  EXPECT_EQ(graph->world().num_ranks(), 8u);
  EXPECT_EQ(graph->world().num_cores(), 2u);
  ASSERT_EQ(graph->world().replica_groups_size(), 2);
  EXPECT_THAT(graph->world().replica_groups(0).ranks(),
              ::testing::ElementsAre(0, 1, 2, 3));
  EXPECT_THAT(graph->world().replica_groups(1).ranks(),
              ::testing::ElementsAre(4, 5, 6, 7));
  std::map<std::string, const proto::Tensor*> io;
  for (const proto::Tensor& t : graph->tensors()) {
    if (t.role() != proto::ROLE_INTERNAL) io[t.name()] = &t;
  }
  ASSERT_EQ(io.size(), 3u);
  EXPECT_THAT(io.at("lhs")->shape(), ::testing::ElementsAre(6, 5));
  EXPECT_TRUE(io.at("lhs")->per_rank());
  EXPECT_THAT(io.at("rhs")->shape(), ::testing::ElementsAre(5, 7));
  EXPECT_TRUE(io.at("rhs")->per_rank());
  EXPECT_THAT(io.at("out")->shape(), ::testing::ElementsAre(24, 7));
  EXPECT_EQ(io.at("out")->role(), proto::ROLE_OUTPUT);
  EXPECT_EQ(io.at("out")->dtype(), proto::FLOAT32);
}

TEST(FgccReferenceTest, GathersGroupRowsInRankOrderTimesOwnRhs) {
  FgccParams params;
  params.tp_degree = 2;
  params.num_groups = 1;
  params.m = 1;
  params.k = 1;
  params.n = 2;
  params.dtype = proto::FLOAT32;
  // lhs: rank 0 = [2], rank 1 = [3]; rhs: rank 0 = [1, 10], rank 1 =
  // [-1, 0.5].
  HostArray lhs{"lhs", proto::FLOAT32, {2, 1, 1}, {2, 3}, {}, {}};
  HostArray rhs{"rhs", proto::FLOAT32, {2, 1, 2}, {1, 10, -1, 0.5f}, {}, {}};
  absl::StatusOr<std::vector<HostArray>> out =
      FgccReference(params, {lhs, rhs});
  ASSERT_TRUE(out.ok()) << out.status();
  ASSERT_EQ(out->size(), 1u);
  EXPECT_EQ((*out)[0].name, "out");
  EXPECT_THAT((*out)[0].shape, ::testing::ElementsAre(2, 2, 2));
  EXPECT_THAT((*out)[0].f32, ::testing::ElementsAre(2, 20, 3, 30,  //
                                                    -2, 1, -3, 1.5f));
}

// --- fg_allgather ------------------------------------------------------

TEST(FgAllgatherInterpretedTest, MatchesReferenceExactly) {
  for (const Settings& s : {
           Settings{{"tp_degree", "2"},
                    {"lnc", "1"},
                    {"m", "5"},
                    {"k", "7"},
                    {"dtype", "float32"}},
           Settings{
               {"tp_degree", "2"}, {"lnc", "2"}, {"m", "130"}, {"k", "600"}},
           Settings{{"tp_degree", "4"},
                    {"lnc", "2"},
                    {"m", "12"},
                    {"k", "130"},
                    {"dtype", "float32"}},
           Settings{{"tp_degree", "4"},
                    {"num_groups", "2"},
                    {"lnc", "1"},
                    {"m", "6"},
                    {"k", "9"}},
           Settings{{"tp_degree", "8"},
                    {"lnc", "2"},
                    {"m", "8"},
                    {"k", "16"},
                    {"dtype", "float32"}},
           Settings{{"tp_degree", "4"},
                    {"lnc", "2"},
                    {"m", "10"},
                    {"k", "130"},
                    {"force_hbm_cc", "1"}},
           Settings{{"tp_degree", "8"},
                    {"num_groups", "2"},
                    {"lnc", "1"},
                    {"m", "3"},
                    {"k", "5"},
                    {"force_hbm_cc", "1"},
                    {"dtype", "float32"}},
       }) {
    ExpectMatchesReference("fg_allgather", s, /*exact=*/true);
  }
}

TEST(FgAllgatherRingTest, TransposesTheCurrentBufferAndScattersToTheSlot) {
  absl::StatusOr<proto::Graph> graph =
      Trace("fg_allgather",
            {{"tp_degree", "4"}, {"lnc", "1"}, {"m", "8"}, {"k", "200"}});
  ASSERT_TRUE(graph.ok()) << graph.status();
  EXPECT_TRUE(InstructionsOf(*graph, proto::NC_MATMUL).empty());
  const auto [buf0, buf1] = RingBufferIds(*graph, 0);
  ASSERT_NE(buf0, 0u);
  const uint32_t buf[2] = {buf0, buf1};
  int transposes = 0, scatters = 0;
  ForEachWithStep(
      *graph, 0, [&](const proto::Instruction& instr, int64_t step) {
        if (instr.opcode() == proto::NC_TRANSPOSE) {
          ++transposes;
          EXPECT_EQ(OperandOf(instr, "data").tensor_id(), buf[step % 2]);
          EXPECT_EQ(OperandTensor(*graph, instr, "dst").space(), proto::PSUM);
        } else if (instr.opcode() == proto::DMA_COPY &&
                   OperandTensor(*graph, instr, "dst").name() == "result") {
          ++scatters;
          EXPECT_EQ(OperandOf(instr, "dst").dynamic().kind(),
                    proto::DynamicOffset::SCALAR);
          EXPECT_EQ(OperandTensor(*graph, instr, "src").space(), proto::SBUF);
        }
      });
  // 4 steps x 2 channels x k tiles (128, 72); one scatter per row block.
  EXPECT_EQ(transposes, 4 * 2 * 2);
  EXPECT_EQ(scatters, 4 * 2);
}

TEST(FgAllgatherRingTest, HbmRingScattersStraightFromTheSharedBuffer) {
  absl::StatusOr<proto::Graph> graph =
      Trace("fg_allgather", {{"tp_degree", "4"},
                             {"lnc", "2"},
                             {"m", "8"},
                             {"k", "20"},
                             {"force_hbm_cc", "1"}});
  ASSERT_TRUE(graph.ok()) << graph.status();
  EXPECT_TRUE(InstructionsOf(*graph, proto::NC_TRANSPOSE).empty());
  for (int core = 0; core < 2; ++core) {
    const auto [buf0, buf1] = RingBufferIds(*graph, core);
    const uint32_t buf[2] = {buf0, buf1};
    int scatters = 0;
    ForEachWithStep(
        *graph, core, [&](const proto::Instruction& instr, int64_t step) {
          if (instr.opcode() == proto::DMA_COPY &&
              OperandTensor(*graph, instr, "dst").name() == "result") {
            ++scatters;
            EXPECT_EQ(OperandOf(instr, "src").tensor_id(), buf[step % 2]);
            EXPECT_EQ(OperandOf(instr, "dst").dynamic().kind(),
                      proto::DynamicOffset::SCALAR);
          }
        });
    EXPECT_EQ(scatters, 4 * 2);
  }
}

TEST(FgAllgatherPathTest, SbufRingUnlessForcedOrOverTheBudget) {
  RingParams params;
  params.tp_degree = 2;
  params.lnc = 1;
  params.k = 128;
  params.dtype = proto::FLOAT32;
  params.m = 24576;  // 2 x 12 MiB = the whole 24 MiB budget
  EXPECT_EQ(FgAllgatherRingPath(params), RingPath::kSbuf);
  params.m = 24577;
  EXPECT_EQ(FgAllgatherRingPath(params), RingPath::kHbm);
  params.m = 8;
  params.force_hbm_cc = true;
  EXPECT_EQ(FgAllgatherRingPath(params), RingPath::kHbm);
}

TEST(FgAllgatherValidationTest, RefusesBadParametersNamingThem) {
  for (const auto& [settings, message] :
       std::vector<std::pair<Settings, std::string>>{
           {{{"tp_degree", "7"}}, "parameter 'tp_degree' is 7"},
           {{{"m", "0"}}, "parameter 'm' is 0"},
           {{{"lnc", "0"}}, "parameter 'lnc' is 0"},
           {{{"force_hbm_cc", "-1"}}, "parameter 'force_hbm_cc' is -1"},
           {{{"n", "4"}}, "unknown parameter 'n'"},
       }) {
    absl::StatusOr<proto::Graph> graph = Trace("fg_allgather", settings);
    ASSERT_FALSE(graph.ok()) << Describe(settings);
    EXPECT_THAT(graph.status().message(), HasSubstr(message));
  }
}

// --- sb2sb_allgather -----------------------------------------------------

TEST(Sb2sbAllgatherTest, MatchesReferenceExactly) {
  for (const Settings& s : {
           Settings{{"tp_degree", "2"},
                    {"rows", "5"},
                    {"width", "3"},
                    {"dtype", "float32"}},
           Settings{{"tp_degree", "4"}, {"rows", "128"}, {"width", "7"}},
           Settings{{"tp_degree", "8"},
                    {"rows", "17"},
                    {"width", "4"},
                    {"dtype", "float32"}},
           Settings{{"tp_degree", "4"},
                    {"num_groups", "2"},
                    {"rows", "9"},
                    {"width", "5"}},
       }) {
    ExpectMatchesReference("sb2sb_allgather", s, /*exact=*/true);
  }
}

TEST(Sb2sbAllgatherTest, OneAllGatherSbufToSbufAlongDimOne) {
  absl::StatusOr<proto::Graph> graph = Trace(
      "sb2sb_allgather", {{"tp_degree", "4"}, {"rows", "100"}, {"width", "6"}});
  ASSERT_TRUE(graph.ok()) << graph.status();
  EXPECT_EQ(graph->world().num_cores(), 1u);
  const auto gathers = InstructionsOf(*graph, proto::ALL_GATHER);
  ASSERT_EQ(gathers.size(), 1u);
  const proto::Instruction& gather = *gathers[0];
  EXPECT_EQ(IntAttr(gather, "collective_dim"), 1);
  const proto::Tensor& dst = OperandTensor(*graph, gather, "dst");
  const proto::Tensor& src = OperandTensor(*graph, gather, "src");
  EXPECT_EQ(dst.space(), proto::SBUF);
  EXPECT_EQ(src.space(), proto::SBUF);
  EXPECT_THAT(src.shape(), ::testing::ElementsAre(100, 6));
  EXPECT_THAT(dst.shape(), ::testing::ElementsAre(100, 24));
  // Loaded and stored once; no ring.
  EXPECT_EQ(InstructionsOf(*graph, proto::DMA_COPY).size(), 2u);
  EXPECT_TRUE(
      InstructionsOf(*graph, proto::COLLECTIVE_PERMUTE_IMPLICIT).empty());
}

TEST(Sb2sbAllgatherTest, RefusesMoreThan128RowsAndOversizedTiles) {
  for (const auto& [settings, message] :
       std::vector<std::pair<Settings, std::string>>{
           {{{"rows", "129"}}, "parameter 'rows' is 129"},
           {{{"rows", "0"}}, "parameter 'rows' is 0"},
           {{{"width", "0"}}, "parameter 'width' is 0"},
           {{{"tp_degree", "0"}}, "parameter 'tp_degree' is 0"},
           {{{"tp_degree", "64"}, {"width", "2048"}}, "width=2048"},
           {{{"lnc", "2"}}, "unknown parameter 'lnc'"},
       }) {
    absl::StatusOr<proto::Graph> graph = Trace("sb2sb_allgather", settings);
    ASSERT_FALSE(graph.ok()) << Describe(settings);
    EXPECT_THAT(graph.status().message(), HasSubstr(message));
  }
}

TEST(Sb2sbAllgatherTiledTest, MatchesReferenceExactly) {
  for (const Settings& s : {
           Settings{{"tp_degree", "2"},
                    {"rows", "300"},
                    {"width", "3"},
                    {"lnc", "2"},
                    {"dtype", "float32"}},
           Settings{{"tp_degree", "4"},
                    {"rows", "200"},
                    {"width", "5"},
                    {"lnc", "1"}},
           Settings{{"tp_degree", "8"},
                    {"rows", "40"},
                    {"width", "2"},
                    {"lnc", "2"},
                    {"dtype", "float32"}},
           Settings{{"tp_degree", "2"},
                    {"num_groups", "2"},
                    {"rows", "260"},
                    {"width", "4"},
                    {"lnc", "2"}},
       }) {
    ExpectMatchesReference("sb2sb_allgather_tiled", s, /*exact=*/true);
  }
}

TEST(Sb2sbAllgatherTiledTest, TilesRowsByMinM128AndSplitsTilesAcrossCores) {
  struct Case {
    std::string rows;
    std::string lnc;
    std::vector<std::vector<int64_t>> tile_rows_per_core;
  };
  for (const Case& c : std::vector<Case>{
           {"300", "2", {{128, 128}, {44}}},
           {"300", "1", {{128, 128, 44}}},
           {"512", "2", {{128, 128}, {128, 128}}},
           {"50", "2", {{50}, {}}},
       }) {
    SCOPED_TRACE(absl::StrCat("rows=", c.rows, " lnc=", c.lnc));
    absl::StatusOr<proto::Graph> graph = Trace(
        "sb2sb_allgather_tiled",
        {{"tp_degree", "4"}, {"rows", c.rows}, {"width", "8"}, {"lnc", c.lnc}});
    ASSERT_TRUE(graph.ok()) << graph.status();
    ASSERT_EQ(graph->streams_size(),
              static_cast<int>(c.tile_rows_per_core.size()));
    for (int core = 0; core < graph->streams_size(); ++core) {
      std::vector<int64_t> tile_rows;
      for (const proto::Instruction* gather :
           InstructionsOf(*graph, proto::ALL_GATHER, core)) {
        EXPECT_EQ(IntAttr(*gather, "collective_dim"), 1);
        const proto::Tensor& src = OperandTensor(*graph, *gather, "src");
        const proto::Tensor& dst = OperandTensor(*graph, *gather, "dst");
        EXPECT_EQ(src.space(), proto::SBUF);
        EXPECT_EQ(dst.space(), proto::SBUF);
        EXPECT_EQ(dst.shape(1), 32);
        tile_rows.push_back(src.shape(0));
      }
      EXPECT_EQ(tile_rows, c.tile_rows_per_core[core]) << "core " << core;
    }
  }
}

TEST(Sb2sbAllgatherTiledTest, RefusesBadParametersNamingThem) {
  for (const auto& [settings, message] :
       std::vector<std::pair<Settings, std::string>>{
           {{{"rows", "70000"}}, "parameter 'rows' is 70000"},
           {{{"lnc", "3"}}, "parameter 'lnc' is 3"},
           {{{"num_groups", "0"}}, "parameter 'num_groups' is 0"},
       }) {
    absl::StatusOr<proto::Graph> graph =
        Trace("sb2sb_allgather_tiled", settings);
    ASSERT_FALSE(graph.ok()) << Describe(settings);
    EXPECT_THAT(graph.status().message(), HasSubstr(message));
  }
}

}  // namespace
}  // namespace nkigraph::kernels
