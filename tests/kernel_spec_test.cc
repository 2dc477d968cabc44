// Typed kernel definitions (kernels/kernel_spec.h): one parameter table and
// one I/O table, read by the registry's parser, `list`, tracing and the host
// side. A toy kernel with a float parameter, as the decode kernels have.
#include "kernels/kernel_spec.h"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "kernels/dsl.h"
#include "kernels/registry.h"
#include "proto/nkigraph.pb.h"
#include "util/graph_io.h"

namespace nkigraph::kernels {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::Pair;

enum class Mode { kPlain, kFancy };

struct ScaleParams {
  int64_t rows = 4;
  int64_t cols = 8;
  double rmsnorm_eps = 1e-6;
  Mode mode = Mode::kPlain;
  bool bias = false;
  std::optional<int64_t> ignore_index;
  proto::DType dtype = proto::BFLOAT16;
};

using P = ScaleParams;

// Copies x into out (and declares bias, an index and a mask when asked):
// the body is only here to exercise the I/O table.
void CopyBody(KernelIo& io, const P&) {
  const Tensor x = io.Input("x");
  io.Input("bias");
  io.Input("index");
  io.Input("mask");
  const Tensor out = io.Output("out");
  Tensor tile = builder::ndarray(x.shape(), x.dtype(), Buffer::kSbuf, "tile");
  isa::dma_copy(tile, x);
  isa::dma_copy(out, tile);
}

KernelSpec<P> ScaleSpec() {
  return KernelSpec<P>{
      .name = "scale",
      .summary = "copies x",
      .params =
          {
              IntField<P>("rows", &P::rows, {1, 128}, "rows of x"),
              IntField<P>("cols", &P::cols, {1, 512}, "columns of x")
                  .Required(),
              FloatField<P>("rmsnorm_eps", &P::rmsnorm_eps, {1e-12, 0.5},
                            "epsilon of the norm"),
              ChoiceField<P>("mode", &P::mode,
                             {{"plain", Mode::kPlain}, {"fancy", Mode::kFancy}},
                             "how"),
              FlagField<P>("bias", &P::bias, "1: a bias input"),
              OptionalIntField<P>("ignore_index", &P::ignore_index, {-10, 10},
                                  "optional"),
              DTypeField<P>(),
          },
      .validate =
          [](const P& p) {
            return p.mode == Mode::kFancy && p.rows == 1
                       ? absl::InvalidArgumentError(
                             "parameter 'rows' is 1; fancy needs more")
                       : absl::OkStatus();
          },
      .io =
          {
              InputRow<P>("x", "[rows, cols]",
                          [](const P& p) {
                            return Shape{p.rows, p.cols};
                          }),
              InputRow<P>("bias", "[cols]",
                          [](const P& p) { return Shape{p.cols}; })
                  .Float32()
                  .When("bias=1", &P::bias),
              InputRow<P>("index", "[rows]",
                          [](const P& p) { return Shape{p.rows}; })
                  .Int32()
                  .Values("[-1, cols)",
                          [](const P& p) {
                            return ValueRange{-1, p.cols - 1};
                          })
                  .Note("-1: none"),
              InputRow<P>("mask", "[rows]",
                          [](const P& p) { return Shape{p.rows}; })
                  .Values("{0, 1}",
                          [](const P&) {
                            return ValueRange{0, 1};
                          })
                  .Replicated(),
              OutputRow<P>("out", "[rows, cols]",
                           [](const P& p) {
                             return Shape{p.rows, p.cols};
                           }),
          },
      .body = CopyBody,
      .tolerance = ToleranceByDType(1e-4, 2e-2),
  };
}

class KernelSpecTest : public ::testing::Test {
 protected:
  KernelSpecTest() { registry_.Register(ScaleSpec()); }
  const KernelDef& def() const { return *registry_.Find("scale"); }
  absl::StatusOr<ParamValues> Parse(const Settings& settings) const {
    return registry_.ParseParams(def(), settings);
  }
  KernelRegistry registry_;
};

TEST_F(KernelSpecTest, FloatParameterParsesIntoTheStruct) {
  absl::StatusOr<ParamValues> values =
      Parse({{"cols", "16"}, {"rmsnorm_eps", "1e-5"}});
  ASSERT_TRUE(values.ok()) << values.status();
  absl::StatusOr<const P*> p = values->Typed<P>();
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_DOUBLE_EQ((*p)->rmsnorm_eps, 1e-5);
  EXPECT_EQ((*p)->cols, 16);
  EXPECT_EQ((*p)->rows, 4);  // the struct's default
  EXPECT_EQ((*p)->dtype, proto::BFLOAT16);
  EXPECT_FALSE((*p)->ignore_index.has_value());
  // Another struct type is not what these values hold.
  EXPECT_FALSE(values->Typed<int>().ok());
}

TEST_F(KernelSpecTest, FloatParameterIsRecordedCanonicallyInTheGraph) {
  absl::StatusOr<proto::Graph> a =
      registry_.Trace("scale", {{"cols", "16"}, {"rmsnorm_eps", "1e-6"}});
  ASSERT_TRUE(a.ok()) << a.status();
  std::vector<std::pair<std::string, std::string>> params;
  for (const proto::Param& p : a->params()) {
    params.emplace_back(p.name(), p.value());
  }
  EXPECT_THAT(params,
              ElementsAre(Pair("rows", "4"), Pair("cols", "16"),
                          Pair("rmsnorm_eps", "1e-06"), Pair("mode", "plain"),
                          Pair("bias", "0"), Pair("dtype", "bfloat16")));
  // Another spelling of the same number traces the same graph.
  absl::StatusOr<proto::Graph> b =
      registry_.Trace("scale", {{"rmsnorm_eps", "0.000001"}, {"cols", "16"}});
  ASSERT_TRUE(b.ok()) << b.status();
  EXPECT_EQ(SerializeDeterministic(*a), SerializeDeterministic(*b));
}

TEST_F(KernelSpecTest, FloatParameterOutsideItsLimitsIsRefusedNamingThem) {
  absl::StatusOr<ParamValues> values =
      Parse({{"cols", "16"}, {"rmsnorm_eps", "0.75"}});
  ASSERT_FALSE(values.ok());
  EXPECT_EQ(values.status().message(),
            "parameter 'rmsnorm_eps' is 0.75; it must be between 1e-12 and "
            "0.5");
  values = Parse({{"cols", "16"}, {"rmsnorm_eps", "tiny"}});
  ASSERT_FALSE(values.ok());
  EXPECT_EQ(values.status().message(),
            "parameter 'rmsnorm_eps': 'tiny' is not a finite number");
}

TEST_F(KernelSpecTest, ListRowsComeFromTheTables) {
  ASSERT_EQ(def().params.size(), 7u);
  const ParamSpec& eps = def().params[2];
  EXPECT_EQ(eps.name, "rmsnorm_eps");
  EXPECT_EQ(eps.type, ParamType::kFloat);
  EXPECT_EQ(eps.default_value, "1e-06");
  EXPECT_EQ(def().params[1].required, true);
  EXPECT_EQ(def().params[1].default_value, "");
  EXPECT_EQ(def().params[3].default_value, "plain");
  EXPECT_THAT(def().params[3].choices, ElementsAre("plain", "fancy"));
  EXPECT_EQ(def().params[4].type, ParamType::kInt);  // a flag reads 0 or 1
  EXPECT_EQ(def().params[4].default_value, "0");
  EXPECT_EQ(def().params[5].default_value, "");  // optional: unset
  EXPECT_FALSE(def().params[5].required);
  EXPECT_THAT(def().params[6].choices, ElementsAre("float32", "bfloat16"));
  ASSERT_EQ(def().inputs.size(), 4u);
  EXPECT_EQ(def().inputs[0].shape, "[rows, cols]");
  EXPECT_EQ(def().inputs[0].dtype, "dtype");
  EXPECT_EQ(def().inputs[1].dtype, "float32 (only when bias=1)");
  EXPECT_EQ(def().inputs[2].dtype, "int32 in [-1, cols) (-1: none)");
  EXPECT_EQ(def().inputs[3].shape, "[rows] replicated");
  ASSERT_EQ(def().outputs.size(), 1u);
  EXPECT_EQ(def().outputs[0].name, "out");
}

TEST_F(KernelSpecTest, ValidationRunsFieldLimitsThenTheKernelsOwnCheck) {
  absl::StatusOr<ParamValues> values = Parse({{"cols", "16"}, {"rows", "0"}});
  ASSERT_FALSE(values.ok());
  EXPECT_EQ(values.status().message(),
            "parameter 'rows' is 0; it must be between 1 and 128");
  values = Parse({{"cols", "16"}, {"rows", "1"}, {"mode", "fancy"}});
  ASSERT_FALSE(values.ok());
  EXPECT_THAT(values.status().message(), HasSubstr("fancy needs more"));
  values = Parse({{"cols", "16"}, {"bias", "2"}});
  ASSERT_FALSE(values.ok());
  EXPECT_EQ(values.status().message(),
            "parameter 'bias' is 2; it must be between 0 and 1");
  values = Parse({{"cols", "16"}, {"ignore_index", "11"}});
  ASSERT_FALSE(values.ok());
  EXPECT_THAT(values.status().message(),
              HasSubstr("parameter 'ignore_index' is 11"));
}

TEST_F(KernelSpecTest, TracingDeclaresTheTablesTensors) {
  absl::StatusOr<proto::Graph> graph = registry_.Trace(
      "scale", {{"cols", "16"}, {"bias", "1"}, {"dtype", "float32"}});
  ASSERT_TRUE(graph.ok()) << graph.status();
  std::map<std::string, const proto::Tensor*> io;
  for (const proto::Tensor& t : graph->tensors()) {
    if (t.role() != proto::ROLE_INTERNAL) io[t.name()] = &t;
  }
  ASSERT_EQ(io.size(), 5u);
  EXPECT_THAT(io.at("x")->shape(), ElementsAre(4, 16));
  EXPECT_EQ(io.at("x")->dtype(), proto::FLOAT32);
  EXPECT_EQ(io.at("bias")->dtype(), proto::FLOAT32);
  EXPECT_EQ(io.at("index")->dtype(), proto::INT32);
  EXPECT_FALSE(io.at("mask")->per_rank());
  EXPECT_TRUE(io.at("x")->per_rank());
  EXPECT_EQ(io.at("out")->role(), proto::ROLE_OUTPUT);
  EXPECT_THAT(io.at("out")->shape(), ElementsAre(4, 16));
  // Without bias=1 there is no bias tensor.
  graph = registry_.Trace("scale", {{"cols", "16"}});
  ASSERT_TRUE(graph.ok()) << graph.status();
  for (const proto::Tensor& t : graph->tensors()) EXPECT_NE(t.name(), "bias");
}

absl::StatusOr<proto::Graph> TraceWithBody(const KernelSpec<P>::Body& body) {
  P p;
  p.cols = 16;
  return ScaleSpec().Trace(p, body);
}

TEST(KernelIoTest, AnOutputNeverProducedIsAnError) {
  absl::StatusOr<proto::Graph> graph =
      TraceWithBody([](KernelIo& io, const P&) {
        io.Input("x");
        io.Input("bias");
        io.Input("index");
        io.Input("mask");
      });
  ASSERT_FALSE(graph.ok());
  EXPECT_THAT(graph.status().message(),
              HasSubstr("kernel 'scale': output 'out' of its I/O table was "
                        "never produced"));
}

TEST(KernelIoTest, AnInputNeverDeclaredIsAnError) {
  absl::StatusOr<proto::Graph> graph =
      TraceWithBody([](KernelIo& io, const P&) {
        io.Input("x");
        io.Output("out");
      });
  ASSERT_FALSE(graph.ok());
  EXPECT_THAT(graph.status().message(),
              HasSubstr("input 'index' of its I/O table was never declared"));
}

TEST(KernelIoTest, ANameTheTableLacksOrARoleMismatchIsAnError) {
  absl::StatusOr<proto::Graph> graph =
      TraceWithBody([](KernelIo& io, const P&) { io.Output("result"); });
  ASSERT_FALSE(graph.ok());
  EXPECT_THAT(graph.status().message(),
              HasSubstr("kernel 'scale' has no output 'result' in its I/O "
                        "table"));
  graph = TraceWithBody([](KernelIo& io, const P&) { io.Output("x"); });
  ASSERT_FALSE(graph.ok());
  EXPECT_THAT(graph.status().message(),
              HasSubstr("'x' is an input in its I/O table, not an output"));
  graph = TraceWithBody([](KernelIo& io, const P&) {
    io.Input("x");
    io.Input("x");
  });
  ASSERT_FALSE(graph.ok());
  EXPECT_THAT(graph.status().message(),
              HasSubstr("input 'x' is declared twice"));
}

TEST(KernelIoTest, PublishingATensorOfAnotherShapeIsAnError) {
  absl::StatusOr<proto::Graph> graph =
      TraceWithBody([](KernelIo& io, const P&) {
        const Tensor x = io.Input("x");
        io.Input("bias");
        io.Input("index");
        const Tensor mask = io.Input("mask");
        io.Output("out", mask);
        (void)x;
      });
  ASSERT_FALSE(graph.ok());
  EXPECT_THAT(graph.status().message(),
              HasSubstr("output 'out' is bfloat16 [4]; its I/O table says "
                        "bfloat16 [4, 16]"));
}

TEST(HostIoTest, BindsInputsByTheTableAndMakesOutputs) {
  P p;
  p.cols = 3;
  p.rows = 2;
  absl::StatusOr<HostIo> io = ScaleSpec().Host(p);
  ASSERT_TRUE(io.ok()) << io.status();
  HostArray x = io->Zeros("x");
  EXPECT_THAT(x.shape, ElementsAre(2, 3));
  EXPECT_EQ(x.dtype, proto::FLOAT32);
  EXPECT_EQ(io->Zeros("index").dtype, proto::INT32);
  HostArray index = io->Zeros("index");
  HostArray mask = io->Zeros("mask");
  std::vector<HostArray> inputs = {x, index, mask};
  absl::StatusOr<HostIo> bound = ScaleSpec().Host(p, inputs);
  ASSERT_TRUE(bound.ok()) << bound.status();
  EXPECT_EQ(&bound->In("x"), &inputs[0]);
  EXPECT_EQ(bound->Optional("index"), &inputs[1]);
  // Absent for these parameters: no array, no error.
  EXPECT_EQ(bound->Optional("bias"), nullptr);
  EXPECT_TRUE(bound->In("bias").f32.empty());
  inputs[0].shape = {3, 2};
  bound = ScaleSpec().Host(p, inputs);
  ASSERT_FALSE(bound.ok());
  EXPECT_THAT(bound.status().message(), HasSubstr("expected [2, 3]"));
  bound = ScaleSpec().Host(p, {x, mask});
  ASSERT_FALSE(bound.ok());
  EXPECT_THAT(bound.status().message(), HasSubstr("missing input 'index'"));
  p.rows = 0;
  EXPECT_FALSE(ScaleSpec().Host(p).ok());  // validated first
}

TEST(KernelSpecSettingsTest, SettingsOfAStructAreItsCanonicalText) {
  P p;
  p.cols = 16;
  p.ignore_index = -3;
  p.rmsnorm_eps = 0.25;
  p.mode = Mode::kFancy;
  EXPECT_THAT(ScaleSpec().SettingsOf(p),
              ElementsAre(Pair("rows", "4"), Pair("cols", "16"),
                          Pair("rmsnorm_eps", "0.25"), Pair("mode", "fancy"),
                          Pair("bias", "0"), Pair("ignore_index", "-3"),
                          Pair("dtype", "bfloat16")));
}

}  // namespace
}  // namespace nkigraph::kernels
