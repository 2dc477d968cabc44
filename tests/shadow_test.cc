// The interpreter's block-compressed shadow state (interp/shadow.h)
// against a plain byte-per-byte model under random runs of marks and
// checks: it must answer every question exactly as the model does.
#include "interp/shadow.h"

#include <cstdint>
#include <random>
#include <vector>

#include "gtest/gtest.h"

namespace nkigraph::interp {
namespace {

TEST(ShadowTest, StartsUnwritten) {
  absl::StatusOr<Shadow> shadow = Shadow::Allocate(1000);
  ASSERT_TRUE(shadow.ok());
  EXPECT_FALSE(shadow->All(0, 1, kInitialized));
  EXPECT_FALSE(shadow->All(10, 500, kInitialized));
  EXPECT_TRUE(shadow->All(10, 0, kInitialized));  // an empty range
  EXPECT_EQ(shadow->Get(999), 0);
}

TEST(ShadowTest, PartialBlocksKeepEachByte) {
  absl::StatusOr<Shadow> shadow = Shadow::Allocate(256);
  ASSERT_TRUE(shadow.ok());
  shadow->Set(3, 70, kInitialized);  // ends inside the second block
  EXPECT_TRUE(shadow->All(3, 70, kInitialized));
  EXPECT_FALSE(shadow->All(2, 2, kInitialized));
  EXPECT_FALSE(shadow->All(72, 2, kInitialized));
  EXPECT_EQ(shadow->Get(72), kInitialized);
  EXPECT_EQ(shadow->Get(73), 0);
  shadow->Set(0, 3, kInitialized | kMatmulGroup);
  EXPECT_TRUE(shadow->All(0, 73, kInitialized));
  EXPECT_FALSE(shadow->All(0, 4, kMatmulGroup));
  EXPECT_TRUE(shadow->All(0, 3, kMatmulGroup));
}

TEST(ShadowTest, AgreesWithAByteModelUnderRandomRuns) {
  constexpr int64_t kBytes = 5000;
  absl::StatusOr<Shadow> shadow = Shadow::Allocate(kBytes);
  ASSERT_TRUE(shadow.ok());
  std::vector<uint8_t> model(kBytes, 0);
  std::mt19937 rng(17);
  const uint8_t states[] = {0, kInitialized, kInitialized | kMatmulGroup};
  for (int step = 0; step < 20000; ++step) {
    const int64_t begin = rng() % kBytes;
    // Mostly short runs, sometimes long ones spanning many blocks.
    const int64_t limit = rng() % 8 == 0 ? kBytes : 150;
    const int64_t length =
        std::min<int64_t>(kBytes - begin, rng() % (limit + 1));
    if (rng() % 2 == 0) {
      const uint8_t state = states[rng() % 3];
      shadow->Set(begin, length, state);
      for (int64_t b = begin; b < begin + length; ++b) model[b] = state;
    } else {
      for (uint8_t bits : {kInitialized, kMatmulGroup}) {
        bool want = true;
        for (int64_t b = begin; b < begin + length; ++b) {
          want &= (model[b] & bits) == bits;
        }
        ASSERT_EQ(shadow->All(begin, length, bits), want)
            << "step " << step << " [" << begin << ", +" << length << ")";
      }
      const int64_t probe = rng() % kBytes;
      ASSERT_EQ(shadow->Get(probe), model[probe]) << "byte " << probe;
    }
  }
}

}  // namespace
}  // namespace nkigraph::interp
