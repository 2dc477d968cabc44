// tensor_copy_predicated: dst = src where the predicate is non-zero, dst
// kept elsewhere; checked as nl.where's lowering against values worked by
// hand, for bit-exact copies and kept elements of int32 tiles, for an
// immediate source with reverse_pred, and for the checks it refuses.
#include <cstdint>
#include <functional>
#include <limits>
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
using isa::Alu;
using ::testing::ElementsAre;
using testing::Floats;
using ::testing::HasSubstr;
using testing::Ints;
using testing::LoadTile;
using testing::StoreTile;

using testing::TraceAndRun;
using Outputs = std::map<std::string, HostArray>;

TEST(TensorCopyPredicatedTest, WhereLowersToACopyThenAPredicatedCopy) {
  // where(c > 0, x, y): the predicate a uint8 comparison result.
  absl::StatusOr<Outputs> out = TraceAndRun(
      [](Tracer& t) {
        const Tensor c = LoadTile(t, "c", {2, 3});
        const Tensor x = LoadTile(t, "x", {2, 3});
        const Tensor y = LoadTile(t, "y", {2, 3});
        Tensor pred =
            builder::ndarray({2, 3}, proto::UINT8, Buffer::kSbuf, "pred");
        isa::tensor_scalar(pred, c, Alu::kGreater, 0.0f);
        Tensor dst =
            builder::ndarray({2, 3}, proto::FLOAT32, Buffer::kSbuf, "dst");
        isa::tensor_copy(dst, y);
        isa::tensor_copy_predicated(dst, x, pred);
        StoreTile(t, "out", dst);
      },
      {Floats("c", {2, 3}, {1, -1, 0.5f, 0, 2, -3}),
       Floats("x", {2, 3}, {10, 20, 30, 40, 50, 60}),
       Floats("y", {2, 3}, {-1, -2, -3, -4, -5, -6})});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_THAT(out->at("out").f32, ElementsAre(10, -2, 30, -4, 50, -6));
}

TEST(TensorCopyPredicatedTest, Int32CopiesAndKeptElementsAreBitExact) {
  // 2^24 + 1 and INT32_MIN survive only a copy that never goes through
  // fp32, whether copied from src or kept in dst.
  constexpr int32_t kOdd = (1 << 24) + 1;
  constexpr int32_t kMin = std::numeric_limits<int32_t>::min();
  absl::StatusOr<Outputs> out = TraceAndRun(
      [](Tracer& t) {
        const Tensor src = LoadTile(t, "src", {1, 4}, proto::INT32);
        Tensor dst = LoadTile(t, "dst", {1, 4}, proto::INT32);
        const Tensor pred =
            LoadTile(t, "pred", {1, 4}, proto::INT32, proto::UINT32);
        isa::tensor_copy_predicated(dst, src, pred);
        StoreTile(t, "out", dst, proto::INT32);
      },
      {Ints("src", {1, 4}, {kOdd, kMin, 5, 6}),
       Ints("dst", {1, 4}, {1, 2, -kOdd, kMin}),
       Ints("pred", {1, 4}, {1, 7, 0, 0})});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_THAT(out->at("out").i32, ElementsAre(kOdd, kMin, -kOdd, kMin));
}

TEST(TensorCopyPredicatedTest, ImmediateSourceWithReversedPredicate) {
  // Masks with -30000 where the predicate is zero; a full copy (every
  // element chosen) into a fresh tile reads nothing uninitialised.
  absl::StatusOr<Outputs> out = TraceAndRun(
      [](Tracer& t) {
        Tensor dst = LoadTile(t, "x", {2, 2});
        const Tensor pred =
            LoadTile(t, "pred", {2, 2}, proto::INT32, proto::UINT16);
        isa::tensor_copy_predicated(dst, -30000.0f, pred,
                                    /*reverse_pred=*/true);
        Tensor fresh =
            builder::ndarray({2, 2}, proto::BFLOAT16, Buffer::kSbuf, "fresh");
        const Tensor ones =
            LoadTile(t, "ones", {2, 2}, proto::INT32, proto::UINT8);
        isa::tensor_copy_predicated(fresh, 0.5f, ones);
        StoreTile(t, "out", dst);
        StoreTile(t, "fresh", fresh);
      },
      {Floats("x", {2, 2}, {1, 2, 3, 4}), Ints("pred", {2, 2}, {1, 0, 0, 3}),
       Ints("ones", {2, 2}, {1, 1, 2, 255})});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_THAT(out->at("out").f32, ElementsAre(1, -30000, -30000, 4));
  EXPECT_THAT(out->at("fresh").f32, ElementsAre(0.5f, 0.5f, 0.5f, 0.5f));
}

TEST(TensorCopyPredicatedTest, ChecksRefusePredicateDtypesShapesAndPsumPairs) {
  const auto refused = &testing::TraceError;
  const auto tile = [](std::vector<int64_t> shape, proto::DType dtype,
                       Buffer buffer, const char* name) {
    return builder::ndarray(shape, dtype, buffer, name);
  };
  EXPECT_THAT(refused([&](Tracer&) {
                Tensor d = tile({2, 4}, proto::FLOAT32, Buffer::kSbuf, "d");
                isa::tensor_copy_predicated(d, d, d);
              }),
              HasSubstr("tensor_copy_predicated: 'predicate' is float32; "
                        "uint8, uint16 or uint32 required"));
  EXPECT_THAT(refused([&](Tracer&) {
                Tensor d = tile({2, 4}, proto::FLOAT32, Buffer::kSbuf, "d");
                Tensor s = tile({2, 4}, proto::BFLOAT16, Buffer::kSbuf, "s");
                Tensor p = tile({2, 4}, proto::UINT8, Buffer::kSbuf, "p");
                isa::tensor_copy_predicated(d, s, p);
              }),
              HasSubstr("'src' is bfloat16 but 'dst' is float32"));
  EXPECT_THAT(refused([&](Tracer&) {
                Tensor d = tile({2, 4}, proto::FLOAT32, Buffer::kSbuf, "d");
                Tensor p = tile({2, 3}, proto::UINT8, Buffer::kSbuf, "p");
                isa::tensor_copy_predicated(d, 1.0f, p);
              }),
              HasSubstr("'predicate' is [2, 3] but 'dst' is [2, 4]"));
  EXPECT_THAT(refused([&](Tracer&) {
                Tensor d = tile({2, 4}, proto::FLOAT32, Buffer::kSbuf, "d");
                Tensor s = tile({2, 4}, proto::FLOAT32, Buffer::kPsum, "s");
                Tensor p = tile({2, 4}, proto::UINT8, Buffer::kPsum, "p");
                isa::tensor_copy_predicated(d, s, p);
              }),
              HasSubstr("'src' and 'predicate' cannot both be in psum"));
}

}  // namespace
}  // namespace nkigraph
