// ShapeElementCount, and FindHostInput: how every kernel reference looks up
// and checks its inputs.
#include "util/host_array.h"

#include <cstdint>
#include <limits>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace nkigraph {
namespace {

using ::testing::HasSubstr;

std::vector<HostArray> Inputs() {
  HostArray x{"x", proto::FLOAT32, {2, 3}, std::vector<float>(6, 1.0f), {}, {}};
  HostArray ids{"ids", proto::INT32, {4}, {}, {0, 1, 2, 3}, {}};
  return {x, ids};
}

TEST(FindHostInputTest, FindsTheNamedArrayOfTheRightDtypeAndShape) {
  const std::vector<HostArray> inputs = Inputs();
  absl::StatusOr<const HostArray*> x = FindHostInput(inputs, "x", {2, 3});
  ASSERT_TRUE(x.ok()) << x.status();
  EXPECT_EQ(*x, &inputs[0]);
  absl::StatusOr<const HostArray*> ids =
      FindHostInput(inputs, "ids", {4}, proto::INT32);
  ASSERT_TRUE(ids.ok()) << ids.status();
  EXPECT_EQ(*ids, &inputs[1]);
}

TEST(FindHostInputTest, ErrorsNameTheInputAndWhatIsWrong) {
  std::vector<HostArray> inputs = Inputs();
  EXPECT_THAT(FindHostInput(inputs, "y", {2, 3}).status().message(),
              HasSubstr("missing input 'y'"));
  EXPECT_THAT(FindHostInput(inputs, "ids", {4}).status().message(),
              HasSubstr("input 'ids' must be float32, not int32"));
  EXPECT_THAT(FindHostInput(inputs, "x", {3, 2}).status().message(),
              HasSubstr("input 'x' has shape [2, 3] with 6 values; expected "
                        "[3, 2]"));
  // A shape that does not match the values it carries.
  inputs[0].f32.pop_back();
  EXPECT_THAT(FindHostInput(inputs, "x", {2, 3}).status().message(),
              HasSubstr("with 5 values"));
}

constexpr int64_t kTwoTo62 = int64_t{1} << 62;
constexpr int64_t kMax = std::numeric_limits<int64_t>::max();

TEST(ShapeElementCountTest, MultipliesTheDimensions) {
  EXPECT_EQ(ShapeElementCount({}), 1);  // a scalar
  EXPECT_EQ(ShapeElementCount({7}), 7);
  EXPECT_EQ(ShapeElementCount({2, 3, 4}), 24);
  EXPECT_EQ(ShapeElementCount({kTwoTo62, 1}), kTwoTo62);
}

TEST(ShapeElementCountTest, AZeroDimensionEmptiesTheShapeWhateverTheOthers) {
  // 2^62 * 2^62 wraps int64 (to 0 here, by luck): the count must not
  // depend on multiplying the others first.
  EXPECT_EQ(ShapeElementCount({kTwoTo62, kTwoTo62, 0}), 0);
  EXPECT_EQ(ShapeElementCount({0, kTwoTo62, kTwoTo62}), 0);
  EXPECT_EQ(ShapeElementCount({kTwoTo62, 0, 3, kTwoTo62}), 0);
  EXPECT_EQ(ShapeElementCount({-5, 0}), 0);
}

TEST(ShapeElementCountTest, AProductPastInt64Saturates) {
  EXPECT_EQ(ShapeElementCount({kTwoTo62, 2}), kMax);  // 2^63
  EXPECT_EQ(ShapeElementCount({kTwoTo62, kTwoTo62}), kMax);
  // 3 * 2^62 overflows only at the last dimension.
  EXPECT_EQ(ShapeElementCount({3, int64_t{1} << 31, int64_t{1} << 31}), kMax);
  EXPECT_EQ(ShapeElementCount({kMax, 1}), kMax);
}

TEST(ShapeElementCountTest, ANegativeDimensionIsMinusOne) {
  EXPECT_EQ(ShapeElementCount({3, -1}), -1);
  EXPECT_EQ(ShapeElementCount({-2, -2}), -1);  // not 4
  EXPECT_EQ(ShapeElementCount({kTwoTo62, kTwoTo62, -1}), -1);
}

TEST(FindHostInputTest, HugeShapesAreComparedWithoutOverflow) {
  // An empty array of a shape whose other dimensions overflow is found.
  std::vector<HostArray> inputs = {
      HostArray{"e", proto::FLOAT32, {kTwoTo62, kTwoTo62, 0}, {}, {}, {}},
      HostArray{"h", proto::FLOAT32, {kTwoTo62, 4}, {1.0f}, {}, {}}};
  EXPECT_EQ(inputs[0].num_elements(), 0);
  absl::StatusOr<const HostArray*> e =
      FindHostInput(inputs, "e", {kTwoTo62, kTwoTo62, 0});
  ASSERT_TRUE(e.ok()) << e.status();
  EXPECT_EQ(*e, &inputs[0]);
  // One that would need 2^64 elements cannot match its one value.
  EXPECT_EQ(inputs[1].num_elements(), kMax);
  EXPECT_THAT(FindHostInput(inputs, "h", {kTwoTo62, 4}).status().message(),
              HasSubstr("with 1 values"));
}

}  // namespace
}  // namespace nkigraph
