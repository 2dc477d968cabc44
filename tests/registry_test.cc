// The kernel registry (parameter parsing, tracing by name) and the example
// kernel tiled_matmul it registers.
#include "kernels/registry.h"

#include <cmath>
#include <cstdint>
#include <map>
#include <memory>
#include <numbers>
#include <random>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "interp/interpreter.h"
#include "kernels/compare.h"
#include "kernels/tiled_matmul.h"
#include "proto/nkigraph.pb.h"
#include "tests/test_util.h"
#include "util/dtype.h"
#include "util/graph_io.h"

namespace nkigraph::kernels {
namespace {

using nkigraph::testing::InstructionsOf;
using nkigraph::testing::IntAttr;
using nkigraph::testing::OperandOf;
using nkigraph::testing::OperandTensor;
using nkigraph::testing::StrAttr;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::Pair;

using Settings = std::vector<std::pair<std::string, std::string>>;

// --- A toy kernel for the parsing rules ----------------------------------

KernelDef ToyKernel() {
  KernelDef def;
  def.name = "toy";
  def.summary = "copies nothing";
  def.params = {
      {.name = "size",
       .type = ParamType::kInt,
       .default_value = "",
       .help = "rows",
       .required = true,
       .choices = {},
       .int_range = {},
       .edges = {}},
      {.name = "scale",
       .type = ParamType::kFloat,
       .default_value = "1.5",
       .help = "scale",
       .required = false,
       .choices = {},
       .int_range = {},
       .edges = {}},
      {.name = "mode",
       .type = ParamType::kString,
       .default_value = "fast",
       .help = "mode",
       .required = false,
       .choices = {"fast", "exact"},
       .int_range = {},
       .edges = {}},
      {.name = "verbose",
       .type = ParamType::kBool,
       .default_value = "false",
       .help = "verbose",
       .required = false,
       .choices = {},
       .int_range = {},
       .edges = {}},
      {.name = "ignore_index",
       .type = ParamType::kInt,
       .default_value = "",
       .help = "optional, no default",
       .required = false,
       .choices = {},
       .int_range = {},
       .edges = {}},
  };
  def.world =
      [](const ParamValues& values) -> absl::StatusOr<builder::WorldConfig> {
    if (values.Int("size") > 128) {
      return absl::InvalidArgumentError("parameter 'size' exceeds 128");
    }
    return builder::WorldConfig{};
  };
  def.body = [](builder::Tracer& tracer, const ParamValues& values) {
    builder::Tensor in =
        tracer.Input("in", {values.Int("size"), 4}, proto::FLOAT32);
    tracer.Output("out", in);
  };
  return def;
}

class ToyRegistryTest : public ::testing::Test {
 protected:
  ToyRegistryTest() { registry_.Register(ToyKernel()); }
  absl::StatusOr<ParamValues> Parse(const Settings& settings) {
    return registry_.ParseParams(*registry_.Find("toy"), settings);
  }
  KernelRegistry registry_;
};

TEST_F(ToyRegistryTest, DefaultsAreFilledInAndGivenIsTracked) {
  absl::StatusOr<ParamValues> values = Parse({{"size", "7"}});
  ASSERT_TRUE(values.ok()) << values.status();
  EXPECT_EQ(values->Int("size"), 7);
  EXPECT_DOUBLE_EQ(values->Float("scale"), 1.5);
  EXPECT_EQ(values->Str("mode"), "fast");
  EXPECT_FALSE(values->Bool("verbose"));
  EXPECT_TRUE(values->Given("size"));
  EXPECT_FALSE(values->Given("scale"));
}

TEST_F(ToyRegistryTest, GivenValuesOverrideDefaults) {
  absl::StatusOr<ParamValues> values = Parse({{"size", "-3"},
                                              {"scale", "2.25e1"},
                                              {"mode", "exact"},
                                              {"verbose", "true"},
                                              {"ignore_index", "-100"}});
  ASSERT_TRUE(values.ok()) << values.status();
  EXPECT_EQ(values->Int("size"), -3);
  EXPECT_DOUBLE_EQ(values->Float("scale"), 22.5);
  EXPECT_EQ(values->Str("mode"), "exact");
  EXPECT_TRUE(values->Bool("verbose"));
  EXPECT_EQ(values->Int("ignore_index"), -100);
  EXPECT_TRUE(values->Given("ignore_index"));
}

TEST_F(ToyRegistryTest, AsPairsFollowsSpecOrderCanonicalAndSkipsUnset) {
  absl::StatusOr<ParamValues> values =
      Parse({{"verbose", "1"}, {"size", "007"}});
  ASSERT_TRUE(values.ok()) << values.status();
  EXPECT_THAT(values->AsPairs(),
              ElementsAre(Pair("size", "7"), Pair("scale", "1.5"),
                          Pair("mode", "fast"), Pair("verbose", "1")));
}

TEST_F(ToyRegistryTest, UnknownParameterIsNamedWithTheKnownOnes) {
  absl::StatusOr<ParamValues> values = Parse({{"size", "1"}, {"sise", "2"}});
  ASSERT_FALSE(values.ok());
  EXPECT_EQ(values.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(values.status().message(),
            "unknown parameter 'sise' for kernel 'toy' (known: size, scale, "
            "mode, verbose, ignore_index)");
}

TEST_F(ToyRegistryTest, BadIntegerNamesParameterAndValue) {
  for (const char* bad :
       {"abc", "", "1.5", " 3", "3 ", "99999999999999999999"}) {
    absl::StatusOr<ParamValues> values = Parse({{"size", bad}});
    ASSERT_FALSE(values.ok()) << bad;
    EXPECT_EQ(values.status().message(),
              absl::StrCat("parameter 'size': '", bad, "' is not an integer"));
  }
}

TEST_F(ToyRegistryTest, BadFloatAndBoolNameTheParameter) {
  absl::StatusOr<ParamValues> values =
      Parse({{"size", "1"}, {"scale", "fast"}});
  ASSERT_FALSE(values.ok());
  EXPECT_THAT(values.status().message(),
              HasSubstr("parameter 'scale': 'fast' is not a"));
  values = Parse({{"size", "1"}, {"scale", "inf"}});
  ASSERT_FALSE(values.ok());
  EXPECT_THAT(values.status().message(), HasSubstr("parameter 'scale'"));
  values = Parse({{"size", "1"}, {"verbose", "maybe"}});
  ASSERT_FALSE(values.ok());
  EXPECT_THAT(values.status().message(),
              HasSubstr("parameter 'verbose': 'maybe' is not a boolean"));
}

TEST_F(ToyRegistryTest, StringOutsideChoicesIsRefusedListingThem) {
  absl::StatusOr<ParamValues> values = Parse({{"size", "1"}, {"mode", "slow"}});
  ASSERT_FALSE(values.ok());
  EXPECT_EQ(values.status().message(),
            "parameter 'mode': 'slow' is not one of fast, exact");
}

TEST_F(ToyRegistryTest, MissingRequiredParameterIsNamed) {
  absl::StatusOr<ParamValues> values = Parse({{"mode", "exact"}});
  ASSERT_FALSE(values.ok());
  EXPECT_THAT(values.status().message(),
              HasSubstr("missing required parameter 'size' for kernel 'toy'"));
}

TEST_F(ToyRegistryTest, ParameterGivenTwiceIsRefused) {
  absl::StatusOr<ParamValues> values = Parse({{"size", "1"}, {"size", "2"}});
  ASSERT_FALSE(values.ok());
  EXPECT_THAT(values.status().message(), HasSubstr("'size'"));
}

TEST_F(ToyRegistryTest, TraceUnknownKernelIsNotFoundListingRegistered) {
  absl::StatusOr<proto::Graph> graph = registry_.Trace("toyy", {});
  ASSERT_FALSE(graph.ok());
  EXPECT_EQ(graph.status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(graph.status().message(),
            "unknown kernel 'toyy' (registered: toy)");
}

TEST_F(ToyRegistryTest, TraceRunsWorldValidation) {
  absl::StatusOr<proto::Graph> graph =
      registry_.Trace("toy", {{"size", "200"}});
  ASSERT_FALSE(graph.ok());
  EXPECT_THAT(graph.status().message(), HasSubstr("'size' exceeds 128"));
}

TEST_F(ToyRegistryTest, TraceRecordsKernelNameAndParameters) {
  absl::StatusOr<proto::Graph> graph =
      registry_.Trace("toy", {{"size", "3"}, {"mode", "exact"}});
  ASSERT_TRUE(graph.ok()) << graph.status();
  EXPECT_EQ(graph->kernel_name(), "toy");
  std::vector<std::pair<std::string, std::string>> params;
  for (const proto::Param& p : graph->params()) {
    params.emplace_back(p.name(), p.value());
  }
  EXPECT_THAT(params, ElementsAre(Pair("size", "3"), Pair("scale", "1.5"),
                                  Pair("mode", "exact"), Pair("verbose", "0")));
  ASSERT_EQ(graph->tensors_size(), 1);
  EXPECT_THAT(graph->tensors(0).shape(), ElementsAre(3, 4));
}

// --- The global registry --------------------------------------------------

TEST(GlobalRegistryTest, KernelNamesAreUniqueAndDocumented) {
  const KernelRegistry& registry = KernelRegistry::Global();
  ASSERT_FALSE(registry.kernels().empty());
  std::set<std::string> names;
  for (const KernelDef& def : registry.kernels()) {
    EXPECT_TRUE(names.insert(def.name).second) << "duplicate " << def.name;
    EXPECT_FALSE(def.summary.empty()) << def.name;
    EXPECT_TRUE(def.body) << def.name;
    EXPECT_TRUE(def.world) << def.name;
    EXPECT_FALSE(def.outputs.empty()) << def.name;
    for (const ParamSpec& spec : def.params) {
      EXPECT_FALSE(spec.help.empty()) << def.name << "." << spec.name;
    }
  }
  EXPECT_NE(registry.Find("tiled_matmul"), nullptr);
  EXPECT_EQ(&KernelRegistry::Global(), &registry);
}

TEST(GlobalRegistryTest, EveryKernelWithoutRequiredParamsTracesWithDefaults) {
  const KernelRegistry& registry = KernelRegistry::Global();
  for (const KernelDef& def : registry.kernels()) {
    bool needs_settings = false;
    for (const ParamSpec& spec : def.params) needs_settings |= spec.required;
    if (needs_settings) continue;
    absl::StatusOr<proto::Graph> graph = registry.Trace(def.name, {});
    EXPECT_TRUE(graph.ok()) << def.name << ": " << graph.status();
  }
}

// Every kernel, traced at its example (or default) parameters, runs on
// random inputs: the inputs whose values matter (routing tables, targets)
// declare their valid values, and the random ones respect them.
TEST(GlobalRegistryTest, EveryKernelRunsOnRandomInputs) {
  const KernelRegistry& registry = KernelRegistry::Global();
  for (const KernelDef& def : registry.kernels()) {
    SCOPED_TRACE(def.name);
    absl::StatusOr<proto::Graph> graph = registry.Trace(def.name, def.example);
    ASSERT_TRUE(graph.ok()) << graph.status();
    absl::StatusOr<std::unique_ptr<interp::Interpreter>> interp =
        interp::Interpreter::Create(*graph);
    ASSERT_TRUE(interp.ok()) << interp.status();
    absl::Status filled = (*interp)->FillRandomInputs(7);
    ASSERT_TRUE(filled.ok()) << filled;
    absl::Status run = (*interp)->Run();
    EXPECT_TRUE(run.ok()) << run;
  }
}

// The MoE routing inputs carry their valid values into the graph.
TEST(GlobalRegistryTest, RoutingInputsDeclareTheirValueRanges) {
  absl::StatusOr<proto::Graph> graph = KernelRegistry::Global().Trace(
      "bwmm_shard_on_H", {{"num_tokens", "10"}, {"num_experts", "3"}});
  ASSERT_TRUE(graph.ok()) << graph.status();
  std::map<std::string, const proto::Tensor*> by_name;
  for (const proto::Tensor& t : graph->tensors()) by_name[t.name()] = &t;
  const proto::Tensor& experts = *by_name.at("block_to_expert");
  ASSERT_TRUE(experts.has_value_range());
  EXPECT_EQ(experts.value_range().lo(), 0);
  EXPECT_EQ(experts.value_range().hi(), 2);
  const proto::Tensor& tokens = *by_name.at("token_position_to_id");
  ASSERT_TRUE(tokens.has_value_range());
  EXPECT_EQ(tokens.value_range().lo(), -1);
  EXPECT_EQ(tokens.value_range().hi(), 9);
  EXPECT_FALSE(by_name.at("hidden_states")->has_value_range());
  EXPECT_FALSE(by_name.at("output")->has_value_range());
}

// --- tiled_matmul -----------------------------------------------------------

absl::StatusOr<proto::Graph> TraceTiledMatmul(const Settings& settings) {
  return KernelRegistry::Global().Trace("tiled_matmul", settings);
}

int64_t CeilDiv(int64_t a, int64_t b) { return (a + b - 1) / b; }

TEST(TiledMatmulTest, MatmulCountIsTheTileProductWithTails) {
  absl::StatusOr<proto::Graph> graph =
      TraceTiledMatmul({{"m", "600"}, {"k", "300"}, {"n", "200"}});
  ASSERT_TRUE(graph.ok()) << graph.status();
  const int64_t out_tiles = CeilDiv(200, 128) * CeilDiv(600, 512);
  EXPECT_EQ(
      static_cast<int64_t>(InstructionsOf(*graph, proto::NC_MATMUL).size()),
      out_tiles * CeilDiv(300, 128));
  EXPECT_EQ(
      static_cast<int64_t>(InstructionsOf(*graph, proto::ACTIVATION).size()),
      out_tiles);
}

TEST(TiledMatmulTest, AccumulationRestartsOncePerOutputTile) {
  absl::StatusOr<proto::Graph> graph =
      TraceTiledMatmul({{"m", "600"}, {"k", "300"}, {"n", "200"}});
  ASSERT_TRUE(graph.ok()) << graph.status();
  int fresh = 0;
  uint32_t psum_id = 0;
  for (const proto::Instruction* mm :
       InstructionsOf(*graph, proto::NC_MATMUL)) {
    // A new PSUM tile starts with accumulate=0; later k tiles accumulate.
    const bool new_tile = OperandOf(*mm, "dst").tensor_id() != psum_id;
    psum_id = OperandOf(*mm, "dst").tensor_id();
    EXPECT_EQ(IntAttr(*mm, "accumulate"), new_tile ? 0 : 1);
    fresh += new_tile ? 1 : 0;
    EXPECT_EQ(OperandTensor(*graph, *mm, "dst").space(), proto::PSUM);
    EXPECT_EQ(OperandTensor(*graph, *mm, "dst").dtype(), proto::FLOAT32);
    EXPECT_EQ(OperandTensor(*graph, *mm, "stationary").dtype(),
              proto::BFLOAT16);
    EXPECT_EQ(OperandTensor(*graph, *mm, "moving").dtype(), proto::BFLOAT16);
  }
  EXPECT_EQ(fresh, 4);
}

TEST(TiledMatmulTest, EvacuationFusesBiasAndActivationFromPsumToSbuf) {
  for (const auto& [activation, func] :
       std::vector<std::pair<std::string, std::string>>{
           {"none", "copy"},
           {"relu", "relu"},
           {"silu", "silu"},
           {"gelu_tanh", "gelu_apprx_tanh"}}) {
    absl::StatusOr<proto::Graph> graph = TraceTiledMatmul(
        {{"m", "130"}, {"k", "70"}, {"n", "300"}, {"activation", activation}});
    ASSERT_TRUE(graph.ok()) << graph.status();
    const auto acts = InstructionsOf(*graph, proto::ACTIVATION);
    ASSERT_EQ(acts.size(), 3u);  // n tiles 128, 128, 44; one m tile
    for (const proto::Instruction* act : acts) {
      EXPECT_EQ(StrAttr(*act, "func"), func);
      EXPECT_EQ(OperandTensor(*graph, *act, "dst").space(), proto::SBUF);
      EXPECT_EQ(OperandTensor(*graph, *act, "data").space(), proto::PSUM);
      ASSERT_NE(OperandOf(*act, "bias").tensor_id(), 0u)
          << "bias column missing";
      const proto::Tensor& bias = OperandTensor(*graph, *act, "bias");
      EXPECT_EQ(bias.space(), proto::SBUF);
      EXPECT_EQ(bias.dtype(), proto::FLOAT32);
      EXPECT_EQ(bias.shape(1), 1);
    }
  }
}

TEST(TiledMatmulTest, WithoutBiasThereIsNoBiasInputOrOperand) {
  absl::StatusOr<proto::Graph> graph =
      TraceTiledMatmul({{"bias", "0"}, {"m", "64"}, {"k", "64"}, {"n", "64"}});
  ASSERT_TRUE(graph.ok()) << graph.status();
  for (const proto::Tensor& t : graph->tensors()) {
    EXPECT_NE(t.name(), "bias");
  }
  for (const proto::Instruction* act :
       InstructionsOf(*graph, proto::ACTIVATION)) {
    EXPECT_EQ(OperandOf(*act, "bias").tensor_id(), 0u);
  }
}

TEST(TiledMatmulTest, InterfaceMatchesTheContract) {
  absl::StatusOr<proto::Graph> graph = TraceTiledMatmul(
      {{"m", "5"}, {"k", "6"}, {"n", "7"}, {"dtype", "float32"}});
  ASSERT_TRUE(graph.ok()) << graph.status();
  std::map<std::string, const proto::Tensor*> io;
  for (const proto::Tensor& t : graph->tensors()) {
    if (t.role() != proto::ROLE_INTERNAL) io[t.name()] = &t;
  }
  ASSERT_EQ(io.size(), 4u);
  EXPECT_THAT(io.at("lhs")->shape(), ElementsAre(5, 6));
  EXPECT_EQ(io.at("lhs")->role(), proto::ROLE_INPUT);
  EXPECT_EQ(io.at("lhs")->dtype(), proto::FLOAT32);
  EXPECT_THAT(io.at("rhs")->shape(), ElementsAre(6, 7));
  EXPECT_THAT(io.at("bias")->shape(), ElementsAre(7));
  EXPECT_EQ(io.at("bias")->dtype(), proto::FLOAT32);
  EXPECT_THAT(io.at("out")->shape(), ElementsAre(5, 7));
  EXPECT_EQ(io.at("out")->role(), proto::ROLE_OUTPUT);
  EXPECT_EQ(io.at("out")->dtype(), proto::FLOAT32);
  EXPECT_EQ(graph->world().num_cores(), 1u);
  EXPECT_EQ(graph->world().num_ranks(), 1u);
}

TEST(TiledMatmulTest, NoDmaTouchesPsum) {
  absl::StatusOr<proto::Graph> graph =
      TraceTiledMatmul({{"m", "600"}, {"k", "300"}, {"n", "200"}});
  ASSERT_TRUE(graph.ok()) << graph.status();
  const auto dmas = InstructionsOf(*graph, proto::DMA_COPY);
  // Per m tile (2) one transposed lhs load per k tile (3); per output tile
  // (4) one bias load and one store; per matmul (12) one rhs load.
  EXPECT_EQ(dmas.size(), 2u * 3u + 4u + 4u + 12u);
  for (const proto::Instruction* dma : dmas) {
    EXPECT_NE(OperandTensor(*graph, *dma, "dst").space(), proto::PSUM);
    EXPECT_NE(OperandTensor(*graph, *dma, "src").space(), proto::PSUM);
  }
}

TEST(TiledMatmulTest, TracingTwiceGivesIdenticalBytes) {
  const Settings settings = {
      {"m", "600"}, {"k", "300"}, {"n", "200"}, {"activation", "gelu_tanh"}};
  absl::StatusOr<proto::Graph> a = TraceTiledMatmul(settings);
  absl::StatusOr<proto::Graph> b = TraceTiledMatmul(settings);
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_EQ(SerializeDeterministic(*a), SerializeDeterministic(*b));
  // Spelling a value differently does not change the graph.
  absl::StatusOr<proto::Graph> c =
      TraceTiledMatmul({{"activation", "gelu_tanh"},
                        {"n", "0200"},
                        {"m", "600"},
                        {"k", "+300"}});
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(SerializeDeterministic(*a), SerializeDeterministic(*c));
}

TEST(TiledMatmulTest, InvalidSizesAreRefusedNamingTheParameter) {
  for (const auto& [name, value] :
       Settings{{"m", "0"}, {"k", "-1"}, {"n", "65537"}, {"bias", "2"}}) {
    absl::StatusOr<proto::Graph> graph = TraceTiledMatmul({{name, value}});
    ASSERT_FALSE(graph.ok()) << name;
    EXPECT_THAT(graph.status().message(),
                HasSubstr(absl::StrCat("parameter '", name, "' is ", value)));
  }
  absl::StatusOr<proto::Graph> huge =
      TraceTiledMatmul({{"m", "65536"}, {"k", "65536"}, {"n", "65536"}});
  ASSERT_FALSE(huge.ok());
  EXPECT_THAT(huge.status().message(), HasSubstr("matmul tiles"));
}

TEST(TiledMatmulTest, ToleranceDependsOnDtype) {
  const KernelDef* def = KernelRegistry::Global().Find("tiled_matmul");
  ASSERT_NE(def, nullptr);
  absl::StatusOr<ParamValues> fp32 =
      KernelRegistry::Global().ParseParams(*def, {{"dtype", "float32"}});
  absl::StatusOr<ParamValues> bf16 =
      KernelRegistry::Global().ParseParams(*def, {});
  ASSERT_TRUE(fp32.ok() && bf16.ok());
  EXPECT_DOUBLE_EQ(def->tolerance(*fp32), 1e-4);
  EXPECT_DOUBLE_EQ(def->tolerance(*bf16), 2e-2);
}

HostArray Floats(const std::string& name, std::vector<int64_t> shape,
                 std::vector<float> values) {
  HostArray a;
  a.name = name;
  a.shape = std::move(shape);
  a.f32 = std::move(values);
  return a;
}

TEST(TiledMatmulReferenceTest, MatchesHandComputedValues) {
  TiledMatmulParams params;
  params.m = 2;
  params.k = 2;
  params.n = 2;
  params.dtype = proto::FLOAT32;
  // lhs @ rhs = [[1, 2], [3, 4]] @ [[1, -1], [0, 1]] = [[1, 1], [3, 1]]
  const std::vector<HostArray> inputs = {Floats("lhs", {2, 2}, {1, 2, 3, 4}),
                                         Floats("rhs", {2, 2}, {1, -1, 0, 1}),
                                         Floats("bias", {2}, {0.5f, -2.0f})};
  struct Case {
    Activation activation;
    std::vector<float> expected;
  };
  const double x = 1.5;  // out[0][0] = 1 + 0.5
  const double gelu = 0.5 * x *
                      (1 + std::tanh(std::sqrt(2 / std::numbers::pi) *
                                     (x + 0.044715 * x * x * x)));
  for (const Case& c : std::vector<Case>{
           {Activation::kNone, {1.5f, -1.0f, 3.5f, -1.0f}},
           {Activation::kRelu, {1.5f, 0.0f, 3.5f, 0.0f}},
           {Activation::kSilu,
            {static_cast<float>(1.5 / (1 + std::exp(-1.5))),
             static_cast<float>(-1.0 / (1 + std::exp(1.0))),
             static_cast<float>(3.5 / (1 + std::exp(-3.5))),
             static_cast<float>(-1.0 / (1 + std::exp(1.0)))}},
       }) {
    params.activation = c.activation;
    absl::StatusOr<std::vector<HostArray>> out =
        TiledMatmulReference(params, inputs);
    ASSERT_TRUE(out.ok()) << out.status();
    ASSERT_EQ(out->size(), 1u);
    EXPECT_EQ((*out)[0].name, "out");
    EXPECT_THAT((*out)[0].shape, ElementsAre(2, 2));
    EXPECT_THAT((*out)[0].f32, ElementsAre(c.expected[0], c.expected[1],
                                           c.expected[2], c.expected[3]));
  }
  params.activation = Activation::kGeluTanh;
  absl::StatusOr<std::vector<HostArray>> out =
      TiledMatmulReference(params, inputs);
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_FLOAT_EQ((*out)[0].f32[0], static_cast<float>(gelu));
}

TEST(TiledMatmulReferenceTest, MissingOrMisshapenInputsAreErrors) {
  TiledMatmulParams params;
  params.m = 2;
  params.k = 3;
  params.n = 2;
  absl::StatusOr<std::vector<HostArray>> out = TiledMatmulReference(
      params, {Floats("lhs", {2, 3}, std::vector<float>(6, 1.0f)),
               Floats("rhs", {3, 2}, std::vector<float>(6, 1.0f))});
  ASSERT_FALSE(out.ok());
  EXPECT_THAT(out.status().message(), HasSubstr("'bias'"));
  out = TiledMatmulReference(
      params, {Floats("lhs", {3, 2}, std::vector<float>(6, 1.0f)),
               Floats("rhs", {3, 2}, std::vector<float>(6, 1.0f)),
               Floats("bias", {2}, {0, 0})});
  ASSERT_FALSE(out.ok());
  EXPECT_THAT(out.status().message(), HasSubstr("'lhs'"));
}

// The traced graph, run by the interpreter, agrees with the reference
// within the kernel's tolerance, for both dtypes, with tails on every dim.
TEST(TiledMatmulTest, InterpretedGraphMatchesReference) {
  const KernelRegistry& registry = KernelRegistry::Global();
  const KernelDef* def = registry.Find("tiled_matmul");
  ASSERT_NE(def, nullptr);
  for (const Settings& settings : {Settings{{"m", "520"},
                                            {"k", "130"},
                                            {"n", "140"},
                                            {"activation", "silu"},
                                            {"dtype", "float32"}},
                                   Settings{{"m", "100"},
                                            {"k", "200"},
                                            {"n", "129"},
                                            {"activation", "gelu_tanh"}},
                                   Settings{{"m", "33"},
                                            {"k", "17"},
                                            {"n", "5"},
                                            {"bias", "0"},
                                            {"activation", "relu"},
                                            {"dtype", "float32"}}}) {
    absl::StatusOr<ParamValues> values = registry.ParseParams(*def, settings);
    ASSERT_TRUE(values.ok()) << values.status();
    absl::StatusOr<proto::Graph> graph =
        registry.Trace("tiled_matmul", settings);
    ASSERT_TRUE(graph.ok()) << graph.status();
    const proto::DType dtype =
        values->Str("dtype") == "float32" ? proto::FLOAT32 : proto::BFLOAT16;
    const int64_t m = values->Int("m"), k = values->Int("k"),
                  n = values->Int("n");

    std::mt19937 rng(1234);
    std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
    auto random = [&](const std::string& name, std::vector<int64_t> shape,
                      proto::DType round_to) {
      HostArray a = Floats(name, shape, {});
      a.f32.resize(a.num_elements());
      for (float& v : a.f32) v = RoundTo(round_to, dist(rng), 240.0f);
      return a;
    };
    std::vector<HostArray> inputs = {random("lhs", {m, k}, dtype),
                                     random("rhs", {k, n}, dtype)};
    if (values->Int("bias") == 1) {
      inputs.push_back(random("bias", {n}, proto::FLOAT32));
    }

    absl::StatusOr<std::unique_ptr<interp::Interpreter>> interp =
        interp::Interpreter::Create(*graph);
    ASSERT_TRUE(interp.ok()) << interp.status();
    for (const HostArray& input : inputs) {
      absl::Status status = (*interp)->SetInput(input);
      ASSERT_TRUE(status.ok()) << status;
    }
    absl::Status run = (*interp)->Run();
    ASSERT_TRUE(run.ok()) << run;
    absl::StatusOr<HostArray> got = (*interp)->GetOutput("out");
    ASSERT_TRUE(got.ok()) << got.status();

    absl::StatusOr<std::vector<HostArray>> want =
        def->reference(*values, inputs);
    ASSERT_TRUE(want.ok()) << want.status();
    absl::StatusOr<OutputComparison> c = CompareOutput(
        *got, (*want)[0], def->comparison, def->tolerance(*values));
    ASSERT_TRUE(c.ok()) << c.status();
    EXPECT_EQ(c->failures, 0) << "m=" << m << " k=" << k << " n=" << n;
  }
}

}  // namespace
}  // namespace nkigraph::kernels
