// FindHostInput: how every kernel reference looks up and checks its inputs.
#include "util/host_array.h"

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

}  // namespace
}  // namespace nkigraph
