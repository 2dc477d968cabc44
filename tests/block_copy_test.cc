// ops::CopyBlock and ReshapeToCols against a plain element loop, and the
// interpreter's transposing copies (dma_copy, tensor_copy through strided
// views) against values worked out element by element.
#include "ops/block_copy.h"

#include <cstdint>
#include <cstring>
#include <random>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/test_util.h"
#include "util/dtype.h"

namespace nkigraph {
namespace {

using builder::Buffer;
using builder::Tensor;
using builder::Tracer;
namespace isa = builder::isa;
using isa::Engine;
using testing::Floats;
using ::testing::HasSubstr;
using testing::RunGraph;
using testing::Trace1;

// A buffer of random bytes with room for a block of `rows` x `cols`
// elements of `esize` bytes at the given strides (which may be negative):
// `origin` is the offset of element (0, 0).
struct Arena {
  std::vector<uint8_t> bytes;
  int64_t origin = 0;
};

Arena MakeArena(int64_t rows, int64_t cols, int64_t row_stride,
                int64_t col_stride, int64_t esize, uint32_t seed) {
  int64_t low = 0, high = 0;
  for (const int64_t reach :
       {(rows - 1) * row_stride, (cols - 1) * col_stride}) {
    (reach < 0 ? low : high) += reach;
  }
  Arena a;
  a.bytes.resize(high - low + esize);
  a.origin = -low;
  std::mt19937 rng(seed);
  for (uint8_t& b : a.bytes) b = static_cast<uint8_t>(rng());
  return a;
}

struct Case {
  int64_t rows, cols, esize;
  // Strides in elements, as multiples of esize.
  int64_t src_row, src_col, dst_row, dst_col;
};

// The reference: one element at a time.
void ElementLoop(uint8_t* dst, int64_t dst_row, int64_t dst_col,
                 const uint8_t* src, int64_t src_row, int64_t src_col,
                 int64_t rows, int64_t cols, int64_t esize) {
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t c = 0; c < cols; ++c) {
      std::memcpy(dst + r * dst_row + c * dst_col,
                  src + r * src_row + c * src_col, esize);
    }
  }
}

TEST(CopyBlockTest, MatchesAnElementLoopForEveryLayout) {
  std::vector<Case> cases;
  // Odd sizes around the 32-element tile and the 8- and 16-element blocks
  // transposed in registers (with strips past them on both sides);
  // row-major, padded, transposed (either side), both strided, negative
  // strides; every element size.
  for (const int64_t esize : {1, 2, 3, 4, 8}) {
    for (const auto& [rows, cols] :
         std::vector<std::pair<int64_t, int64_t>>{{1, 1},
                                                  {1, 37},
                                                  {37, 1},
                                                  {16, 16},
                                                  {8, 24},
                                                  {33, 65},
                                                  {70, 129}}) {
      cases.push_back({rows, cols, esize, cols, 1, cols, 1});
      cases.push_back({rows, cols, esize, cols + 3, 1, cols + 5, 1});
      cases.push_back({rows, cols, esize, 1, rows + 1, cols + 2, 1});
      cases.push_back({rows, cols, esize, cols, 1, 1, rows});
      cases.push_back({rows, cols, esize, 1, rows, 1, rows + 7});
      cases.push_back({rows, cols, esize, 2, 2 * rows + 1, 3 * cols, 3});
      cases.push_back({rows, cols, esize, -cols, 1, 1, -rows});
      cases.push_back({rows, cols, esize, 1, -(rows + 2), -1, rows});
    }
  }
  uint32_t seed = 1;
  for (const Case& c : cases) {
    SCOPED_TRACE(::testing::Message()
                 << c.rows << "x" << c.cols << " esize " << c.esize
                 << " src strides " << c.src_row << "," << c.src_col
                 << " dst strides " << c.dst_row << "," << c.dst_col);
    const int64_t e = c.esize;
    const Arena src =
        MakeArena(c.rows, c.cols, c.src_row * e, c.src_col * e, e, seed++);
    const Arena before =
        MakeArena(c.rows, c.cols, c.dst_row * e, c.dst_col * e, e, seed++);
    Arena want = before;
    ElementLoop(&want.bytes[want.origin], c.dst_row * e, c.dst_col * e,
                &src.bytes[src.origin], c.src_row * e, c.src_col * e, c.rows,
                c.cols, e);
    for (const ops::SimdPath path : ops::AvailableSimdPaths()) {
      SCOPED_TRACE(ops::SimdPathName(path));
      Arena dst = before;
      ops::CopyBlock({&dst.bytes[dst.origin], c.rows, c.cols, c.dst_row * e,
                      c.dst_col * e},
                     {&src.bytes[src.origin], c.rows, c.cols, c.src_row * e,
                      c.src_col * e},
                     e, path);
      // Elements outside the block are left alone too.
      EXPECT_EQ(dst.bytes, want.bytes);
    }
  }
}

TEST(CopyBlockTest, ReshapeToColsOnlyWhereRowsFollowEvenly) {
  // 4 rows of 6 elements back to back: any divisor of 24 columns.
  ops::ConstBlock dense{nullptr, 4, 6, 24, 4};
  ASSERT_TRUE(ops::ReshapeToCols(dense, 8));
  EXPECT_EQ(dense.rows, 3);
  EXPECT_EQ(dense.row_stride, 32);
  EXPECT_FALSE(ops::ReshapeToCols(dense, 5));
  // One strided row (a column of a matrix) splits into rows of it.
  ops::ConstBlock column{nullptr, 1, 12, 0, 400};
  ASSERT_TRUE(ops::ReshapeToCols(column, 3));
  EXPECT_EQ(column.rows, 4);
  EXPECT_EQ(column.row_stride, 1200);
  EXPECT_EQ(column.col_stride, 400);
  // Padded rows do not merge; their own column count is kept.
  ops::ConstBlock padded{nullptr, 4, 6, 32, 4};
  EXPECT_FALSE(ops::ReshapeToCols(padded, 12));
  EXPECT_TRUE(ops::ReshapeToCols(padded, 6));
  EXPECT_EQ(padded.rows, 4);
}

// x[r, c] = 1000 r + c: every element says where it came from.
std::vector<float> Indexed(int64_t rows, int64_t cols) {
  std::vector<float> v(rows * cols);
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t c = 0; c < cols; ++c) v[r * cols + c] = 1000.0f * r + c;
  }
  return v;
}

// x[r0 + r, c0 + c] for the [rows, cols] block at (r0, c0), transposed.
std::vector<float> TransposedBlock(const std::vector<float>& x, int64_t cols,
                                   int64_t r0, int64_t c0, int64_t rows,
                                   int64_t block_cols) {
  std::vector<float> t;
  for (int64_t c = 0; c < block_cols; ++c) {
    for (int64_t r = 0; r < rows; ++r) {
      t.push_back(x[(r0 + r) * cols + c0 + c]);
    }
  }
  return t;
}

// An odd block of an HBM matrix loaded transposed into SBUF (the partition
// dim a stride-1 HBM dim), then stored back transposed into a strided HBM
// view, in float32, bfloat16 and int8: elements and their places must be
// those of an element-by-element transpose.
TEST(TransposingCopyTest, HbmToSbufAndBackThroughPermutedViews) {
  constexpr int64_t kRows = 45, kCols = 77;  // x is [45, 77]
  constexpr int64_t kR0 = 3, kC0 = 5, kR = 37, kC = 70;
  for (const proto::DType dtype :
       {proto::FLOAT32, proto::BFLOAT16, proto::INT8}) {
    SCOPED_TRACE(DTypeName(dtype));
    absl::StatusOr<proto::Graph> graph = Trace1([&](Tracer& t) {
      Tensor x = t.Input("x", {kRows, kCols}, dtype);
      // tile[c, r] = x[kR0 + r, kC0 + c]
      Tensor tile = builder::ndarray({kC, kR}, dtype, Buffer::kSbuf, "tile");
      isa::dma_copy(tile,
                    x.Slice(0, kR0, kR).Slice(1, kC0, kC).Permute({1, 0}));
      Tensor flat = t.Allocate({kC, kR}, dtype, Buffer::kSharedHbm, "flat");
      isa::dma_copy(flat, tile);
      t.Output("flat", flat);
      // back[r, c] = tile[c, r]: through a transposed HBM view, written
      // into the middle of a wider matrix.
      Tensor back = t.Allocate({kR, kC + 4}, dtype, Buffer::kSharedHbm, "b");
      Tensor zeros =
          builder::ndarray({kR, kC + 4}, dtype, Buffer::kSbuf, "zeros");
      isa::memset(zeros, 0.0f);
      isa::dma_copy(back, zeros);
      isa::dma_copy(back.Slice(1, 2, kC).Permute({1, 0}), tile);
      t.Output("back", back);
    });
    ASSERT_TRUE(graph.ok()) << graph.status();
    // int8 holds -128..127: keep the values small there.
    std::vector<float> x = Indexed(kRows, kCols);
    if (dtype == proto::INT8) {
      for (float& v : x) v = static_cast<float>(static_cast<int>(v) % 101 - 50);
    }
    HostArray input = Floats("x", {kRows, kCols}, x);
    if (dtype == proto::INT8) {
      input = testing::Ints("x", {kRows, kCols},
                            std::vector<int32_t>(x.begin(), x.end()));
    }
    absl::StatusOr<std::map<std::string, HostArray>> out =
        RunGraph(*graph, {input});
    ASSERT_TRUE(out.ok()) << out.status();
    auto values = [&](const HostArray& a) {
      return a.f32.empty() ? std::vector<float>(a.i32.begin(), a.i32.end())
                           : a.f32;
    };
    // The values are exact in every dtype used (bf16 keeps 8 significant
    // bits: round them as the device would before comparing).
    std::vector<float> rounded = x;
    if (dtype == proto::BFLOAT16) {
      for (float& v : rounded) {
        uint8_t b[2];
        StoreFromFloat(proto::BFLOAT16, v, b, 0);
        v = LoadAsFloat(proto::BFLOAT16, b);
      }
    }
    EXPECT_EQ(values(out->at("flat")),
              TransposedBlock(rounded, kCols, kR0, kC0, kR, kC));
    std::vector<float> want(kR * (kC + 4), 0.0f);
    for (int64_t r = 0; r < kR; ++r) {
      for (int64_t c = 0; c < kC; ++c) {
        want[r * (kC + 4) + 2 + c] = rounded[(kR0 + r) * kCols + kC0 + c];
      }
    }
    EXPECT_EQ(values(out->at("back")), want);
  }
}

// On chip: a tile copied with its free dim strided (every third element)
// and a PSUM -> SBUF copy of a column block, against an element loop.
TEST(TransposingCopyTest, StridedOnChipViews) {
  absl::StatusOr<proto::Graph> graph = Trace1([&](Tracer& t) {
    Tensor x = t.Input("x", {5, 30}, proto::FLOAT32);
    Tensor s = builder::ndarray({5, 30}, proto::FLOAT32, Buffer::kSbuf, "s");
    isa::dma_copy(s, x);
    Tensor every_third =
        builder::ndarray({5, 10}, proto::FLOAT32, Buffer::kSbuf, "e");
    isa::tensor_copy(every_third, s.Slice(1, 1, 10, /*step=*/3));
    Tensor out = t.Allocate({5, 10}, proto::FLOAT32, Buffer::kSharedHbm, "o");
    isa::dma_copy(out, every_third);
    t.Output("out", out);
  });
  ASSERT_TRUE(graph.ok()) << graph.status();
  const std::vector<float> x = Indexed(5, 30);
  absl::StatusOr<std::map<std::string, HostArray>> out =
      RunGraph(*graph, {Floats("x", {5, 30}, x)});
  ASSERT_TRUE(out.ok()) << out.status();
  std::vector<float> want;
  for (int64_t r = 0; r < 5; ++r) {
    for (int64_t c = 0; c < 10; ++c) want.push_back(x[r * 30 + 1 + 3 * c]);
  }
  EXPECT_EQ(out->at("out").f32, want);
}

// A transposing read of a partly written tile still names the first
// never-written element in the source's element order.
TEST(TransposingCopyTest, UninitializedReadNamesTheFirstHole) {
  absl::StatusOr<proto::Graph> graph = Trace1([&](Tracer& t) {
    Tensor s = builder::ndarray({4, 6}, proto::FLOAT32, Buffer::kSbuf, "s");
    isa::memset(s.Slice(1, 0, 5), 1.0f);  // all but column 5
    Tensor out = t.Allocate({6, 4}, proto::FLOAT32, Buffer::kSharedHbm, "o");
    isa::dma_copy(out.Permute({1, 0}), s);
    t.Output("out", out);
  });
  ASSERT_TRUE(graph.ok()) << graph.status();
  absl::StatusOr<std::map<std::string, HostArray>> out = RunGraph(*graph, {});
  ASSERT_FALSE(out.ok());
  EXPECT_THAT(out.status().message(),
              HasSubstr("reads never-written sbuf tensor 's' element [0, 5]"));
}

// nc_transpose on both engines at odd sizes, from a slice of a wider tile
// (rows not back to back), against an element-by-element transpose.
TEST(TransposingCopyTest, NcTransposeOddSizesOnBothEngines) {
  struct Shape {
    int64_t p, f;
    Engine engine;
    Buffer dst_space;
  };
  for (const Shape& s : {Shape{37, 53, Engine::kTensor, Buffer::kPsum},
                         Shape{128, 1, Engine::kTensor, Buffer::kPsum},
                         Shape{1, 77, Engine::kTensor, Buffer::kPsum},
                         Shape{29, 17, Engine::kVector, Buffer::kSbuf}}) {
    for (const proto::DType dtype : {proto::FLOAT32, proto::BFLOAT16}) {
      SCOPED_TRACE(::testing::Message()
                   << s.p << "x" << s.f << " " << DTypeName(dtype));
      absl::StatusOr<proto::Graph> graph = Trace1([&](Tracer& t) {
        Tensor x = t.Input("x", {s.p, s.f + 3}, dtype);
        Tensor wide =
            builder::ndarray({s.p, s.f + 3}, dtype, Buffer::kSbuf, "wide");
        isa::dma_copy(wide, x);
        Tensor tr = builder::ndarray({s.f, s.p}, dtype, s.dst_space, "tr");
        isa::nc_transpose(tr, wide.Slice(1, 2, s.f), s.engine);
        Tensor sb = builder::ndarray({s.f, s.p}, dtype, Buffer::kSbuf, "sb");
        isa::tensor_copy(sb, tr);
        Tensor out = t.Allocate({s.f, s.p}, dtype, Buffer::kSharedHbm, "o");
        isa::dma_copy(out, sb);
        t.Output("out", out);
      });
      ASSERT_TRUE(graph.ok()) << graph.status();
      // Small integers: exact in bf16 too.
      std::vector<float> x(s.p * (s.f + 3));
      for (size_t i = 0; i < x.size(); ++i) x[i] = static_cast<float>(i % 251);
      absl::StatusOr<std::map<std::string, HostArray>> out =
          RunGraph(*graph, {Floats("x", {s.p, s.f + 3}, x)});
      ASSERT_TRUE(out.ok()) << out.status();
      EXPECT_EQ(out->at("out").f32,
                TransposedBlock(x, s.f + 3, 0, 2, s.p, s.f));
    }
  }
}

}  // namespace
}  // namespace nkigraph
