// The input makers' draws (kernels/input_draws.h): fan-in weights stay in
// their bound with the variance 1/fan_in asks for, values are rounded to
// the dtype, and arrays drawn one after another continue one sequence.
#include "kernels/input_draws.h"

#include <cmath>
#include <random>
#include <vector>

#include "gtest/gtest.h"
#include "kernels/kernel_io.h"
#include "util/dtype.h"

namespace nkigraph::kernels {
namespace {

IoDecl Row(const char* name, std::vector<int64_t> shape) {
  IoDecl decl;
  decl.name = name;
  decl.shape = std::move(shape);
  return decl;
}

TEST(InputDrawsTest, FanInWeightsStayWithinTheBoundWithVarianceOneOverFanIn) {
  // fan_in 12: uniform in ±sqrt(3/12) = ±0.5, variance 1/12.
  const HostIo io({Row("W", {100, 100})}, /*num_ranks=*/1);
  std::mt19937_64 rng(7);
  const HostArray w = InputDraws(io, proto::FLOAT32, rng).FanInWeights("W", 12);
  ASSERT_EQ(w.f32.size(), 10000u);
  double sum = 0, sum_sq = 0;
  for (float v : w.f32) {
    ASSERT_GE(v, -0.5f);
    ASSERT_LT(v, 0.5f);
    sum += v;
    sum_sq += double{v} * v;
  }
  const double mean = sum / 10000.0;
  // Standard error of the mean sqrt(1/12 / 10^4) ≈ 0.0029: five of them.
  EXPECT_NEAR(mean, 0.0, 0.015);
  EXPECT_NEAR(sum_sq / 10000.0 - mean * mean, 1.0 / 12.0, 0.004);
}

TEST(InputDrawsTest, ValuesAreTheFloat32DrawsRoundedToTheDtype) {
  const HostIo io({Row("X", {64})}, /*num_ranks=*/1);
  std::mt19937_64 rng_f32(3), rng_bf16(3);
  const HostArray f32 =
      InputDraws(io, proto::FLOAT32, rng_f32).Uniform("X", -1, 1);
  const HostArray bf16 =
      InputDraws(io, proto::BFLOAT16, rng_bf16).Uniform("X", -1, 1);
  ASSERT_EQ(f32.f32.size(), bf16.f32.size());
  int rounded = 0;
  for (size_t i = 0; i < f32.f32.size(); ++i) {
    EXPECT_EQ(bf16.f32[i], Bf16ToFloat(FloatToBf16(f32.f32[i]))) << i;
    rounded += bf16.f32[i] != f32.f32[i];
  }
  // Random float32 values almost never fit in bfloat16's 8 bits.
  EXPECT_GT(rounded, 60);
}

TEST(InputDrawsTest, ArraysDrawnInTurnContinueOneSequence) {
  const HostIo io({Row("A", {3}), Row("B", {5}), Row("AB", {8})},
                  /*num_ranks=*/1);
  std::mt19937_64 rng_split(11), rng_whole(11);
  const InputDraws split(io, proto::FLOAT32, rng_split);
  const HostArray a = split.Uniform("A", 0.0, 2.0);
  const HostArray b = split.Uniform("B", 0.0, 2.0);
  const HostArray ab =
      InputDraws(io, proto::FLOAT32, rng_whole).Uniform("AB", 0.0, 2.0);
  std::vector<float> joined = a.f32;
  joined.insert(joined.end(), b.f32.begin(), b.f32.end());
  EXPECT_EQ(joined, ab.f32);
}

}  // namespace
}  // namespace nkigraph::kernels
