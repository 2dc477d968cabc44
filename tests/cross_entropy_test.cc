// cross_entropy_forward and cross_entropy_backward: the interpreted graph
// against the references (both dtypes, tails on positions and vocabulary,
// ignore_index, reductions, in place), the mechanisms KERNELS.md asks the
// graph to show, and the trace-time refusals.
#include <cmath>
#include <cstdint>
#include <limits>
#include <map>
#include <optional>
#include <ostream>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "kernels/cross_entropy_backward.h"
#include "kernels/cross_entropy_common.h"
#include "kernels/cross_entropy_forward.h"
#include "kernels/registry.h"
#include "ops/access_pattern.h"
#include "proto/nkigraph.pb.h"
#include "tests/test_util.h"

namespace nkigraph::kernels {
namespace {

using nkigraph::testing::FloatAttr;
using nkigraph::testing::InstructionsOf;
using nkigraph::testing::IntAttr;
using nkigraph::testing::OperandOf;
using nkigraph::testing::StrAttr;
using nkigraph::testing::TensorOf;
using ::testing::HasSubstr;
using Settings = std::vector<std::pair<std::string, std::string>>;

constexpr char kForward[] = "cross_entropy_forward";
constexpr char kBackward[] = "cross_entropy_backward";

const KernelDef& Def(const std::string& name) {
  const KernelDef* def = KernelRegistry::Global().Find(name);
  EXPECT_NE(def, nullptr) << name;
  return *def;
}

ParamValues Params(const std::string& kernel, const Settings& settings) {
  absl::StatusOr<ParamValues> values =
      KernelRegistry::Global().ParseParams(Def(kernel), settings);
  EXPECT_TRUE(values.ok()) << values.status();
  return *values;
}

proto::Graph TraceOk(const std::string& kernel, const Settings& settings) {
  absl::StatusOr<proto::Graph> graph =
      KernelRegistry::Global().Trace(kernel, settings);
  EXPECT_TRUE(graph.ok()) << graph.status();
  return graph.ok() ? *std::move(graph) : proto::Graph();
}

// --- Interpreted graph against the reference --------------------------------

struct Case {
  int64_t p;
  int64_t v;
  int64_t chunk;
  std::optional<int64_t> ignore_index;
  std::string dtype;
  std::string reduction = "mean";  // backward only
  int inplace = 1;                 // backward only
};

Settings ForwardSettings(const Case& c);
std::string CaseName(const Case& c);

void PrintTo(const Case& c, std::ostream* os) { *os << CaseName(c); }

Settings ForwardSettings(const Case& c) {
  Settings s = {{"num_positions", absl::StrCat(c.p)},
                {"vocab_size", absl::StrCat(c.v)},
                {"chunk_size", absl::StrCat(c.chunk)},
                {"dtype", c.dtype}};
  if (c.ignore_index)
    s.emplace_back("ignore_index", absl::StrCat(*c.ignore_index));
  return s;
}

Settings BackwardSettings(const Case& c) {
  Settings s = ForwardSettings(c);
  s.emplace_back("reduction", c.reduction);
  s.emplace_back("inplace", absl::StrCat(c.inplace));
  return s;
}

std::string CaseName(const Case& c) {
  return absl::StrCat(
      "P", c.p, "_V", c.v, "_chunk", c.chunk, "_",
      c.ignore_index ? absl::StrCat("ignore", *c.ignore_index < 0 ? "m" : "",
                                    std::abs(*c.ignore_index))
                     : "noignore",
      "_", c.dtype, "_", c.reduction, "_inplace", c.inplace);
}

// Inputs from the kernel's make_inputs, with the first and last vocabulary
// entries used as targets so the gather and the one-hot reach both ends.
std::vector<HostArray> InputsFor(const std::string& kernel,
                                 const ParamValues& values, const Case& c) {
  absl::StatusOr<std::vector<HostArray>> inputs =
      Def(kernel).make_inputs(values, /*seed=*/c.p * 1000 + c.v);
  EXPECT_TRUE(inputs.ok()) << inputs.status();
  for (HostArray& input : *inputs) {
    if (input.name != "targets") continue;
    input.i32[0] = 0;
    input.i32[c.p - 1] = static_cast<int32_t>(c.v - 1);
  }
  return *std::move(inputs);
}

std::map<std::string, HostArray> RunOk(const proto::Graph& graph,
                                       const std::vector<HostArray>& inputs) {
  absl::StatusOr<std::map<std::string, HostArray>> outputs =
      testing::RunGraph(graph, inputs);
  EXPECT_TRUE(outputs.ok()) << outputs.status();
  return outputs.ok() ? *std::move(outputs)
                      : std::map<std::string, HostArray>();
}

// Elements with |got - want| > tol * (scale + |want|).
int64_t CountMismatches(const HostArray& got, const HostArray& want, double tol,
                        double scale, std::string* first) {
  EXPECT_EQ(got.shape, want.shape) << want.name;
  if (got.f32.size() != want.f32.size()) return -1;
  int64_t bad = 0;
  for (size_t i = 0; i < got.f32.size(); ++i) {
    const double w = want.f32[i];
    const double g = got.f32[i];
    if (!(std::fabs(g - w) <= tol * (scale + std::fabs(w)))) {
      if (bad++ == 0) {
        *first = absl::StrCat(want.name, "[", i, "] = ", g, ", want ", w);
      }
    }
  }
  return bad;
}

class CrossEntropyForwardMatchesReference
    : public ::testing::TestWithParam<Case> {};

TEST_P(CrossEntropyForwardMatchesReference, LossAndLse) {
  const Case& c = GetParam();
  const Settings settings = ForwardSettings(c);
  const ParamValues values = Params(kForward, settings);
  const proto::Graph graph = TraceOk(kForward, settings);
  const std::vector<HostArray> inputs = InputsFor(kForward, values, c);
  std::map<std::string, HostArray> got = RunOk(graph, inputs);
  absl::StatusOr<std::vector<HostArray>> want =
      Def(kForward).reference(values, inputs);
  ASSERT_TRUE(want.ok()) << want.status();
  const double tol = Def(kForward).tolerance(values);
  int64_t ignored = 0;
  for (const HostArray& w : *want) {
    ASSERT_TRUE(got.count(w.name)) << w.name;
    std::string first;
    EXPECT_EQ(CountMismatches(got.at(w.name), w, tol, 1.0, &first), 0) << first;
    if (w.name == "loss") {
      for (size_t i = 0; i < w.f32.size(); ++i) {
        if (c.ignore_index && inputs[1].i32[i] == *c.ignore_index) {
          ++ignored;
          EXPECT_EQ(got.at("loss").f32[i], 0.0f) << "ignored position " << i;
        }
      }
    }
  }
  // The inputs really exercise ignore_index when it is set.
  EXPECT_EQ(ignored > 0, c.ignore_index.has_value());
}

INSTANTIATE_TEST_SUITE_P(
    CrossEntropy, CrossEntropyForwardMatchesReference,
    ::testing::Values(
        // V < chunk_size: one chunk, no padding; P < 128.
        Case{5, 37, 64, std::nullopt, "float32"},
        Case{5, 37, 64, std::nullopt, "bfloat16"},
        // P > 128 with a tail tile; V = 3 chunks + a tail of 4.
        Case{130, 100, 32, -100, "float32"},
        Case{130, 100, 32, -100, "bfloat16"},
        // Three position tiles, a one-column tail chunk, ignore_index inside
        // the vocabulary (the gather stays in bounds, the loss is masked).
        Case{300, 257, 64, 7, "float32"},
        // Exact multiples: no tails at all.
        Case{128, 128, 64, std::nullopt, "bfloat16"}),
    [](const ::testing::TestParamInfo<Case>& info) {
      return CaseName(info.param);
    });

class CrossEntropyBackwardMatchesReference
    : public ::testing::TestWithParam<Case> {};

TEST_P(CrossEntropyBackwardMatchesReference, GradLogits) {
  const Case& c = GetParam();
  const Settings settings = BackwardSettings(c);
  const ParamValues values = Params(kBackward, settings);
  const proto::Graph graph = TraceOk(kBackward, settings);
  const std::vector<HostArray> inputs = InputsFor(kBackward, values, c);
  std::map<std::string, HostArray> got = RunOk(graph, inputs);
  absl::StatusOr<std::vector<HostArray>> want =
      Def(kBackward).reference(values, inputs);
  ASSERT_TRUE(want.ok()) << want.status();
  ASSERT_TRUE(got.count("grad_logits"));
  int64_t counted = 0;
  for (int32_t t : inputs[1].i32) {
    counted += c.ignore_index && t == *c.ignore_index ? 0 : 1;
  }
  const double s = c.reduction == "sum" ? 1.0 : 1.0 / counted;
  // Relative to the gradient's scale s (every value is within [-s, s]).
  std::string first;
  EXPECT_EQ(CountMismatches(got.at("grad_logits"), (*want)[0],
                            Def(kBackward).tolerance(values), s, &first),
            0)
      << first;
}

INSTANTIATE_TEST_SUITE_P(
    CrossEntropy, CrossEntropyBackwardMatchesReference,
    ::testing::Values(Case{5, 37, 64, std::nullopt, "float32", "mean", 1},
                      Case{5, 37, 64, std::nullopt, "bfloat16", "sum", 0},
                      Case{130, 100, 32, -100, "float32", "mean", 1},
                      Case{130, 100, 32, -100, "bfloat16", "mean", 0},
                      Case{130, 100, 32, -100, "float32", "sum", 1},
                      Case{300, 257, 64, 7, "float32", "mean", 0},
                      Case{300, 257, 64, std::nullopt, "bfloat16", "mean", 1},
                      Case{128, 128, 64, std::nullopt, "float32", "sum", 1}),
    [](const ::testing::TestParamInfo<Case>& info) {
      return CaseName(info.param);
    });

// The backward fed with the forward's own lse_state, as in training.
TEST(CrossEntropyChainTest, BackwardFromTheForwardsLseMatchesReference) {
  const Case c{140, 90, 32, -100, "float32"};
  const ParamValues fwd_values = Params(kForward, ForwardSettings(c));
  std::vector<HostArray> inputs = InputsFor(kForward, fwd_values, c);
  std::map<std::string, HostArray> fwd =
      RunOk(TraceOk(kForward, ForwardSettings(c)), inputs);
  ASSERT_TRUE(fwd.count("lse_state"));
  inputs.push_back(fwd.at("lse_state"));
  const ParamValues bwd_values = Params(kBackward, BackwardSettings(c));
  std::map<std::string, HostArray> got =
      RunOk(TraceOk(kBackward, BackwardSettings(c)), inputs);
  // The reference rebuilds lse itself rather than trusting the device's.
  const std::vector<HostArray> ref_inputs =
      MakeCrossEntropyInputs(**fwd_values.Typed<CrossEntropyParams>(),
                             /*seed=*/c.p * 1000 + c.v, true);
  std::vector<HostArray> want_inputs = {inputs[0], inputs[1], ref_inputs[2]};
  absl::StatusOr<std::vector<HostArray>> want =
      Def(kBackward).reference(bwd_values, want_inputs);
  ASSERT_TRUE(want.ok()) << want.status();
  int64_t counted = 0;
  for (int32_t t : inputs[1].i32) counted += t == -100 ? 0 : 1;
  std::string first;
  EXPECT_EQ(CountMismatches(got.at("grad_logits"), (*want)[0], 1e-5,
                            1.0 / counted, &first),
            0)
      << first;
}

TEST(CrossEntropyBackwardTest, EveryPositionIgnoredGivesAZeroGradient) {
  const Case c{20, 50, 16, -100, "float32", "mean", 0};
  const ParamValues values = Params(kBackward, BackwardSettings(c));
  std::vector<HostArray> inputs = InputsFor(kBackward, values, c);
  for (int32_t& t : inputs[1].i32) t = -100;
  std::map<std::string, HostArray> got =
      RunOk(TraceOk(kBackward, BackwardSettings(c)), inputs);
  ASSERT_TRUE(got.count("grad_logits"));
  for (float g : got.at("grad_logits").f32) ASSERT_EQ(g, 0.0f);
}

TEST(CrossEntropyForwardTest, TargetOutsideTheVocabularyIsADeviceError) {
  const Case c{10, 40, 16, std::nullopt, "float32"};
  const ParamValues values = Params(kForward, ForwardSettings(c));
  std::vector<HostArray> inputs = InputsFor(kForward, values, c);
  inputs[1].i32[4] = 40;
  absl::StatusOr<std::map<std::string, HostArray>> out =
      testing::RunGraph(TraceOk(kForward, ForwardSettings(c)), inputs);
  ASSERT_FALSE(out.ok());
  EXPECT_THAT(out.status().message(),
              HasSubstr("out-of-bounds dynamic offset"));
}

// --- References against hand-computed values --------------------------------

TEST(CrossEntropyReferenceTest, ForwardAndBackwardMatchHandComputedValues) {
  CrossEntropyBackwardParams params;
  params.num_positions = 2;
  params.vocab_size = 3;
  params.chunk_size = 2;
  params.dtype = proto::FLOAT32;
  params.reduction = CrossEntropyReduction::kSum;
  const float l2 = std::log(2.0f), l3 = std::log(3.0f);
  // Row 0: equal logits, lse = ln 3. Row 1: ln 1, ln 2, ln 3: lse = ln 6.
  const std::vector<HostArray> inputs = {
      testing::Floats("logits", {2, 3}, {0, 0, 0, 0, l2, l3}),
      testing::Ints("targets", {2}, {0, 2}),
      testing::Floats("lse_state", {2}, {l3, std::log(6.0f)})};
  absl::StatusOr<std::vector<HostArray>> fwd =
      CrossEntropyForwardReference(params, inputs);
  ASSERT_TRUE(fwd.ok()) << fwd.status();
  EXPECT_NEAR((*fwd)[0].f32[0], std::log(3.0), 1e-6);  // loss
  EXPECT_NEAR((*fwd)[0].f32[1], std::log(2.0), 1e-6);
  EXPECT_NEAR((*fwd)[1].f32[1], std::log(6.0), 1e-6);  // lse_state
  absl::StatusOr<std::vector<HostArray>> bwd =
      CrossEntropyBackwardReference(params, inputs);
  ASSERT_TRUE(bwd.ok()) << bwd.status();
  const std::vector<double> expected = {1.0 / 3 - 1, 1.0 / 3, 1.0 / 3,
                                        1.0 / 6,     2.0 / 6, 3.0 / 6 - 1};
  for (int i = 0; i < 6; ++i) {
    EXPECT_NEAR((*bwd)[0].f32[i], expected[i], 1e-6) << i;
  }
  // Mean over the one position that counts, the other ignored.
  params.reduction = CrossEntropyReduction::kMean;
  params.ignore_index = 2;
  bwd = CrossEntropyBackwardReference(params, inputs);
  ASSERT_TRUE(bwd.ok()) << bwd.status();
  for (int i = 0; i < 3; ++i) EXPECT_NEAR((*bwd)[0].f32[i], expected[i], 1e-6);
  for (int i = 3; i < 6; ++i) EXPECT_EQ((*bwd)[0].f32[i], 0.0f);
  fwd = CrossEntropyForwardReference(params, inputs);
  ASSERT_TRUE(fwd.ok());
  EXPECT_EQ((*fwd)[0].f32[1], 0.0f);
}

TEST(CrossEntropyReferenceTest, TargetOutOfRangeIsAnError) {
  CrossEntropyParams params;
  params.num_positions = 1;
  params.vocab_size = 3;
  params.dtype = proto::FLOAT32;
  absl::StatusOr<std::vector<HostArray>> out = CrossEntropyForwardReference(
      params, {testing::Floats("logits", {1, 3}, {0, 0, 0}),
               testing::Ints("targets", {1}, {3})});
  ASSERT_FALSE(out.ok());
  EXPECT_THAT(out.status().message(), HasSubstr("targets[0] is 3"));
}

// --- Mechanisms the graph must show
// -------------------------------------------

int64_t FreeSize(const proto::Tensor& t) { return ops::RowElements(t); }

TEST(CrossEntropyMechanismTest, NoOnChipTensorHoldsAWholeVocabularyRow) {
  const Settings common = {{"num_positions", "200"},
                           {"vocab_size", "300"},
                           {"chunk_size", "64"},
                           {"ignore_index", "-100"}};
  for (const std::string kernel : {kForward, kBackward}) {
    const proto::Graph graph = TraceOk(kernel, common);
    int64_t chunk_wide = 0;
    for (const proto::Tensor& t : graph.tensors()) {
      if (!ops::IsOnChip(t.space())) continue;
      EXPECT_LT(FreeSize(t), 300) << kernel << " '" << t.name() << "'";
      chunk_wide += FreeSize(t) == 64 ? 1 : 0;
    }
    EXPECT_GT(chunk_wide, 0) << kernel << ": no chunk-wide buffer";
  }
}

TEST(CrossEntropyMechanismTest, ForwardRunsTheOnlineRecurrencePerChunk) {
  // 2 position tiles x 5 chunks (4 of 64, a tail of 44).
  const proto::Graph graph = TraceOk(
      kForward,
      {{"num_positions", "200"}, {"vocab_size", "300"}, {"chunk_size", "64"}});
  const int64_t steps = 2 * 5;
  int64_t max_reduces = 0;
  for (const proto::Instruction* r :
       InstructionsOf(graph, proto::TENSOR_REDUCE)) {
    max_reduces += StrAttr(*r, "op") == "maximum" ? 1 : 0;
  }
  EXPECT_EQ(max_reduces, steps);
  int64_t exps = 0, exp_sums = 0, logs = 0;
  for (const proto::Instruction* a : InstructionsOf(graph, proto::ACTIVATION)) {
    if (StrAttr(*a, "func") == "exp") {
      ++exps;
      if (StrAttr(*a, "reduce_cmd") == "reset_reduce") {
        ++exp_sums;
        EXPECT_NE(OperandOf(*a, "reduce_res").tensor_id(), 0u)
            << "reduce_res missing";
      }
      ASSERT_NE(OperandOf(*a, "bias").tensor_id(), 0u) << "bias column -m_new";
      EXPECT_EQ(TensorOf(graph, OperandOf(*a, "bias")).name(), "neg_m_new");
    }
    logs += StrAttr(*a, "func") == "log" ? 1 : 0;
  }
  EXPECT_EQ(exps, 2 * steps);  // correction and exp_chunk
  EXPECT_EQ(exp_sums, steps);
  EXPECT_EQ(logs, 2);  // one lse per position tile
  // The tail chunk's last 20 columns are padded with -inf, once per tile.
  int64_t pads = 0;
  for (const proto::Instruction* m : InstructionsOf(graph, proto::MEMSET)) {
    const double value = FloatAttr(*m, "value");
    if (!std::isinf(value) || value > 0) continue;
    if (TensorOf(graph, OperandOf(*m, "dst")).name() != "chunk") continue;
    ++pads;
    EXPECT_EQ(OperandOf(*m, "dst").offset() % 64, 44);
    EXPECT_EQ(ops::ApElements(OperandOf(*m, "dst")) % 20, 0);
  }
  EXPECT_EQ(pads, 2);
}

TEST(CrossEntropyMechanismTest, ForwardWithoutTailChunkPadsNothing) {
  const proto::Graph graph = TraceOk(
      kForward,
      {{"num_positions", "8"}, {"vocab_size", "40"}, {"chunk_size", "64"}});
  for (const proto::Instruction* m : InstructionsOf(graph, proto::MEMSET)) {
    EXPECT_NE(TensorOf(graph, OperandOf(*m, "dst")).name(), "chunk");
  }
}

TEST(CrossEntropyMechanismTest, TargetLogitIsOneIndirectDmaPerTile) {
  for (const bool ignore : {false, true}) {
    Settings settings = {{"num_positions", "200"}, {"vocab_size", "300"}};
    if (ignore) settings.emplace_back("ignore_index", "-100");
    const proto::Graph graph = TraceOk(kForward, settings);
    int64_t gathers = 0;
    for (const proto::Instruction* dma :
         InstructionsOf(graph, proto::DMA_COPY)) {
      const proto::AccessPattern& src = OperandOf(*dma, "src");
      if (!src.has_dynamic()) continue;
      ++gathers;
      EXPECT_EQ(TensorOf(graph, src).name(), "logits");
      EXPECT_EQ(src.dynamic().kind(), proto::DynamicOffset::VECTOR);
      EXPECT_EQ(src.dynamic().indirect_dim(), 1u);
      EXPECT_EQ(src.dynamic().oob_mode(),
                ignore ? proto::DynamicOffset::OOB_SKIP
                       : proto::DynamicOffset::OOB_ERROR);
      const proto::Tensor& index =
          graph.tensors(static_cast<int>(src.dynamic().tensor_id()) - 1);
      EXPECT_EQ(index.space(), proto::SBUF);
      EXPECT_EQ(index.dtype(), proto::INT32);
      EXPECT_EQ(ops::ApElements(OperandOf(*dma, "dst")), index.shape(0));
    }
    EXPECT_EQ(gathers, 2) << "one gather per position tile";
  }
}

TEST(CrossEntropyMechanismTest,
     BackwardRebuildsSoftmaxFromLseWithoutAReduction) {
  const proto::Graph graph = TraceOk(kBackward, {{"num_positions", "200"},
                                                 {"vocab_size", "300"},
                                                 {"chunk_size", "64"},
                                                 {"ignore_index", "-100"}});
  EXPECT_TRUE(InstructionsOf(graph, proto::TENSOR_REDUCE).empty());
  int64_t exps = 0;
  for (const proto::Instruction* a : InstructionsOf(graph, proto::ACTIVATION)) {
    EXPECT_EQ(StrAttr(*a, "reduce_cmd"), "idle") << "no sum pass";
    if (StrAttr(*a, "func") != "exp") continue;
    ++exps;
    ASSERT_NE(OperandOf(*a, "bias").tensor_id(), 0u);
    EXPECT_EQ(TensorOf(graph, OperandOf(*a, "bias")).name(), "neg_lse");
  }
  EXPECT_EQ(exps, 2 * 5);
  // The lse column comes from the lse_state input.
  bool loads_lse = false;
  for (const proto::Instruction* dma : InstructionsOf(graph, proto::DMA_COPY)) {
    loads_lse |= TensorOf(graph, OperandOf(*dma, "src")).name() == "lse_state";
  }
  EXPECT_TRUE(loads_lse);
}

TEST(CrossEntropyMechanismTest, BackwardBuildsTheOneHotByIotaAndEqualInFp32) {
  const proto::Graph graph = TraceOk(
      kBackward,
      {{"num_positions", "200"}, {"vocab_size", "300"}, {"chunk_size", "64"}});
  const auto iotas = InstructionsOf(graph, proto::IOTA);
  ASSERT_EQ(iotas.size(), 2u * 5u);
  for (size_t i = 0; i < iotas.size(); ++i) {
    EXPECT_EQ(TensorOf(graph, OperandOf(*iotas[i], "dst")).dtype(),
              proto::FLOAT32);
    EXPECT_EQ(IntAttr(*iotas[i], "offset"), 64 * static_cast<int64_t>(i % 5))
        << "offset = chunk start";
  }
  int64_t compares = 0;
  for (const proto::Instruction* ts :
       InstructionsOf(graph, proto::TENSOR_SCALAR)) {
    if (StrAttr(*ts, "op0") != "equal") continue;
    ++compares;
    const proto::Tensor& data = TensorOf(graph, OperandOf(*ts, "data"));
    EXPECT_EQ(data.name(), "indices");
    ASSERT_NE(OperandOf(*ts, "operand0").tensor_id(), 0u)
        << "target column operand";
    const proto::Tensor& target = TensorOf(graph, OperandOf(*ts, "operand0"));
    EXPECT_EQ(target.dtype(), proto::FLOAT32);
    EXPECT_EQ(FreeSize(target), 1);
  }
  EXPECT_EQ(compares, 2 * 5);
  // No scatter: nothing in the backward is addressed dynamically.
  for (const proto::Stream& stream : graph.streams()) {
    for (const proto::Instruction& instr : stream.instructions()) {
      for (const proto::AccessPattern& ap : instr.operands()) {
        EXPECT_FALSE(ap.has_dynamic());
      }
    }
  }
}

int64_t HbmTensorsShaped(const proto::Graph& graph, int64_t p, int64_t v) {
  int64_t n = 0;
  for (const proto::Tensor& t : graph.tensors()) {
    if (ops::IsHbm(t.space()) && t.shape_size() == 2 && t.shape(0) == p &&
        t.shape(1) == v) {
      ++n;
    }
  }
  return n;
}

TEST(CrossEntropyMechanismTest, InPlaceBackwardWritesOverLogits) {
  const Settings settings = {{"num_positions", "150"}, {"vocab_size", "90"}};
  Settings in_place = settings, separate = settings;
  in_place.emplace_back("inplace", "1");
  separate.emplace_back("inplace", "0");
  const proto::Graph a = TraceOk(kBackward, in_place);
  EXPECT_EQ(HbmTensorsShaped(a, 150, 90), 1);
  const proto::Tensor* logits = nullptr;
  for (const proto::Tensor& t : a.tensors()) {
    if (t.name() == "logits") logits = &t;
  }
  ASSERT_NE(logits, nullptr);
  EXPECT_EQ(logits->role(), proto::ROLE_INPUT_OUTPUT);
  EXPECT_EQ(logits->output_name(), "grad_logits");
  int64_t stores = 0;
  for (const proto::Instruction* dma : InstructionsOf(a, proto::DMA_COPY)) {
    stores += TensorOf(a, OperandOf(*dma, "dst")).id() == logits->id() ? 1 : 0;
  }
  EXPECT_EQ(stores, 2) << "one store per (position tile, chunk)";

  const proto::Graph b = TraceOk(kBackward, separate);
  EXPECT_EQ(HbmTensorsShaped(b, 150, 90), 2);
  for (const proto::Tensor& t : b.tensors()) {
    if (t.name() == "logits") {
      EXPECT_EQ(t.role(), proto::ROLE_INPUT);
    }
    if (t.name() == "grad_logits") {
      EXPECT_EQ(t.role(), proto::ROLE_OUTPUT);
    }
  }
}

TEST(CrossEntropyMechanismTest, MeanWithIgnoreIndexCountsPositionsOnDevice) {
  Settings settings = {
      {"num_positions", "300"}, {"vocab_size", "50"}, {"ignore_index", "-100"}};
  const proto::Graph counted = TraceOk(kBackward, settings);
  const auto matmuls = InstructionsOf(counted, proto::NC_MATMUL);
  ASSERT_EQ(matmuls.size(), 3u) << "one partition-sum matmul per tile";
  for (const proto::Instruction* mm : matmuls) {
    EXPECT_EQ(TensorOf(counted, OperandOf(*mm, "dst")).name(), "valid_count");
  }
  settings.emplace_back("reduction", "sum");
  EXPECT_TRUE(
      InstructionsOf(TraceOk(kBackward, settings), proto::NC_MATMUL).empty());
  EXPECT_TRUE(InstructionsOf(TraceOk(kBackward, {{"num_positions", "300"},
                                                 {"vocab_size", "50"}}),
                             proto::NC_MATMUL)
                  .empty());
}

TEST(CrossEntropyMechanismTest, InterfaceMatchesTheContract) {
  const proto::Graph fwd =
      TraceOk(kForward, {{"num_positions", "7"}, {"vocab_size", "11"}});
  std::map<std::string, const proto::Tensor*> io;
  for (const proto::Tensor& t : fwd.tensors()) {
    if (t.role() != proto::ROLE_INTERNAL) io[t.name()] = &t;
  }
  ASSERT_EQ(io.size(), 4u);
  EXPECT_EQ(io.at("logits")->dtype(), proto::BFLOAT16);  // default dtype
  EXPECT_EQ(io.at("targets")->dtype(), proto::INT32);
  EXPECT_EQ(io.at("targets")->shape_size(), 1);
  EXPECT_EQ(io.at("loss")->dtype(), proto::FLOAT32);
  EXPECT_EQ(io.at("loss")->role(), proto::ROLE_OUTPUT);
  EXPECT_EQ(io.at("lse_state")->dtype(), proto::FLOAT32);
  EXPECT_EQ(io.at("lse_state")->shape(0), 7);
  EXPECT_EQ(fwd.world().num_ranks(), 1u);
  EXPECT_EQ(fwd.world().num_cores(), 1u);

  const proto::Graph bwd = TraceOk(
      kBackward,
      {{"num_positions", "7"}, {"vocab_size", "11"}, {"dtype", "float32"}});
  io.clear();
  for (const proto::Tensor& t : bwd.tensors()) {
    if (t.role() != proto::ROLE_INTERNAL) io[t.name()] = &t;
  }
  ASSERT_EQ(io.size(), 3u);  // grad_logits is logits, in place by default
  EXPECT_EQ(io.at("logits")->dtype(), proto::FLOAT32);
  EXPECT_EQ(io.at("lse_state")->dtype(), proto::FLOAT32);
  EXPECT_EQ(io.at("lse_state")->role(), proto::ROLE_INPUT);
  std::vector<std::string> names;
  for (const ParamSpec& spec : Def(kBackward).params)
    names.push_back(spec.name);
  EXPECT_THAT(names, ::testing::ElementsAre("num_positions", "vocab_size",
                                            "chunk_size", "ignore_index",
                                            "reduction", "inplace", "dtype"));
}

// --- Trace-time refusals
// ---------------------------------------------------------

TEST(CrossEntropyRefusalTest, BadParametersAreNamedWithTheirLimits) {
  struct Refusal {
    std::string kernel;
    Settings settings;
    std::string message;
  };
  const Settings ok = {{"num_positions", "8"}, {"vocab_size", "16"}};
  auto with = [&](std::string name, std::string value) {
    Settings s = ok;
    for (auto& [n, v] : s) {
      if (n == name) v = value;
    }
    if (name != "num_positions" && name != "vocab_size")
      s.emplace_back(name, value);
    return s;
  };
  const std::vector<Refusal> refusals = {
      {kForward, with("num_positions", "0"),
       "parameter 'num_positions' is 0; it must be between 1 and 16777216"},
      {kForward, with("vocab_size", "0"),
       "parameter 'vocab_size' is 0; it must be between 1 and 16777216"},
      {kBackward, with("vocab_size", "16777217"),
       "parameter 'vocab_size' is 16777217; it must be between 1 and "
       "16777216"},
      {kForward, with("chunk_size", "0"),
       "parameter 'chunk_size' is 0; it must be between 1 and 16384"},
      {kBackward, with("chunk_size", "16385"),
       "parameter 'chunk_size' is 16385; it must be between 1 and 16384 "
       "(three chunk-wide buffers must fit one SBUF partition)"},
      {kForward, with("ignore_index", "99999999"),
       "parameter 'ignore_index' is 99999999; it must be between -16777216 "
       "and 16777216"},
      {kBackward, with("inplace", "2"),
       "parameter 'inplace' is 2; it must be between 0 and 1"},
      {kBackward, with("reduction", "max"),
       "parameter 'reduction': 'max' is not one of mean, sum"},
      {kForward, with("dtype", "float16"),
       "parameter 'dtype': 'float16' is not one of float32, bfloat16"},
      {kForward,
       {{"vocab_size", "16"}},
       "missing required parameter 'num_positions'"},
      {kBackward,
       {{"num_positions", "1048576"},
        {"vocab_size", "1048576"},
        {"chunk_size", "64"}},
       "(position tile, vocabulary chunk) steps; cross-entropy traces at most "
       "262144"},
  };
  for (const Refusal& r : refusals) {
    absl::StatusOr<proto::Graph> graph =
        KernelRegistry::Global().Trace(r.kernel, r.settings);
    ASSERT_FALSE(graph.ok()) << r.message;
    EXPECT_THAT(graph.status().message(), HasSubstr(r.message));
  }
}

TEST(CrossEntropyRefusalTest, ChunkSizeLimitFitsSbufAtFloat32) {
  // The largest chunk traces: its buffers fit a trn2 SBUF partition.
  const proto::Graph graph = TraceOk(kBackward, {{"num_positions", "2"},
                                                 {"vocab_size", "16384"},
                                                 {"chunk_size", "16384"},
                                                 {"dtype", "float32"},
                                                 {"ignore_index", "-100"}});
  EXPECT_GT(graph.tensors_size(), 0);
}

}  // namespace
}  // namespace nkigraph::kernels
