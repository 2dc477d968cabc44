// bn_stats and bn_aggr: NKI's six statistics per partition (count, mean,
// variance * count of the even, then the odd free elements) and their
// aggregation into mean and variance, checked against values worked by
// hand, against a double-precision two-pass reference over a free size
// that takes two bn_stats calls, and for the checks they refuse.
#include <cmath>
#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/test_util.h"

namespace nkigraph {
namespace {

using builder::Buffer;
using builder::Tensor;
using builder::Tracer;
namespace isa = builder::isa;
using ::testing::ElementsAre;
using ::testing::FloatEq;
using testing::Floats;
using ::testing::HasSubstr;
using testing::LoadTile;
using testing::StoreTile;

using Outputs = std::map<std::string, HostArray>;

Tensor Tile(std::vector<int64_t> shape, const char* name) {
  return builder::ndarray(shape, proto::FLOAT32, Buffer::kSbuf, name);
}

// bn_stats then bn_aggr on input x [p, f]; outputs "stats" and "aggr".
absl::StatusOr<Outputs> StatsAndAggr(int64_t p, int64_t f,
                                     const std::vector<float>& x) {
  absl::StatusOr<proto::Graph> graph = testing::Trace1([&](Tracer& t) {
    const Tensor data = LoadTile(t, "x", {p, f});
    Tensor stats = Tile({p, 6}, "stats");
    Tensor aggr = Tile({p, 2}, "aggr");
    isa::bn_stats(stats, data);
    isa::bn_aggr(aggr, stats);
    StoreTile(t, "stats", stats);
    StoreTile(t, "aggr", aggr);
  });
  if (!graph.ok()) return graph.status();
  return testing::RunGraph(*graph, {Floats("x", {p, f}, x)});
}

TEST(BnStatsTest, EvenAndOddGroupsThenMeanAndVarianceWorkedByHand) {
  // Row 0 is 1..6: evens 1, 3, 5 (mean 3, squared deviations 4 + 0 + 4),
  // odds 2, 4, 6 (mean 4, 8). Row 1 is constant.
  absl::StatusOr<Outputs> out =
      StatsAndAggr(2, 6, {1, 2, 3, 4, 5, 6, 7, 7, 7, 7, 7, 7});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_THAT(out->at("stats").f32,
              ElementsAre(3, 3, 8, 3, 4, 8, 3, 7, 0, 3, 7, 0));
  // Mean 21 / 6 = 3.5; variance (8 + 3 * 0.25 + 8 + 3 * 0.25) / 6 = 35 / 12,
  // the population variance of 1..6.
  EXPECT_THAT(out->at("aggr").f32,
              ElementsAre(3.5f, FloatEq(35.0f / 12.0f), 7, 0));
}

TEST(BnStatsTest, OddFreeSizesLeaveTheOddGroupShorterOrEmpty) {
  absl::StatusOr<Outputs> three = StatsAndAggr(1, 3, {2, 10, 4});
  ASSERT_TRUE(three.ok()) << three.status();
  // Evens 2, 4 (mean 3, 1 + 1); the odd 10 alone.
  EXPECT_THAT(three->at("stats").f32, ElementsAre(2, 3, 2, 1, 10, 0));
  // Mean 16 / 3; variance (2 + 2 * (3 - 16/3)^2 + (10 - 16/3)^2) / 3 =
  // 104 / 9, the population variance of {2, 10, 4}, here taken directly.
  const double mean = 16.0 / 3.0;
  const double var = ((2 - mean) * (2 - mean) + (10 - mean) * (10 - mean) +
                      (4 - mean) * (4 - mean)) /
                     3.0;
  EXPECT_THAT(three->at("aggr").f32[0], FloatEq(static_cast<float>(mean)));
  EXPECT_NEAR(three->at("aggr").f32[1], var, 1e-5 * var);

  absl::StatusOr<Outputs> one = StatsAndAggr(1, 1, {-7});
  ASSERT_TRUE(one.ok()) << one.status();
  EXPECT_THAT(one->at("stats").f32, ElementsAre(1, -7, 0, 0, 0, 0));
  EXPECT_THAT(one->at("aggr").f32, ElementsAre(-7, 0));
}

TEST(BnStatsTest, TwoCallsAggregateToTheWholeRowsMeanAndVariance) {
  // 1000 elements per partition take two bn_stats calls (512 + 488), each
  // writing its six values side by side in one [P, 12] tile for one bn_aggr.
  constexpr int64_t kP = 3, kF = 1000, kFirst = 512;
  std::vector<float> x(kP * kF);
  for (int64_t i = 0; i < kP * kF; ++i) {
    x[i] = static_cast<float>(3.0 * std::sin(0.37 * i) + 0.01 * (i % 97) +
                              (i / kF));  // a different mean per row
  }
  absl::StatusOr<proto::Graph> graph = testing::Trace1([&](Tracer& t) {
    const Tensor data = LoadTile(t, "x", {kP, kF});
    Tensor stats = Tile({kP, 12}, "stats");
    isa::bn_stats(stats.Slice(1, 0, 6), data.Slice(1, 0, kFirst));
    isa::bn_stats(stats.Slice(1, 6, 6), data.Slice(1, kFirst, kF - kFirst));
    Tensor aggr = Tile({kP, 2}, "aggr");
    isa::bn_aggr(aggr, stats);
    StoreTile(t, "aggr", aggr);
  });
  ASSERT_TRUE(graph.ok()) << graph.status();
  absl::StatusOr<Outputs> out =
      testing::RunGraph(*graph, {Floats("x", {kP, kF}, x)});
  ASSERT_TRUE(out.ok()) << out.status();
  for (int64_t r = 0; r < kP; ++r) {
    double sum = 0;
    for (int64_t j = 0; j < kF; ++j) sum += x[r * kF + j];
    const double mean = sum / kF;
    double ss = 0;
    for (int64_t j = 0; j < kF; ++j) {
      ss += (x[r * kF + j] - mean) * (x[r * kF + j] - mean);
    }
    const double var = ss / kF;
    // fp32 sums of 500 terms: a few units in the last place of the scale.
    EXPECT_NEAR(out->at("aggr").f32[r * 2], mean, 1e-5) << "row " << r;
    EXPECT_NEAR(out->at("aggr").f32[r * 2 + 1], var, 1e-5 * var) << "row " << r;
  }
}

TEST(BnStatsTest, ChecksRefuseOversizedRowsAndWrongShapes) {
  const auto refused = &testing::TraceError;
  EXPECT_THAT(refused([&](Tracer&) {
                isa::bn_stats(Tile({2, 6}, "s"), Tile({2, 513}, "d"));
              }),
              HasSubstr("bn_stats: 'data' has 513 elements per partition; "
                        "bn_stats takes at most 512 on trn2"));
  EXPECT_THAT(refused([&](Tracer&) {
                isa::bn_stats(Tile({2, 3}, "s"), Tile({2, 8}, "d"));
              }),
              HasSubstr("'dst' must be [2, 6], not [2, 3]"));
  EXPECT_THAT(refused([&](Tracer&) {
                isa::bn_aggr(Tile({2, 2}, "a"), Tile({2, 8}, "s"));
              }),
              HasSubstr("bn_aggr: 'data' has 8 elements per partition"));
  EXPECT_THAT(refused([&](Tracer&) {
                isa::bn_aggr(Tile({1, 2}, "a"), Tile({2, 6}, "s"));
              }),
              HasSubstr("'dst' must be [2, 2], not [1, 2]"));
}

}  // namespace
}  // namespace nkigraph
