// Conversions between fp32 and the device dtypes: rounding to nearest even,
// NaN, overflow, saturation and subnormals, with bit patterns worked out by
// hand; and the same rounding as the interpreter applies it.
#include "util/dtype.h"

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
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
using testing::Floats;
using testing::Ints;
using testing::RunGraph;
using testing::TraceWorld;

float FromBits(uint32_t bits) {
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

constexpr float kInf = std::numeric_limits<float>::infinity();

// --- bfloat16: 1 sign, 8 exponent, 7 mantissa bits (the top half of fp32).

TEST(DtypeBf16Test, ExactValuesKeepTheirTopSixteenBits) {
  EXPECT_EQ(FloatToBf16(1.0f), 0x3F80);
  EXPECT_EQ(FloatToBf16(-2.0f), 0xC000);
  EXPECT_EQ(FloatToBf16(0.0f), 0x0000);
  EXPECT_EQ(FloatToBf16(-0.0f), 0x8000);
  EXPECT_EQ(Bf16ToFloat(0x3F82), 1.015625f);
  EXPECT_EQ(Bf16ToFloat(0xC000), -2.0f);
}

TEST(DtypeBf16Test, TiesRoundToEven) {
  // 1 + 2^-8 = 0x3F808000: halfway between 0x3F80 (even) and 0x3F81.
  EXPECT_EQ(FloatToBf16(FromBits(0x3F808000)), 0x3F80);
  EXPECT_EQ(FloatToBf16(1.00390625f), 0x3F80);
  // 1 + 3*2^-8 = 0x3F818000: halfway between 0x3F81 and 0x3F82 (even).
  EXPECT_EQ(FloatToBf16(FromBits(0x3F818000)), 0x3F82);
  EXPECT_EQ(Bf16ToFloat(FloatToBf16(1.01171875f)), 1.015625f);  // 1 + 2^-6
  // Negative ties mirror the positive ones.
  EXPECT_EQ(FloatToBf16(FromBits(0xBF808000)), 0xBF80);
  EXPECT_EQ(FloatToBf16(FromBits(0xBF818000)), 0xBF82);
}

TEST(DtypeBf16Test, OffTiesRoundToNearest) {
  EXPECT_EQ(FloatToBf16(FromBits(0x3F808001)), 0x3F81);  // just above a tie
  EXPECT_EQ(FloatToBf16(FromBits(0x3F807FFF)), 0x3F80);  // just below
  EXPECT_EQ(FloatToBf16(FromBits(0x3F80FFFF)), 0x3F81);
  // A carry out of the mantissa bumps the exponent: 0x3FFFC000 (a tie,
  // mantissa 0x7F odd) becomes 2.0.
  EXPECT_EQ(FloatToBf16(FromBits(0x3FFFC000)), 0x4000);
}

TEST(DtypeBf16Test, NanStaysNan) {
  EXPECT_TRUE(std::isnan(Bf16ToFloat(FloatToBf16(std::nanf("")))));
  // A NaN whose payload lives only in the low 16 bits must not truncate
  // to infinity.
  const uint16_t low_payload = FloatToBf16(FromBits(0x7F800001));
  EXPECT_TRUE(std::isnan(Bf16ToFloat(low_payload))) << std::hex << low_payload;
  const uint16_t negative = FloatToBf16(FromBits(0xFF800001));
  EXPECT_TRUE(std::isnan(Bf16ToFloat(negative))) << std::hex << negative;
  // Rounding an all-ones mantissa NaN must not carry into the sign.
  const uint16_t all_ones = FloatToBf16(FromBits(0x7FFFFFFF));
  EXPECT_TRUE(std::isnan(Bf16ToFloat(all_ones))) << std::hex << all_ones;
  EXPECT_EQ(all_ones & 0x8000, 0);
}

TEST(DtypeBf16Test, OverflowRoundsToInfinity) {
  // FLT_MAX = 0x7F7FFFFF rounds up past the largest bf16 (0x7F7F).
  EXPECT_EQ(FloatToBf16(FromBits(0x7F7FFFFF)), 0x7F80);
  EXPECT_EQ(FloatToBf16(-FromBits(0x7F7FFFFF)), 0xFF80);
  // The tie 0x7F7F8000 goes to the even neighbour, which is infinity.
  EXPECT_EQ(FloatToBf16(FromBits(0x7F7F8000)), 0x7F80);
  // Just below the tie stays finite.
  EXPECT_EQ(FloatToBf16(FromBits(0x7F7F7FFF)), 0x7F7F);
  EXPECT_EQ(FloatToBf16(kInf), 0x7F80);
  EXPECT_EQ(FloatToBf16(-kInf), 0xFF80);
  EXPECT_EQ(Bf16ToFloat(0x7F80), kInf);
}

TEST(DtypeBf16Test, SubnormalsRoundLikeNormals) {
  // 0x00018000 (a subnormal) is a tie between 0x0001 (odd) and 0x0002.
  EXPECT_EQ(FloatToBf16(FromBits(0x00018000)), 0x0002);
  EXPECT_EQ(FloatToBf16(FromBits(0x00008000)), 0x0000);  // tie to even 0
  EXPECT_EQ(Bf16ToFloat(0x0001), FromBits(0x00010000));
}

// --- float16: 1 sign, 5 exponent (bias 15), 10 mantissa bits.

TEST(DtypeFp16Test, TiesRoundToEven) {
  EXPECT_EQ(FloatToFp16(1.0f), 0x3C00);
  EXPECT_EQ(FloatToFp16(1.0f + std::ldexp(1.0f, -11)), 0x3C00);      // tie
  EXPECT_EQ(FloatToFp16(1.0f + 3 * std::ldexp(1.0f, -11)), 0x3C02);  // tie
  EXPECT_EQ(FloatToFp16(1.0f + std::ldexp(1.0f, -10)), 0x3C01);      // exact
  EXPECT_EQ(FloatToFp16(-2.5f), 0xC100);
  EXPECT_EQ(Fp16ToFloat(0x3C02), 1.0f + std::ldexp(1.0f, -9));
}

TEST(DtypeFp16Test, LargestFiniteAndOverflow) {
  EXPECT_EQ(FloatToFp16(65504.0f), 0x7BFF);
  EXPECT_EQ(FloatToFp16(65519.0f), 0x7BFF);  // below the halfway point
  EXPECT_EQ(FloatToFp16(65520.0f), 0x7C00);  // the tie rounds to infinity
  EXPECT_EQ(FloatToFp16(-1e6f), 0xFC00);
  EXPECT_EQ(Fp16ToFloat(0x7BFF), 65504.0f);
  EXPECT_EQ(Fp16ToFloat(0x7C00), kInf);
}

TEST(DtypeFp16Test, InfinityConvertsToInfinity) {
  EXPECT_EQ(FloatToFp16(kInf), 0x7C00);
  EXPECT_EQ(FloatToFp16(-kInf), 0xFC00);
}

TEST(DtypeFp16Test, NanAndSubnormals) {
  EXPECT_TRUE(std::isnan(Fp16ToFloat(FloatToFp16(std::nanf("")))));
  EXPECT_EQ(FloatToFp16(std::ldexp(1.0f, -24)), 0x0001);  // smallest
  EXPECT_EQ(FloatToFp16(std::ldexp(1.0f, -25)), 0x0000);  // tie to even 0
  EXPECT_EQ(FloatToFp16(std::ldexp(3.0f, -25)), 0x0002);  // tie to even 2
  EXPECT_EQ(FloatToFp16(std::ldexp(1.0f, -14)), 0x0400);  // smallest normal
  EXPECT_EQ(FloatToFp16(std::ldexp(1023.0f, -24)), 0x03FF);
  EXPECT_EQ(Fp16ToFloat(0x0001), std::ldexp(1.0f, -24));
  EXPECT_EQ(Fp16ToFloat(0x8001), -std::ldexp(1.0f, -24));
}

// --- float8 e4m3: 1 sign, 4 exponent (bias 7), 3 mantissa bits.

TEST(DtypeFp8Test, TargetMaximum) {
  EXPECT_EQ(Fp8E4m3Max(proto::TARGET_TRN1), 240.0f);
  EXPECT_EQ(Fp8E4m3Max(proto::TARGET_TRN2), 240.0f);
  EXPECT_EQ(Fp8E4m3Max(proto::TARGET_TRN3), 448.0f);
}

TEST(DtypeFp8Test, SaturatesAt240OnTrn2) {
  const float max = Fp8E4m3Max(proto::TARGET_TRN2);
  EXPECT_EQ(FloatToFp8E4m3(240.0f, max), 0x77);  // 1.875 * 2^7
  EXPECT_EQ(FloatToFp8E4m3(250.0f, max), 0x77);
  EXPECT_EQ(FloatToFp8E4m3(1e9f, max), 0x77);
  EXPECT_EQ(FloatToFp8E4m3(-1e9f, max), 0xF7);
  EXPECT_EQ(Fp8E4m3ToFloat(0x77), 240.0f);
  EXPECT_EQ(RoundTo(proto::FLOAT8_E4M3, 300.0f, max), 240.0f);
  EXPECT_EQ(RoundTo(proto::FLOAT8_E4M3, -300.0f, max), -240.0f);
}

TEST(DtypeFp8Test, SaturatesAt448OnTrn3) {
  const float max = Fp8E4m3Max(proto::TARGET_TRN3);
  // 250 lies between 240 and 256 (quantum 16 at 2^7), nearer 256.
  EXPECT_EQ(FloatToFp8E4m3(250.0f, max), 0x78);  // 1.0 * 2^8
  EXPECT_EQ(FloatToFp8E4m3(448.0f, max), 0x7E);  // 1.75 * 2^8
  EXPECT_EQ(FloatToFp8E4m3(470.0f, max), 0x7E);
  EXPECT_EQ(FloatToFp8E4m3(1e9f, max), 0x7E);
  EXPECT_EQ(Fp8E4m3ToFloat(0x7E), 448.0f);
  EXPECT_EQ(RoundTo(proto::FLOAT8_E4M3, 1000.0f, max), 448.0f);
}

TEST(DtypeFp8Test, RoundsToNearestEven) {
  const float max = 240.0f;
  EXPECT_EQ(FloatToFp8E4m3(1.0f, max), 0x38);
  EXPECT_EQ(FloatToFp8E4m3(1.0625f, max), 0x38);  // 1 + 2^-4: tie to even 1
  EXPECT_EQ(FloatToFp8E4m3(1.1875f, max), 0x3A);  // 1 + 3*2^-4: tie to 1.25
  EXPECT_EQ(FloatToFp8E4m3(1.1f, max), 0x39);     // nearest is 1.125
  EXPECT_EQ(FloatToFp8E4m3(-3.0f, max), 0xC4);    // -1.5 * 2^1
  EXPECT_EQ(FloatToFp8E4m3(15.5f, max), 0x58);    // tie 15 vs 16: to 16
  EXPECT_EQ(Fp8E4m3ToFloat(0x3A), 1.25f);
}

TEST(DtypeFp8Test, Subnormals) {
  const float max = 240.0f;
  // Subnormals are multiples of 2^-9 below the smallest normal 2^-6.
  EXPECT_EQ(FloatToFp8E4m3(std::ldexp(1.0f, -9), max), 0x01);
  EXPECT_EQ(FloatToFp8E4m3(std::ldexp(3.0f, -9), max), 0x03);
  EXPECT_EQ(FloatToFp8E4m3(std::ldexp(7.0f, -9), max), 0x07);
  EXPECT_EQ(FloatToFp8E4m3(std::ldexp(1.0f, -6), max), 0x08);   // normal
  EXPECT_EQ(FloatToFp8E4m3(std::ldexp(1.0f, -10), max), 0x00);  // tie to 0
  EXPECT_EQ(FloatToFp8E4m3(std::ldexp(3.0f, -10), max), 0x02);  // tie to 2
  EXPECT_EQ(FloatToFp8E4m3(std::ldexp(1.0f, -12), max), 0x00);  // underflow
  EXPECT_EQ(FloatToFp8E4m3(-std::ldexp(5.0f, -9), max), 0x85);
  EXPECT_EQ(Fp8E4m3ToFloat(0x05), std::ldexp(5.0f, -9));
  EXPECT_EQ(Fp8E4m3ToFloat(0x85), -std::ldexp(5.0f, -9));
}

TEST(DtypeFp8Test, NanStaysNan) {
  EXPECT_TRUE(std::isnan(Fp8E4m3ToFloat(FloatToFp8E4m3(std::nanf(""), 240))));
  EXPECT_TRUE(std::isnan(Fp8E4m3ToFloat(0x7F)));
  EXPECT_TRUE(std::isnan(Fp8E4m3ToFloat(0xFF)));
}

// --- integers: round to nearest even, then saturate.

TEST(DtypeIntTest, StoreFromFloatRoundsAndSaturates) {
  auto as_int = [](proto::DType dtype, float value) {
    uint8_t bytes[4] = {};
    StoreFromFloat(dtype, value, bytes, 240.0f);
    return LoadAsFloat(dtype, bytes);
  };
  EXPECT_EQ(as_int(proto::INT8, 200.0f), 127.0f);
  EXPECT_EQ(as_int(proto::INT8, -200.0f), -128.0f);
  EXPECT_EQ(as_int(proto::UINT8, -5.0f), 0.0f);
  EXPECT_EQ(as_int(proto::UINT8, 300.0f), 255.0f);
  EXPECT_EQ(as_int(proto::INT16, 40000.0f), 32767.0f);
  EXPECT_EQ(as_int(proto::INT16, -40000.0f), -32768.0f);
  EXPECT_EQ(as_int(proto::UINT16, 70000.0f), 65535.0f);
  EXPECT_EQ(as_int(proto::UINT16, -1.0f), 0.0f);
  EXPECT_EQ(as_int(proto::INT32, 2.5f), 2.0f);  // ties to even
  EXPECT_EQ(as_int(proto::INT32, 3.5f), 4.0f);
  EXPECT_EQ(as_int(proto::INT32, -2.5f), -2.0f);
  EXPECT_EQ(as_int(proto::INT32, std::nanf("")), 0.0f);

  int32_t i32;
  uint8_t bytes[4];
  StoreFromFloat(proto::INT32, 3e9f, bytes, 240.0f);
  std::memcpy(&i32, bytes, 4);
  EXPECT_EQ(i32, std::numeric_limits<int32_t>::max());
  StoreFromFloat(proto::INT32, -3e9f, bytes, 240.0f);
  std::memcpy(&i32, bytes, 4);
  EXPECT_EQ(i32, std::numeric_limits<int32_t>::min());
  uint32_t u32;
  StoreFromFloat(proto::UINT32, 5e9f, bytes, 240.0f);
  std::memcpy(&u32, bytes, 4);
  EXPECT_EQ(u32, std::numeric_limits<uint32_t>::max());
  StoreFromFloat(proto::UINT32, -1.0f, bytes, 240.0f);
  std::memcpy(&u32, bytes, 4);
  EXPECT_EQ(u32, 0u);
  StoreFromFloat(proto::INT32, kInf, bytes, 240.0f);
  std::memcpy(&i32, bytes, 4);
  EXPECT_EQ(i32, std::numeric_limits<int32_t>::max());
}

// --- the same rules as the interpreter applies them.

TEST(DtypeInterpTest, Float32InputIsRoundedToTheDeclaredBf16) {
  absl::StatusOr<proto::Graph> graph = testing::Trace1([](Tracer& t) {
    Tensor x = t.Input("x", {4}, proto::BFLOAT16);
    Tensor y = t.Allocate({4}, proto::FLOAT32, Buffer::kSharedHbm, "y");
    isa::dma_copy(y, x);
    t.Output("out", y);
  });
  ASSERT_TRUE(graph.ok()) << graph.status();
  absl::StatusOr<std::map<std::string, HostArray>> out =
      RunGraph(*graph, {Floats("x", {4},
                               {1.00390625f, 1.01171875f, FromBits(0x3F808001),
                                FromBits(0x7F7FFFFF)})});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_THAT(out->at("out").f32,
              ElementsAre(1.0f, 1.015625f, 1.0078125f, kInf));
}

TEST(DtypeInterpTest, Fp8InputSaturatesAtTheTargetsMaximum) {
  for (const auto& [target, max] : {std::pair{proto::TARGET_TRN2, 240.0f},
                                    std::pair{proto::TARGET_TRN3, 448.0f}}) {
    absl::StatusOr<proto::Graph> graph = TraceWorld(
        1, 1,
        [](Tracer& t) {
          Tensor x = t.Input("x", {3}, proto::FLOAT8_E4M3);
          Tensor y = t.Allocate({3}, proto::FLOAT32, Buffer::kSharedHbm, "y");
          isa::dma_copy(y, x);
          t.Output("out", y);
        },
        target);
    ASSERT_TRUE(graph.ok()) << graph.status();
    absl::StatusOr<std::map<std::string, HostArray>> out =
        RunGraph(*graph, {Floats("x", {3}, {1000.0f, -1000.0f, 1.0625f})});
    ASSERT_TRUE(out.ok()) << out.status();
    EXPECT_THAT(out->at("out").f32, ElementsAre(max, -max, 1.0f))
        << proto::Target_Name(target);
  }
}

TEST(DtypeInterpTest, IntegerNarrowingSaturates) {
  absl::StatusOr<proto::Graph> graph = testing::Trace1([](Tracer& t) {
    Tensor x = t.Input("x", {1, 4}, proto::INT32);
    Tensor wide = builder::ndarray({1, 4}, proto::INT32, Buffer::kSbuf, "w");
    Tensor narrow = builder::ndarray({1, 4}, proto::INT8, Buffer::kSbuf, "n");
    Tensor back = builder::ndarray({1, 4}, proto::INT32, Buffer::kSbuf, "b");
    Tensor y = t.Allocate({1, 4}, proto::INT32, Buffer::kSharedHbm, "y");
    isa::dma_copy(wide, x);
    isa::tensor_copy(narrow, wide);
    isa::tensor_copy(back, narrow);
    isa::dma_copy(y, back);
    t.Output("out", y);
  });
  ASSERT_TRUE(graph.ok()) << graph.status();
  absl::StatusOr<std::map<std::string, HostArray>> out =
      RunGraph(*graph, {Ints("x", {1, 4}, {300, -300, 5, -128})});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_THAT(out->at("out").i32, ElementsAre(127, -128, 5, -128));
}

// A bf16 row widens each element by its bits: every pattern, at an odd
// address (rows need not be aligned), is the element's bits shifted up 16,
// NaN payloads and subnormals included.
TEST(DTypeTest, Bf16RowsWidenEveryBitPatternExactly) {
  std::vector<uint8_t> bytes(1 + 2 * 65536);
  for (uint32_t b = 0; b < 65536; ++b) {
    bytes[1 + 2 * b] = static_cast<uint8_t>(b & 0xFF);
    bytes[2 + 2 * b] = static_cast<uint8_t>(b >> 8);
  }
  std::vector<float> row(65536);
  LoadRowAsFloat(proto::BFLOAT16, bytes.data() + 1, 65536, row.data());
  for (uint32_t b = 0; b < 65536; ++b) {
    uint32_t got;
    std::memcpy(&got, &row[b], 4);
    ASSERT_EQ(got, b << 16) << "pattern " << b;
  }
}

}  // namespace
}  // namespace nkigraph
