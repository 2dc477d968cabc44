// The convolution kernels conv1d and depthwise_conv1d: interpreted output
// against the references, the mechanisms KERNELS.md says the graph must
// show, and trace-time refusals.
#include <algorithm>
#include <cstdint>
#include <map>
#include <random>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "kernels/compare.h"
#include "kernels/conv1d.h"
#include "kernels/depthwise_conv1d.h"
#include "kernels/registry.h"
#include "proto/nkigraph.pb.h"
#include "tests/test_util.h"
#include "util/dtype.h"

namespace nkigraph::kernels {
namespace {

using nkigraph::testing::FloatAttr;
using nkigraph::testing::InstructionsOf;
using nkigraph::testing::IntAttr;
using nkigraph::testing::OperandOf;
using nkigraph::testing::StrAttr;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::UnorderedElementsAreArray;

using Settings = std::vector<std::pair<std::string, std::string>>;

// --- Graph inspection
// ---------------------------------------------------------

absl::StatusOr<proto::Graph> Trace(const std::string& kernel,
                                   const Settings& settings) {
  return KernelRegistry::Global().Trace(kernel, settings);
}

bool HasOperand(const proto::Instruction& instr, int i) {
  return i < instr.operands_size() && instr.operands(i).tensor_id() != 0;
}

const proto::Tensor& Operand(const proto::Graph& graph,
                             const proto::Instruction& instr, int i) {
  return graph.tensors(static_cast<int>(instr.operands(i).tensor_id()) - 1);
}

const proto::Tensor* TensorNamed(const proto::Graph& graph,
                                 const std::string& name) {
  for (const proto::Tensor& t : graph.tensors()) {
    if (t.name() == name) return &t;
  }
  return nullptr;
}

bool StartsWith(const std::string& s, const std::string& prefix) {
  return s.rfind(prefix, 0) == 0;
}

// The access pattern of operand i as [stride, count] pairs.
std::vector<std::pair<int64_t, int64_t>> Pattern(
    const proto::Instruction& instr, int i) {
  std::vector<std::pair<int64_t, int64_t>> dims;
  const auto& p = instr.operands(i).pattern();
  for (int d = 0; d + 1 < p.size(); d += 2) dims.emplace_back(p[d], p[d + 1]);
  return dims;
}

int64_t Partitions(const proto::Instruction& instr, int i) {
  return Pattern(instr, i)[0].second;
}

int64_t FreeSize(const proto::Instruction& instr, int i) {
  int64_t n = 1;
  for (const auto& [stride, count] : Pattern(instr, i)) n *= count;
  return n / Partitions(instr, i);
}

// First partition of an on-chip operand.
int64_t PartitionStart(const proto::Graph& graph,
                       const proto::Instruction& instr, int i) {
  const proto::Tensor& t = Operand(graph, instr, i);
  int64_t row = 1;
  for (int d = 1; d < t.shape_size(); ++d) row *= t.shape(d);
  return t.partition_offset() + instr.operands(i).offset() / row;
}

// Every flat element index operand i touches.
std::vector<int64_t> FlatElements(const proto::Instruction& instr, int i) {
  std::vector<int64_t> flat = {instr.operands(i).offset()};
  for (const auto& [stride, count] : Pattern(instr, i)) {
    std::vector<int64_t> next;
    next.reserve(flat.size() * count);
    for (int64_t base : flat) {
      for (int64_t k = 0; k < count; ++k) next.push_back(base + k * stride);
    }
    flat = std::move(next);
  }
  return flat;
}

int64_t CeilDiv(int64_t a, int64_t b) { return (a + b - 1) / b; }

// --- Interpreted output against the reference --------------------------------

// Traces `kernel` with `settings`, runs it in the interpreter on random
// inputs (rounded to the kernel's dtype; float32 bias) and compares every
// output element with the reference within the kernel's tolerance, by the
// kernel's comparison (kernels/compare.h).
::testing::AssertionResult MatchesReference(const std::string& kernel,
                                            const Settings& settings) {
  const KernelRegistry& registry = KernelRegistry::Global();
  const KernelDef* def = registry.Find(kernel);
  if (def == nullptr) return ::testing::AssertionFailure() << "no " << kernel;
  absl::StatusOr<ParamValues> values = registry.ParseParams(*def, settings);
  if (!values.ok()) return ::testing::AssertionFailure() << values.status();
  absl::StatusOr<proto::Graph> graph = registry.Trace(kernel, settings);
  if (!graph.ok()) return ::testing::AssertionFailure() << graph.status();
  const proto::DType dtype =
      values->Str("dtype") == "float32" ? proto::FLOAT32 : proto::BFLOAT16;

  std::mt19937 rng(20240607);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  std::vector<HostArray> inputs;
  for (const proto::Tensor& t : graph->tensors()) {
    if (t.role() != proto::ROLE_INPUT) continue;
    std::vector<int64_t> shape(t.shape().begin(), t.shape().end());
    HostArray a = testing::Floats(t.name(), shape, {});
    a.f32.resize(a.num_elements());
    for (float& v : a.f32) v = RoundTo(t.dtype(), dist(rng), 240.0f);
    inputs.push_back(std::move(a));
  }
  absl::StatusOr<std::map<std::string, HostArray>> got =
      testing::RunGraph(*graph, inputs);
  if (!got.ok()) return ::testing::AssertionFailure() << got.status();
  absl::StatusOr<std::vector<HostArray>> want = def->reference(*values, inputs);
  if (!want.ok()) return ::testing::AssertionFailure() << want.status();

  const double tol = def->tolerance(*values);
  const HostArray& out = got->at("out");
  absl::StatusOr<OutputComparison> c =
      CompareOutput(out, (*want)[0], def->comparison, tol);
  if (!c.ok()) return ::testing::AssertionFailure() << c.status();
  // The kernel's dtype really is the one asked for.
  if (TensorNamed(*graph, "out")->dtype() != dtype) {
    return ::testing::AssertionFailure() << "out has the wrong dtype";
  }
  if (!c->ok()) {
    return ::testing::AssertionFailure()
           << c->failures << " of " << out.f32.size()
           << " elements off (first at " << c->first_failure << ": "
           << c->first_got << " vs " << c->first_want << "), worst "
           << ComparisonMeasure(def->comparison) << " " << c->error;
  }
  return ::testing::AssertionSuccess();
}

// `settings` with `overrides` replacing or adding values.
Settings With(Settings settings, const Settings& overrides) {
  for (const auto& [name, value] : overrides) {
    auto it = std::find_if(settings.begin(), settings.end(),
                           [&](const auto& kv) { return kv.first == name; });
    if (it != settings.end()) {
      it->second = value;
    } else {
      settings.emplace_back(name, value);
    }
  }
  return settings;
}

std::string Describe(const Settings& settings) {
  return absl::StrJoin(settings, " ", absl::PairFormatter("="));
}

// ===========================================================================
// conv1d
// ===========================================================================

Settings ConvSettings(int64_t batch, int64_t c_in, int64_t c_out,
                      int64_t length, int64_t kernel_size,
                      const Settings& extra = {}) {
  Settings s = {{"batch", absl::StrCat(batch)},
                {"c_in", absl::StrCat(c_in)},
                {"c_out", absl::StrCat(c_out)},
                {"length", absl::StrCat(length)},
                {"kernel_size", absl::StrCat(kernel_size)}};
  s.insert(s.end(), extra.begin(), extra.end());
  return s;
}

// Shapes with tails in every dim, several tiles in every dim (c_in and
// c_out > 128, L_out > 512, B > 1), each K-replication class, and every
// parameter at a non-default value somewhere.
const std::vector<Settings>& Conv1dCases() {
  static const auto* cases = new std::vector<Settings>{
      // c_in 16: 3 taps stacked at stride 32 in one matmul.
      ConvSettings(
          2, 16, 24, 50, 3,
          {{"pad_left", "1"}, {"pad_right", "1"}, {"activation", "relu"}}),
      // c_in 48: 2 taps at stride 64; L_out = 1101 spans three l tiles;
      // c_out 130 two tiles; asymmetric padding.
      ConvSettings(
          2, 48, 130, 1100, 5,
          {{"pad_left", "4"}, {"pad_right", "1"}, {"activation", "silu"}}),
      // c_in 200 (tiles 128 + 72, no replication), c_out 260 (three tiles),
      // stride, dilation, asymmetric padding, no bias.
      ConvSettings(3, 200, 260, 40, 3,
                   {{"stride", "3"},
                    {"dilation", "2"},
                    {"pad_left", "2"},
                    {"pad_right", "5"},
                    {"bias", "0"},
                    {"activation", "gelu_tanh"}}),
      // c_in 160: a full tile (one tap) and a 32-channel tail (4 taps).
      ConvSettings(1, 160, 64, 70, 4, {{"pad_right", "3"}}),
      // Two cores split c_out 300 into 150 + 150.
      ConvSettings(2, 40, 300, 64, 3,
                   {{"pad_left", "1"},
                    {"pad_right", "1"},
                    {"activation", "relu"},
                    {"lnc_shard", "1"}}),
      // Pointwise, strided.
      ConvSettings(1, 8, 5, 9, 1, {{"stride", "2"}}),
      // Padding wider than the input: whole windows of zeros.
      ConvSettings(1, 4, 3, 5, 3, {{"pad_left", "6"}, {"pad_right", "6"}}),
      // Seven taps of a 20-channel tile: groups of 4 and 3, dilated.
      ConvSettings(2, 20, 33, 90, 7,
                   {{"dilation", "3"},
                    {"pad_left", "9"},
                    {"stride", "2"},
                    {"activation", "silu"}}),
  };
  return *cases;
}

class Conv1dNumericsTest
    : public ::testing::TestWithParam<std::tuple<int, std::string>> {};

TEST_P(Conv1dNumericsTest, InterpretedGraphMatchesReference) {
  Settings settings = Conv1dCases()[std::get<0>(GetParam())];
  settings.emplace_back("dtype", std::get<1>(GetParam()));
  EXPECT_TRUE(MatchesReference("conv1d", settings)) << Describe(settings);
}

INSTANTIATE_TEST_SUITE_P(Conv1d, Conv1dNumericsTest,
                         ::testing::Combine(::testing::Range(0, 8),
                                            ::testing::Values("float32",
                                                              "bfloat16")),
                         [](const auto& info) {
                           return absl::StrCat("case", std::get<0>(info.param),
                                               "_", std::get<1>(info.param));
                         });

TEST(Conv1dReferenceTest, MatchesHandComputedValues) {
  // x = [1, 2, 3, 4], taps w0 = 1, w1 = 10, pad 1 left, stride 2:
  // positions (l*2 - 1, l*2): l=0 -> 0*1 + 1*10, l=1 -> 2*1 + 3*10,
  // l=2 -> 4*1 + 0*10; plus bias 0.5.
  Conv1dParams params;
  params.batch = 1;
  params.c_in = 1;
  params.c_out = 1;
  params.length = 4;
  params.kernel_size = 2;
  params.stride = 2;
  params.pad_left = 1;
  params.pad_right = 1;
  params.dtype = proto::FLOAT32;
  ASSERT_EQ(params.l_out(), 3);
  absl::StatusOr<std::vector<HostArray>> out =
      Conv1dReference(params, {testing::Floats("x_in", {1, 1, 4}, {1, 2, 3, 4}),
                               testing::Floats("filters", {2, 1, 1}, {1, 10}),
                               testing::Floats("bias", {1}, {0.5f})});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_THAT((*out)[0].shape, ElementsAre(1, 1, 3));
  EXPECT_THAT((*out)[0].f32, ElementsAre(10.5f, 32.5f, 4.5f));
  params.activation = Activation::kRelu;
  params.bias = false;
  out = Conv1dReference(params,
                        {testing::Floats("x_in", {1, 1, 4}, {1, 2, 3, -4}),
                         testing::Floats("filters", {2, 1, 1}, {1, 10})});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_THAT((*out)[0].f32, ElementsAre(10.0f, 32.0f, 0.0f));
}

TEST(Conv1dReferenceTest, MissingOrMisshapenInputsAreErrors) {
  Conv1dParams params;
  params.c_in = 2;
  params.length = 3;
  absl::StatusOr<std::vector<HostArray>> out = Conv1dReference(
      params, {testing::Floats("x_in", {1, 2, 3}, std::vector<float>(6)),
               testing::Floats("filters", {1, 2, 1}, {0, 0})});
  ASSERT_FALSE(out.ok());
  EXPECT_THAT(out.status().message(), HasSubstr("'bias'"));
  out = Conv1dReference(
      params, {testing::Floats("x_in", {1, 3, 2}, std::vector<float>(6)),
               testing::Floats("filters", {1, 2, 1}, {0, 0}),
               testing::Floats("bias", {1}, {0})});
  ASSERT_FALSE(out.ok());
  EXPECT_THAT(out.status().message(), HasSubstr("'x_in'"));
}

TEST(Conv1dKReplicationTest, FollowsTheContractTable) {
  for (const auto& [c, k, rep, stride] :
       std::vector<std::tuple<int64_t, int64_t, int64_t, int64_t>>{
           {1, 3, 3, 32},
           {32, 7, 4, 32},
           {32, 1, 1, 32},
           {33, 5, 2, 64},
           {64, 1, 1, 64},
           {65, 5, 1, 65},
           {128, 3, 1, 128}}) {
    const KReplication r = GetKReplicationParams(c, k);
    EXPECT_EQ(r.k_rep, rep) << "c_in tile " << c << " K " << k;
    EXPECT_EQ(r.partition_stride, stride) << "c_in tile " << c;
  }
}

// ceil(K / r) matmuls per c_in tile for each output tile, contracting over
// the stacked taps (and the gaps between them), one accumulation group per
// output tile.
TEST(Conv1dGraphTest, MatmulsPerOutputTileAreCeilKOverKRepPerCinTile) {
  struct Case {
    int64_t c_in, k;
    std::vector<int64_t> contraction;  // partitions of each matmul
  };
  for (const Case& c : std::vector<Case>{
           {16, 3, {2 * 32 + 16}},
           {16, 5, {3 * 32 + 16, 16}},
           {48, 3, {64 + 48, 48}},
           {48, 5, {64 + 48, 64 + 48, 48}},
           {200, 3, {128, 128, 128, 72, 72, 72}},
           {200, 5, {128, 128, 128, 128, 128, 72, 72, 72, 72, 72}}}) {
    // One output tile, then 2 c_out tiles x 2 l tiles x 2 batches.
    for (const auto& [settings, tiles] : std::vector<std::pair<Settings, int>>{
             {ConvSettings(1, c.c_in, 64, 100, c.k), 1},
             {ConvSettings(2, c.c_in, 200, 600 + c.k - 1, c.k), 8}}) {
      absl::StatusOr<proto::Graph> graph = Trace("conv1d", settings);
      ASSERT_TRUE(graph.ok()) << graph.status();
      const auto matmuls = InstructionsOf(*graph, proto::NC_MATMUL);
      const size_t per_tile = c.contraction.size();
      ASSERT_EQ(matmuls.size(), per_tile * tiles) << Describe(settings);
      for (size_t i = 0; i < matmuls.size(); ++i) {
        const proto::Instruction& mm = *matmuls[i];
        EXPECT_EQ(Partitions(mm, 1), c.contraction[i % per_tile])
            << Describe(settings) << " matmul " << i;
        EXPECT_EQ(Partitions(mm, 2), c.contraction[i % per_tile]);
        EXPECT_EQ(IntAttr(mm, "accumulate"), i % per_tile == 0 ? 0 : 1)
            << "one accumulation group per output tile";
        EXPECT_EQ(Operand(*graph, mm, 0).space(), proto::PSUM);
        EXPECT_LE(FreeSize(mm, 2), 512);
        EXPECT_LE(FreeSize(mm, 1), 128);
      }
    }
  }
}

// The scatter: tap j of a group lands at partition j * 32 (c_in tile <= 32)
// or j * 64 (33..64), read from the window every `stride` columns.
TEST(Conv1dGraphTest, StackedTapsStartAtAlignedPartitions) {
  for (const auto& [c_in, k, starts] :
       std::vector<std::tuple<int64_t, int64_t, std::set<int64_t>>>{
           {16, 5, {0, 32, 64, 96}},
           {32, 3, {0, 32, 64}},
           {48, 3, {0, 64}},
           {64, 2, {0, 64}}}) {
    const Settings settings =
        ConvSettings(1, c_in, 8, 40, k, {{"stride", "2"}});
    absl::StatusOr<proto::Graph> graph = Trace("conv1d", settings);
    ASSERT_TRUE(graph.ok()) << graph.status();
    std::set<int64_t> seen;
    int copies = 0;
    for (const proto::Instruction* copy :
         InstructionsOf(*graph, proto::TENSOR_COPY)) {
      if (!StartsWith(Operand(*graph, *copy, 0).name(), "x_stacked")) continue;
      ++copies;
      seen.insert(PartitionStart(*graph, *copy, 0));
      EXPECT_EQ(Partitions(*copy, 0), c_in);
      EXPECT_EQ(Operand(*graph, *copy, 1).space(), proto::SBUF);
      EXPECT_EQ(PartitionStart(*graph, *copy, 1), 0);
      EXPECT_EQ(Pattern(*copy, 1).back().first, 2) << "reads every stride-th";
    }
    EXPECT_EQ(seen, starts) << Describe(settings);
    // Every tap of a stacked group is copied; a group of one tap reads the
    // window directly.
    const int64_t rep = GetKReplicationParams(c_in, k).k_rep;
    const int64_t last = k % rep == 0 ? rep : k % rep;
    EXPECT_EQ(copies, k - (last == 1 ? 1 : 0)) << Describe(settings);
  }
}

// The windows are built on chip: no HBM tensor besides the inputs and the
// output, and only the output is written to HBM.
TEST(Conv1dGraphTest, NoHbmTensorBesidesInputsAndOutputIsWritten) {
  for (const Settings& settings :
       {ConvSettings(2, 16, 24, 50, 3, {{"pad_left", "1"}}),
        ConvSettings(1, 200, 130, 600, 5, {{"lnc_shard", "1"}})}) {
    absl::StatusOr<proto::Graph> graph = Trace("conv1d", settings);
    ASSERT_TRUE(graph.ok()) << graph.status();
    for (const proto::Tensor& t : graph->tensors()) {
      if (t.space() == proto::HBM || t.space() == proto::SHARED_HBM) {
        EXPECT_NE(t.role(), proto::ROLE_INTERNAL) << t.name();
      }
    }
    for (const proto::Stream& stream : graph->streams()) {
      for (const proto::Instruction& instr : stream.instructions()) {
        const proto::Tensor& dst = Operand(*graph, instr, 0);
        if (dst.space() == proto::HBM || dst.space() == proto::SHARED_HBM) {
          EXPECT_EQ(dst.name(), "out");
          EXPECT_EQ(instr.opcode(), proto::DMA_COPY);
        }
      }
    }
  }
}

// Gaps between tap blocks (in the stacked windows and filters) and the
// zero padding of the input windows are memset to zero.
TEST(Conv1dGraphTest, GapsAndPaddingAreMemsetToZero) {
  absl::StatusOr<proto::Graph> graph = Trace(
      "conv1d",
      ConvSettings(1, 16, 8, 40, 3, {{"pad_left", "2"}, {"pad_right", "1"}}));
  ASSERT_TRUE(graph.ok()) << graph.status();
  std::map<std::string, int> memsets;
  for (const proto::Instruction* m : InstructionsOf(*graph, proto::MEMSET)) {
    EXPECT_EQ(FloatAttr(*m, "value"), 0.0);
    const std::string name = Operand(*graph, *m, 0).name();
    for (const char* prefix : {"x_stacked", "filters_stacked", "x_window"}) {
      if (StartsWith(name, prefix)) memsets[prefix]++;
    }
    if (StartsWith(name, "x_window")) {
      EXPECT_EQ(Partitions(*m, 0), 16);
      EXPECT_TRUE(FreeSize(*m, 0) == 2 || FreeSize(*m, 0) == 1)
          << "pad_left 2, pad_right 1 columns";
    }
  }
  EXPECT_EQ(memsets["x_stacked"], 2) << "both window sets, once each";
  EXPECT_EQ(memsets["filters_stacked"], 1);
  EXPECT_EQ(memsets["x_window"], 2) << "left and right padding";
  // Without padding no window is memset; a full 32-channel tile has no gaps.
  graph = Trace("conv1d", ConvSettings(1, 32, 8, 40, 3));
  ASSERT_TRUE(graph.ok()) << graph.status();
  EXPECT_TRUE(InstructionsOf(*graph, proto::MEMSET).empty());
}

TEST(Conv1dGraphTest, EvacuationIsOneActivationFromPsumWithBias) {
  for (const auto& [activation, func] :
       std::vector<std::pair<std::string, std::string>>{
           {"none", "copy"},
           {"relu", "relu"},
           {"silu", "silu"},
           {"gelu_tanh", "gelu_apprx_tanh"}}) {
    absl::StatusOr<proto::Graph> graph =
        Trace("conv1d",
              ConvSettings(2, 20, 200, 600, 3, {{"activation", activation}}));
    ASSERT_TRUE(graph.ok()) << graph.status();
    const auto acts = InstructionsOf(*graph, proto::ACTIVATION);
    ASSERT_EQ(acts.size(), 2u * 2u * 2u) << "batches x l tiles x c_out tiles";
    for (const proto::Instruction* act : acts) {
      EXPECT_EQ(StrAttr(*act, "func"), func);
      EXPECT_EQ(Operand(*graph, *act, 0).space(), proto::SBUF);
      EXPECT_EQ(Operand(*graph, *act, 1).space(), proto::PSUM);
      ASSERT_TRUE(HasOperand(*act, 2)) << "bias column missing";
      const proto::Tensor& bias = Operand(*graph, *act, 2);
      EXPECT_EQ(bias.space(), proto::SBUF);
      EXPECT_EQ(bias.dtype(), proto::FLOAT32);
      EXPECT_EQ(Partitions(*act, 2), Partitions(*act, 1));
      EXPECT_EQ(FreeSize(*act, 2), 1);
    }
    // No other instruction reads PSUM: the evacuation is fused.
    for (const proto::Opcode op :
         {proto::TENSOR_COPY, proto::TENSOR_SCALAR, proto::TENSOR_TENSOR}) {
      for (const proto::Instruction* i : InstructionsOf(*graph, op)) {
        EXPECT_NE(Operand(*graph, *i, 1).space(), proto::PSUM);
      }
    }
  }
  absl::StatusOr<proto::Graph> graph =
      Trace("conv1d", ConvSettings(1, 8, 8, 16, 3, {{"bias", "0"}}));
  ASSERT_TRUE(graph.ok()) << graph.status();
  EXPECT_EQ(TensorNamed(*graph, "bias"), nullptr);
  for (const proto::Instruction* act :
       InstructionsOf(*graph, proto::ACTIVATION)) {
    EXPECT_FALSE(HasOperand(*act, 2));
  }
}

// With lnc_shard each core loads its half of the filters and writes only
// its half of c_out; together the halves cover every output element once.
TEST(Conv1dGraphTest, LncShardEachCoreWritesOnlyItsCoutHalf) {
  const int64_t c_out = 300, l_out = 64, batch = 2;
  absl::StatusOr<proto::Graph> graph =
      Trace("conv1d",
            ConvSettings(
                batch, 40, c_out, 64, 3,
                {{"pad_left", "1"}, {"pad_right", "1"}, {"lnc_shard", "1"}}));
  ASSERT_TRUE(graph.ok()) << graph.status();
  ASSERT_EQ(graph->world().num_cores(), 2u);
  ASSERT_EQ(graph->streams_size(), 2);
  std::vector<int64_t> written(batch * c_out * l_out, 0);
  for (int core = 0; core < 2; ++core) {
    const int64_t lo = core == 0 ? 0 : 150, hi = core == 0 ? 150 : 300;
    int stores = 0;
    for (const proto::Instruction* dma :
         InstructionsOf(*graph, proto::DMA_COPY, core)) {
      if (Operand(*graph, *dma, 0).name() == "out") {
        ++stores;
        for (int64_t flat : FlatElements(*dma, 0)) {
          const int64_t channel = flat / l_out % c_out;
          EXPECT_GE(channel, lo) << "core " << core;
          EXPECT_LT(channel, hi) << "core " << core;
          ++written[flat];
        }
      }
      if (Operand(*graph, *dma, 1).name() == "filters") {
        for (int64_t flat : FlatElements(*dma, 1)) {
          EXPECT_GE(flat % c_out, lo) << "core " << core << " filter column";
          EXPECT_LT(flat % c_out, hi) << "core " << core << " filter column";
        }
      }
    }
    EXPECT_EQ(stores, batch * 2) << "two c_out tiles (128 + 22) per batch";
  }
  EXPECT_EQ(std::count(written.begin(), written.end(), 1),
            static_cast<int64_t>(written.size()));
}

// Buffers are allocated once and reused: more batches and l tiles add
// instructions but no on-chip tensors; two PSUM tiles alternate.
TEST(Conv1dGraphTest, OnChipBuffersAreReusedAndPsumTilesRotate) {
  auto on_chip_tensors = [](const proto::Graph& graph) {
    int n = 0;
    for (const proto::Tensor& t : graph.tensors()) {
      n += t.space() == proto::SBUF || t.space() == proto::PSUM;
    }
    return n;
  };
  absl::StatusOr<proto::Graph> small =
      Trace("conv1d", ConvSettings(1, 48, 200, 100, 3));
  absl::StatusOr<proto::Graph> big =
      Trace("conv1d", ConvSettings(3, 48, 200, 1500, 3));
  ASSERT_TRUE(small.ok() && big.ok());
  EXPECT_EQ(on_chip_tensors(*small), on_chip_tensors(*big));
  EXPECT_GT(InstructionsOf(*big, proto::NC_MATMUL).size(),
            InstructionsOf(*small, proto::NC_MATMUL).size());
  uint32_t previous = 0;
  std::set<uint32_t> psum_tiles;
  for (const proto::Instruction* act :
       InstructionsOf(*big, proto::ACTIVATION)) {
    const uint32_t psum = OperandOf(*act, "data").tensor_id();
    EXPECT_NE(psum, previous) << "consecutive output tiles share a bank";
    previous = psum;
    psum_tiles.insert(psum);
  }
  EXPECT_EQ(psum_tiles.size(), 2u);
}

// No wasted HBM traffic: with one l tile, x is read once whatever the
// number of c_out tiles, and the filters are read once.
TEST(Conv1dGraphTest, InputsAreReadFromHbmOnce) {
  const int64_t batch = 2, c_in = 150, c_out = 300, length = 200, k = 5;
  absl::StatusOr<proto::Graph> graph =
      Trace("conv1d", ConvSettings(batch, c_in, c_out, length, k,
                                   {{"pad_left", "2"}, {"pad_right", "2"}}));
  ASSERT_TRUE(graph.ok()) << graph.status();
  std::map<std::string, int64_t> read;
  for (const proto::Instruction* dma :
       InstructionsOf(*graph, proto::DMA_COPY)) {
    read[Operand(*graph, *dma, 1).name()] +=
        FreeSize(*dma, 1) * Partitions(*dma, 1);
  }
  EXPECT_EQ(read["x_in"], batch * c_in * length);
  EXPECT_EQ(read["filters"], k * c_in * c_out);
  EXPECT_EQ(read["bias"], c_out);
}

TEST(Conv1dGraphTest, InterfaceMatchesTheContract) {
  absl::StatusOr<proto::Graph> graph =
      Trace("conv1d", ConvSettings(3, 5, 7, 20, 4,
                                   {{"stride", "2"},
                                    {"pad_left", "1"},
                                    {"dilation", "2"},
                                    {"dtype", "float32"}}));
  ASSERT_TRUE(graph.ok()) << graph.status();
  std::map<std::string, const proto::Tensor*> io;
  for (const proto::Tensor& t : graph->tensors()) {
    if (t.role() != proto::ROLE_INTERNAL) io[t.name()] = &t;
  }
  ASSERT_EQ(io.size(), 4u);
  EXPECT_THAT(io.at("x_in")->shape(), ElementsAre(3, 5, 20));
  EXPECT_EQ(io.at("x_in")->dtype(), proto::FLOAT32);
  EXPECT_THAT(io.at("filters")->shape(), ElementsAre(4, 5, 7));
  EXPECT_THAT(io.at("bias")->shape(), ElementsAre(7));
  EXPECT_EQ(io.at("bias")->dtype(), proto::FLOAT32);
  // (20 + 1 + 0 - 2*3 - 1) // 2 + 1 = 8
  EXPECT_THAT(io.at("out")->shape(), ElementsAre(3, 7, 8));
  EXPECT_EQ(io.at("out")->role(), proto::ROLE_OUTPUT);
  EXPECT_EQ(graph->world().num_cores(), 1u);
  graph =
      Trace("conv1d", ConvSettings(1, 5, 7, 20, 4, {{"dtype", "bfloat16"}}));
  ASSERT_TRUE(graph.ok()) << graph.status();
  EXPECT_EQ(TensorNamed(*graph, "filters")->dtype(), proto::BFLOAT16);
  EXPECT_EQ(TensorNamed(*graph, "bias")->dtype(), proto::FLOAT32);
}

TEST(Conv1dParamsTest, BadParametersAreRefusedNamingThem) {
  for (const auto& [extra, message] :
       std::vector<std::pair<Settings, std::string>>{
           {{{"batch", "0"}}, "parameter 'batch' is 0"},
           {{{"c_in", "0"}}, "parameter 'c_in' is 0"},
           {{{"c_out", "70000"}}, "parameter 'c_out' is 70000"},
           {{{"length", "0"}}, "parameter 'length' is 0"},
           {{{"kernel_size", "0"}}, "parameter 'kernel_size' is 0"},
           {{{"stride", "0"}}, "parameter 'stride' is 0"},
           {{{"pad_left", "-1"}}, "parameter 'pad_left' is -1"},
           {{{"pad_right", "5000"}}, "parameter 'pad_right' is 5000"},
           {{{"dilation", "0"}}, "parameter 'dilation' is 0"},
           {{{"bias", "2"}}, "parameter 'bias' is 2"},
           {{{"lnc_shard", "2"}}, "parameter 'lnc_shard' is 2"},
           {{{"activation", "tanh"}}, "parameter 'activation'"},
           {{{"dtype", "float16"}}, "parameter 'dtype'"},
           {{{"kernel_size", "9"}, {"length", "7"}}, "receptive field"},
           {{{"c_out", "1"}, {"lnc_shard", "1"}}, "parameter 'c_out' is 1"},
           {{{"batch", "65536"}, {"length", "100000"}}, "matmuls"},
       }) {
    const Settings settings = With(ConvSettings(1, 8, 8, 16, 3), extra);
    absl::StatusOr<proto::Graph> graph = Trace("conv1d", settings);
    ASSERT_FALSE(graph.ok()) << Describe(settings);
    EXPECT_THAT(graph.status().message(), HasSubstr(message))
        << Describe(settings);
  }
  // Sizes are required.
  absl::StatusOr<proto::Graph> graph = Trace("conv1d", {});
  ASSERT_FALSE(graph.ok());
  EXPECT_THAT(graph.status().message(), HasSubstr("missing required"));
}

// ===========================================================================
// depthwise_conv1d
// ===========================================================================

Settings DwSettings(int64_t batch, int64_t channels, int64_t width,
                    int64_t kernel_size, const Settings& extra = {}) {
  Settings s = {{"batch", absl::StrCat(batch)},
                {"channels", absl::StrCat(channels)},
                {"width", absl::StrCat(width)},
                {"kernel_size", absl::StrCat(kernel_size)}};
  s.insert(s.end(), extra.begin(), extra.end());
  return s;
}

const std::vector<Settings>& DepthwiseCases() {
  static const auto* cases = new std::vector<Settings>{
      DwSettings(2, 5, 40, 3, {{"pad_left", "1"}, {"pad_right", "1"}}),
      // Two channel tiles (130), Q = 597 over two q tiles.
      DwSettings(1, 130, 600, 4),
      // Stride with asymmetric padding.
      DwSettings(3, 7, 50, 5,
                 {{"stride", "3"}, {"pad_left", "2"}, {"pad_right", "4"}}),
      // S = 130 > 128: two accumulating s tiles; wide padding.
      DwSettings(1, 3, 300, 130, {{"pad_left", "64"}, {"pad_right", "65"}}),
      // Input narrower than the filter: every column is an edge column.
      DwSettings(2, 2, 3, 5, {{"pad_left", "2"}, {"pad_right", "2"}}),
      // One tap, strided; feature_group_count given explicitly.
      DwSettings(1, 9, 33, 1, {{"stride", "2"}, {"feature_group_count", "9"}}),
  };
  return *cases;
}

class DepthwiseConv1dNumericsTest
    : public ::testing::TestWithParam<std::tuple<int, std::string>> {};

TEST_P(DepthwiseConv1dNumericsTest, InterpretedGraphMatchesReference) {
  Settings settings = DepthwiseCases()[std::get<0>(GetParam())];
  settings.emplace_back("dtype", std::get<1>(GetParam()));
  EXPECT_TRUE(MatchesReference("depthwise_conv1d", settings))
      << Describe(settings);
}

INSTANTIATE_TEST_SUITE_P(DepthwiseConv1d, DepthwiseConv1dNumericsTest,
                         ::testing::Combine(::testing::Range(0, 6),
                                            ::testing::Values("float32",
                                                              "bfloat16")),
                         [](const auto& info) {
                           return absl::StrCat("case", std::get<0>(info.param),
                                               "_", std::get<1>(info.param));
                         });

TEST(DepthwiseConv1dReferenceTest, MatchesHandComputedValues) {
  // Channel 0: filter [1, 2], channel 1: filter [-1, 0]; pad 1 left.
  DepthwiseConv1dParams params;
  params.channels = 2;
  params.width = 3;
  params.kernel_size = 2;
  params.pad_left = 1;
  params.dtype = proto::FLOAT32;
  ASSERT_EQ(params.q_out(), 3);
  absl::StatusOr<std::vector<HostArray>> out = DepthwiseConv1dReference(
      params, {testing::Floats("img", {1, 2, 1, 3}, {1, 2, 3, 4, 5, 6}),
               testing::Floats("filter", {2, 1, 1, 2}, {1, 2, -1, 0})});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_THAT((*out)[0].shape, ElementsAre(1, 2, 1, 3));
  // c0: [0*1 + 1*2, 1*1 + 2*2, 2*1 + 3*2]; c1: [0, -4, -5].
  EXPECT_THAT((*out)[0].f32, ElementsAre(2, 5, 8, 0, -4, -5));
}

// At stride 1 without padding one DMA per window tile loads every (S x Q)
// window of a channel group: partition s starts s elements along the row.
TEST(DepthwiseConv1dGraphTest, OneDmaLoadsTheWindowsAtStride1) {
  const int64_t channels = 4, width = 100, taps = 3, q = 98;
  absl::StatusOr<proto::Graph> graph =
      Trace("depthwise_conv1d", DwSettings(1, channels, width, taps));
  ASSERT_TRUE(graph.ok()) << graph.status();
  std::vector<const proto::Instruction*> loads;
  for (const proto::Instruction* dma :
       InstructionsOf(*graph, proto::DMA_COPY)) {
    if (Operand(*graph, *dma, 1).name() == "img") loads.push_back(dma);
  }
  ASSERT_EQ(loads.size(), 1u);
  EXPECT_TRUE(StartsWith(Operand(*graph, *loads[0], 0).name(), "input_tile"));
  EXPECT_THAT(Pattern(*loads[0], 1),
              ElementsAre(std::make_pair(int64_t{1}, taps),
                          std::make_pair(width, channels),
                          std::make_pair(int64_t{1}, q)));
  EXPECT_TRUE(InstructionsOf(*graph, proto::MEMSET).empty());
  // More batches and q tiles: one load per (batch, channel group, q tile).
  graph = Trace("depthwise_conv1d", DwSettings(2, channels, 1000, taps));
  ASSERT_TRUE(graph.ok()) << graph.status();
  int img_loads = 0;
  for (const proto::Instruction* dma :
       InstructionsOf(*graph, proto::DMA_COPY)) {
    img_loads += Operand(*graph, *dma, 1).name() == "img";
  }
  EXPECT_EQ(img_loads, 2 * 2);
}

// Padding: the edge columns are memset and filled by clipped copies of
// their in-range partitions.
TEST(DepthwiseConv1dGraphTest, PaddingIsMemsetEdgesWithClippedCopies) {
  absl::StatusOr<proto::Graph> graph =
      Trace("depthwise_conv1d",
            DwSettings(1, 4, 100, 3, {{"pad_left", "2"}, {"pad_right", "1"}}));
  ASSERT_TRUE(graph.ok()) << graph.status();
  std::vector<int64_t> load_partitions;
  for (const proto::Instruction* dma :
       InstructionsOf(*graph, proto::DMA_COPY)) {
    if (Operand(*graph, *dma, 1).name() != "img") continue;
    load_partitions.push_back(Partitions(*dma, 0));
  }
  // The interior (3 partitions), left edges q=0 (s=2), q=1 (s=1..2), right
  // edge q=100 (s=0..1).
  EXPECT_THAT(load_partitions, UnorderedElementsAreArray({3, 1, 2, 2}));
  int64_t zeroed = 0;
  for (const proto::Instruction* m : InstructionsOf(*graph, proto::MEMSET)) {
    EXPECT_TRUE(StartsWith(Operand(*graph, *m, 0).name(), "input_tile"));
    zeroed += FreeSize(*m, 0) / 4;  // columns (4 channels each)
  }
  EXPECT_EQ(zeroed, 3) << "pad_left + pad_right edge columns";
}

TEST(DepthwiseConv1dGraphTest, FiltersAreTransposedOnChip) {
  absl::StatusOr<proto::Graph> graph =
      Trace("depthwise_conv1d", DwSettings(2, 200, 300, 130));
  ASSERT_TRUE(graph.ok()) << graph.status();
  const auto transposes = InstructionsOf(*graph, proto::NC_TRANSPOSE);
  ASSERT_EQ(transposes.size(), 2u * 2u) << "channel tiles x s tiles";
  for (const proto::Instruction* t : transposes) {
    EXPECT_EQ(Operand(*graph, *t, 1).space(), proto::SBUF);
    EXPECT_EQ(Operand(*graph, *t, 0).space(), proto::PSUM);
    EXPECT_EQ(Partitions(*t, 0), FreeSize(*t, 1));
    EXPECT_EQ(Partitions(*t, 1), FreeSize(*t, 0));
  }
  int filter_loads = 0;
  for (const proto::Instruction* dma :
       InstructionsOf(*graph, proto::DMA_COPY)) {
    filter_loads += Operand(*graph, *dma, 1).name() == "filter";
  }
  EXPECT_EQ(filter_loads, 2) << "once per channel tile, not per batch";
}

// Implicit GEMM per channel: stationary (S x 1), moving (S x Q), one result
// row; contraction over the taps only.
TEST(DepthwiseConv1dGraphTest, MatmulContractsOverTapsOnly) {
  for (const auto& [settings, taps, stride] :
       std::vector<std::tuple<Settings, int64_t, int64_t>>{
           {DwSettings(2, 6, 700, 5), 5, 1},
           {DwSettings(1, 3, 90, 4, {{"stride", "3"}, {"pad_left", "1"}}), 4,
            3}}) {
    absl::StatusOr<proto::Graph> graph = Trace("depthwise_conv1d", settings);
    ASSERT_TRUE(graph.ok()) << graph.status();
    const proto::Tensor* out = TensorNamed(*graph, "out");
    const int64_t n = out->shape(0), c = out->shape(1), q = out->shape(3);
    const auto matmuls = InstructionsOf(*graph, proto::NC_MATMUL);
    EXPECT_EQ(static_cast<int64_t>(matmuls.size()), n * c * CeilDiv(q, 512))
        << "one per channel and q tile";
    for (const proto::Instruction* mm : matmuls) {
      EXPECT_EQ(Partitions(*mm, 1), taps);
      EXPECT_EQ(FreeSize(*mm, 1), 1) << "stationary is one filter column";
      EXPECT_EQ(Partitions(*mm, 2), taps);
      EXPECT_LE(FreeSize(*mm, 2), 512);
      EXPECT_EQ(Pattern(*mm, 2).size(), 2u) << "moving holds one channel";
      EXPECT_EQ(Pattern(*mm, 2).back().first, stride);
      EXPECT_EQ(Partitions(*mm, 0), 1);
      EXPECT_EQ(IntAttr(*mm, "accumulate"), 0);
    }
  }
  // S > 128: the s tiles accumulate.
  absl::StatusOr<proto::Graph> graph =
      Trace("depthwise_conv1d", DwSettings(1, 2, 300, 200));
  ASSERT_TRUE(graph.ok()) << graph.status();
  std::vector<int64_t> contraction, accumulate;
  for (const proto::Instruction* mm :
       InstructionsOf(*graph, proto::NC_MATMUL)) {
    contraction.push_back(Partitions(*mm, 1));
    accumulate.push_back(IntAttr(*mm, "accumulate"));
  }
  EXPECT_THAT(contraction, ElementsAre(128, 72, 128, 72));
  EXPECT_THAT(accumulate, ElementsAre(0, 1, 0, 1));
}

TEST(DepthwiseConv1dGraphTest, NoHbmTensorBesidesInputsAndOutputIsWritten) {
  absl::StatusOr<proto::Graph> graph = Trace(
      "depthwise_conv1d",
      DwSettings(2, 140, 600, 7, {{"pad_left", "3"}, {"pad_right", "3"}}));
  ASSERT_TRUE(graph.ok()) << graph.status();
  for (const proto::Tensor& t : graph->tensors()) {
    if (t.space() == proto::HBM || t.space() == proto::SHARED_HBM) {
      EXPECT_NE(t.role(), proto::ROLE_INTERNAL) << t.name();
    }
  }
  for (const proto::Instruction* dma :
       InstructionsOf(*graph, proto::DMA_COPY)) {
    const proto::Tensor& dst = Operand(*graph, *dma, 0);
    if (dst.space() != proto::SBUF) {
      EXPECT_EQ(dst.name(), "out");
    }
    EXPECT_NE(Operand(*graph, *dma, 1).space(), proto::PSUM);
  }
}

TEST(DepthwiseConv1dGraphTest, InterfaceMatchesTheContract) {
  absl::StatusOr<proto::Graph> graph = Trace(
      "depthwise_conv1d",
      DwSettings(2, 3, 20, 4,
                 {{"stride", "2"}, {"pad_right", "1"}, {"dtype", "float32"}}));
  ASSERT_TRUE(graph.ok()) << graph.status();
  std::map<std::string, const proto::Tensor*> io;
  for (const proto::Tensor& t : graph->tensors()) {
    if (t.role() != proto::ROLE_INTERNAL) io[t.name()] = &t;
  }
  ASSERT_EQ(io.size(), 3u);
  EXPECT_THAT(io.at("img")->shape(), ElementsAre(2, 3, 1, 20));
  EXPECT_THAT(io.at("filter")->shape(), ElementsAre(3, 1, 1, 4));
  // (20 + 0 + 1 - 4) // 2 + 1 = 9
  EXPECT_THAT(io.at("out")->shape(), ElementsAre(2, 3, 1, 9));
  EXPECT_EQ(io.at("out")->dtype(), proto::FLOAT32);
  EXPECT_EQ(graph->world().num_cores(), 1u);
}

TEST(DepthwiseConv1dParamsTest, UnsupportedValuesAreRefusedNamingThem) {
  for (const auto& [extra, message] :
       std::vector<std::pair<Settings, std::string>>{
           {{{"dilation", "2"}}, "parameter 'dilation' is 2"},
           {{{"stride_h", "2"}}, "parameter 'stride_h' is 2"},
           {{{"feature_group_count", "1"}},
            "parameter 'feature_group_count' is 1; it must equal channels (4)"},
           {{{"stride", "0"}}, "parameter 'stride' is 0"},
           {{{"pad_left", "-2"}}, "parameter 'pad_left' is -2"},
           {{{"channels", "0"}}, "parameter 'channels' is 0"},
           {{{"dtype", "int32"}}, "parameter 'dtype'"},
       }) {
    const Settings settings = With(DwSettings(1, 4, 16, 3), extra);
    absl::StatusOr<proto::Graph> graph = Trace("depthwise_conv1d", settings);
    ASSERT_FALSE(graph.ok()) << Describe(settings);
    EXPECT_THAT(graph.status().message(), HasSubstr(message))
        << Describe(settings);
  }
  absl::StatusOr<proto::Graph> graph =
      Trace("depthwise_conv1d", DwSettings(1, 4, 3, 9));
  ASSERT_FALSE(graph.ok());
  EXPECT_THAT(graph.status().message(), HasSubstr("parameter 'kernel_size'"));
  // The defaults and an explicit feature_group_count == channels trace.
  EXPECT_TRUE(Trace("depthwise_conv1d",
                    DwSettings(1, 4, 16, 3, {{"feature_group_count", "4"}}))
                  .ok());
}

}  // namespace
}  // namespace nkigraph::kernels
