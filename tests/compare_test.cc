// Comparing outputs with references (kernels/compare.h): the element-wise
// and the scale-relative measure, and which one each kernel declares.
#include "kernels/compare.h"

#include <cmath>
#include <cstdint>
#include <limits>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "kernels/registry.h"
#include "proto/nkigraph.pb.h"
#include "tests/test_util.h"
#include "util/dtype.h"
#include "util/host_array.h"

namespace nkigraph::kernels {
namespace {

using ::testing::HasSubstr;
using Settings = std::vector<std::pair<std::string, std::string>>;

// The bf16 tolerance of the MoE kernels.
constexpr double kBf16Tol = 3e-2;

OutputComparison CompareOk(const HostArray& got, const HostArray& want,
                           Comparison comparison, double tol) {
  absl::StatusOr<OutputComparison> c =
      CompareOutput(got, want, comparison, tol);
  EXPECT_TRUE(c.ok()) << c.status();
  return c.ok() ? *c : OutputComparison{.failures = -1};
}

// Entries of a weight gradient, each a sum over tokens of products of
// magnitude ~100: want in double, got with every product rounded to bf16
// as a device's bf16 operands make it. Where the sum cancels to almost
// nothing, the rounding of the terms (~0.2 each) dwarfs the sum.
void CancellingSums(HostArray* got, HostArray* want) {
  const std::vector<std::vector<double>> terms = {
      {97.3, 101.9, 88.8},         // no cancellation: ~288
      {120.7, -119.9, 0.25},       // cancels to ~1.05
      {-64.3, 63.9, 55.1, -54.9},  // cancels to ~-0.2
      {-150.2, -33.3}};            // ~-183.5
  *want = testing::Floats("weight_grad", {4}, {});
  *got = testing::Floats("weight_grad", {4}, {});
  for (const std::vector<double>& t : terms) {
    double exact = 0.0, rounded = 0.0;
    for (double v : t) {
      exact += v;
      rounded += RoundTo(proto::BFLOAT16, static_cast<float>(v), 240.0f);
    }
    want->f32.push_back(static_cast<float>(exact));
    got->f32.push_back(static_cast<float>(rounded));
  }
}

TEST(CompareOutputTest, ScaleAcceptsCancellingSumsTheElementwiseMeasureFails) {
  HostArray got, want;
  CancellingSums(&got, &want);
  // The element-wise measure (what verify applied to every kernel) calls
  // the correctly rounded result wrong: the cancelled entries are off by
  // far more than 3% of 1 + their magnitude.
  const OutputComparison elementwise =
      CompareOk(got, want, Comparison::kElementwise, kBf16Tol);
  EXPECT_FALSE(elementwise.ok());
  EXPECT_GT(elementwise.error, kBf16Tol);
  // Against the output's scale (~288) every entry is within 1%.
  const OutputComparison scale =
      CompareOk(got, want, Comparison::kScale, kBf16Tol);
  EXPECT_TRUE(scale.ok()) << scale.failures << " failures, error "
                          << scale.error;
  EXPECT_NEAR(scale.scale, 288.0, 0.01);
  EXPECT_LT(scale.error, 0.01);
  EXPECT_DOUBLE_EQ(scale.max_abs_error, elementwise.max_abs_error);
}

TEST(CompareOutputTest, ScaleFailsAWrongResult) {
  HostArray got, want;
  CancellingSums(&got, &want);
  // A dropped term (one token's contribution missing): off by ~55, 19% of
  // the scale.
  HostArray dropped = got;
  dropped.f32[2] -= 55.0f;
  OutputComparison c = CompareOk(dropped, want, Comparison::kScale, kBf16Tol);
  EXPECT_FALSE(c.ok());
  EXPECT_EQ(c.failures, 1);
  EXPECT_EQ(c.first_failure, 2);
  EXPECT_FLOAT_EQ(c.first_got, dropped.f32[2]);
  EXPECT_FLOAT_EQ(c.first_want, want.f32[2]);
  EXPECT_GT(c.error, 0.15);

  // A sign error on the largest entry.
  HostArray negated = got;
  negated.f32[0] = -negated.f32[0];
  EXPECT_FALSE(CompareOk(negated, want, Comparison::kScale, kBf16Tol).ok());

  // Entries in the wrong places (a transposed or misindexed write).
  HostArray shuffled = got;
  std::swap(shuffled.f32[0], shuffled.f32[3]);
  c = CompareOk(shuffled, want, Comparison::kScale, kBf16Tol);
  EXPECT_EQ(c.failures, 2);

  // An error just above the tolerance of the scale fails; just below
  // passes.
  HostArray edge = want;
  edge.f32[1] += static_cast<float>(kBf16Tol * 1.01 * 288.0);
  EXPECT_FALSE(CompareOk(edge, want, Comparison::kScale, kBf16Tol).ok());
  edge = want;
  edge.f32[1] += static_cast<float>(kBf16Tol * 0.99 * 288.0);
  EXPECT_TRUE(CompareOk(edge, want, Comparison::kScale, kBf16Tol).ok());
}

TEST(CompareOutputTest, NansInfinitiesAndZeroReferences) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const float inf = std::numeric_limits<float>::infinity();
  const HostArray want = testing::Floats("x", {3}, {nan, inf, 2.0f});
  for (Comparison comparison : {Comparison::kElementwise, Comparison::kScale}) {
    SCOPED_TRACE(ComparisonName(comparison));
    // NaN matches NaN, an infinity the same infinity; the infinity does not
    // make the scale infinite.
    OutputComparison c = CompareOk(want, want, comparison, 1e-4);
    EXPECT_TRUE(c.ok());
    EXPECT_EQ(c.scale, 2.0);
    // A NaN where a number belongs fails and poisons the error.
    c = CompareOk(testing::Floats("x", {3}, {nan, inf, nan}), want, comparison,
                  1e-4);
    EXPECT_EQ(c.failures, 1);
    EXPECT_TRUE(std::isnan(c.error));
    // The wrong infinity fails.
    EXPECT_FALSE(CompareOk(testing::Floats("x", {3}, {nan, -inf, 2.0f}), want,
                           comparison, 1e-4)
                     .ok());
  }
  // Against an all-zero reference the scale measure admits no error.
  const HostArray zeros = testing::Floats("z", {2}, {0.0f, 0.0f});
  EXPECT_TRUE(CompareOk(zeros, zeros, Comparison::kScale, 3e-2).ok());
  const OutputComparison c = CompareOk(testing::Floats("z", {2}, {0.0f, 1e-9f}),
                                       zeros, Comparison::kScale, 3e-2);
  EXPECT_EQ(c.failures, 1);
  EXPECT_TRUE(std::isinf(c.error));
}

TEST(CompareOutputTest, MismatchedShapesAreErrors) {
  const HostArray want = testing::Floats("x", {2, 2}, {1, 2, 3, 4});
  absl::StatusOr<OutputComparison> c = CompareOutput(
      testing::Floats("x", {4}, {1, 2, 3, 4}), want, Comparison::kScale, 1e-4);
  ASSERT_FALSE(c.ok());
  EXPECT_THAT(c.status().message(), HasSubstr("[2, 2]"));
  c = CompareOutput(testing::Floats("x", {2, 2}, {1, 2, 3}), want,
                    Comparison::kElementwise, 1e-4);
  EXPECT_FALSE(c.ok());
  // Integer outputs compare as numbers.
  const HostArray ints = testing::Ints("i", {2}, {3, -7});
  EXPECT_TRUE(CompareOk(ints, ints, Comparison::kScale, 0.0).ok());
  EXPECT_FALSE(CompareOk(testing::Ints("i", {2}, {3, -6}), ints,
                         Comparison::kElementwise, 0.0)
                   .ok());
}

TEST(CompareOutputTest, KernelsDeclareTheirComparison) {
  const KernelRegistry& registry = KernelRegistry::Global();
  const std::map<std::string, Comparison> by_scale = {
      {"bwmm_shard_on_H", Comparison::kScale},
      {"blockwise_mm_bwd", Comparison::kScale},
      {"cross_entropy_backward", Comparison::kScale}};
  for (const auto& [name, comparison] : by_scale) {
    const KernelDef* def = registry.Find(name);
    ASSERT_NE(def, nullptr) << name;
    EXPECT_EQ(def->comparison, comparison) << name;
  }
  for (const char* name : {"tiled_matmul", "conv1d", "cross_entropy_forward"}) {
    const KernelDef* def = registry.Find(name);
    ASSERT_NE(def, nullptr) << name;
    EXPECT_EQ(def->comparison, Comparison::kElementwise) << name;
  }
  EXPECT_EQ(ComparisonMeasure(Comparison::kElementwise), "|err|/(1+|want|)");
  EXPECT_EQ(ComparisonMeasure(Comparison::kScale), "|err|/max|want|");
}

// The case the scale measure exists for: bf16 blockwise_mm_bwd, run as
// `nkigraph verify` runs it, is within its tolerance of each output's
// scale, while the small entries of its weight gradients (sums of large,
// cancelling per-token terms) fail the element-wise measure.
TEST(CompareOutputTest, Bf16MoeBackwardPassesByScaleNotElementwise) {
  const KernelRegistry& registry = KernelRegistry::Global();
  const KernelDef* def = registry.Find("blockwise_mm_bwd");
  ASSERT_NE(def, nullptr);
  const Settings settings = {{"num_tokens", "512"},   {"hidden", "1024"},
                             {"intermediate", "256"}, {"block_size", "512"},
                             {"num_blocks", "4"},     {"dtype", "bfloat16"}};
  absl::StatusOr<ParamValues> values = registry.ParseParams(*def, settings);
  ASSERT_TRUE(values.ok()) << values.status();
  absl::StatusOr<proto::Graph> graph = registry.Trace(def->name, settings);
  ASSERT_TRUE(graph.ok()) << graph.status();
  absl::StatusOr<std::vector<HostArray>> inputs = def->make_inputs(*values, 1);
  ASSERT_TRUE(inputs.ok()) << inputs.status();
  absl::StatusOr<std::map<std::string, HostArray>> got =
      testing::RunGraph(*graph, *inputs);
  ASSERT_TRUE(got.ok()) << got.status();
  absl::StatusOr<std::vector<HostArray>> want =
      def->reference(*values, *inputs);
  ASSERT_TRUE(want.ok()) << want.status();
  const double tol = def->tolerance(*values);
  EXPECT_EQ(tol, kBf16Tol);
  int64_t elementwise_failures = 0;
  for (const HostArray& w : *want) {
    SCOPED_TRACE(w.name);
    ASSERT_EQ(got->count(w.name), 1u);
    const HostArray& g = got->at(w.name);
    const OutputComparison scale = CompareOk(g, w, Comparison::kScale, tol);
    EXPECT_TRUE(scale.ok()) << scale.failures << " failures, max "
                            << scale.error << " of scale " << scale.scale;
    elementwise_failures +=
        CompareOk(g, w, Comparison::kElementwise, tol).failures;

    // A genuinely wrong gradient still fails by scale: one entry off by a
    // tenth of the output's scale.
    HostArray wrong = g;
    wrong.f32[wrong.f32.size() / 2] += static_cast<float>(0.1 * scale.scale);
    EXPECT_FALSE(CompareOk(wrong, w, Comparison::kScale, tol).ok());
  }
  EXPECT_GT(elementwise_failures, 0);
}

}  // namespace
}  // namespace nkigraph::kernels
