// Views and the access patterns they turn into: slicing, selecting,
// reshaping, permuting, broadcasting and dynamic offsets, plus the tiled
// ranges kernels walk them with.
#include <cstdint>
#include <utility>
#include <vector>

#include "builder/tiling.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "ops/access_pattern.h"
#include "tests/test_util.h"

namespace nkigraph {
namespace {

using builder::Buffer;
using builder::OobMode;
using builder::Tensor;
using builder::Tracer;
namespace isa = builder::isa;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::Pair;
using testing::Trace1;

using Pairs = std::vector<std::pair<int64_t, int64_t>>;

// [stride, count] per dim of an operand, outermost first.
Pairs PatternOf(const proto::AccessPattern& ap) {
  Pairs pairs;
  for (int d = 0; d < ops::NumDims(ap); ++d) {
    pairs.emplace_back(ops::Stride(ap, d), ops::Count(ap, d));
  }
  return pairs;
}

proto::AccessPattern ApOf(const Tensor& view) {
  proto::AccessPattern ap;
  view.ToAccessPattern(&ap);
  return ap;
}

TEST(ViewTest, FullViewOfHbmTensorIsCompactRowMajor) {
  proto::AccessPattern ap;
  uint32_t id = 0;
  absl::StatusOr<proto::Graph> graph = Trace1([&](Tracer& t) {
    Tensor x = t.Input("x", {4, 5, 6}, proto::FLOAT32);
    id = x.id();
    EXPECT_EQ(x.rank(), 3);
    EXPECT_EQ(x.num_elements(), 120);
    EXPECT_THAT(x.shape(), ElementsAre(4, 5, 6));
    ap = ApOf(x);
  });
  ASSERT_TRUE(graph.ok()) << graph.status();
  EXPECT_EQ(ap.tensor_id(), id);
  EXPECT_EQ(ap.offset(), 0);
  EXPECT_THAT(PatternOf(ap), ElementsAre(Pair(30, 4), Pair(6, 5), Pair(1, 6)));
  EXPECT_FALSE(ap.has_dynamic());
}

TEST(ViewTest, SliceWithStartSizeAndStepMovesOffsetAndScalesStride) {
  proto::AccessPattern stepped, both;
  absl::StatusOr<proto::Graph> graph = Trace1([&](Tracer& t) {
    Tensor x = t.Input("x", {4, 5, 6}, proto::FLOAT32);
    // Rows 1 and 3 of dim 1: offset 1 * 6, stride 2 * 6.
    Tensor rows = x.Slice(1, 1, 2, 2);
    stepped = ApOf(rows);
    // Then elements 3..5 of dim 2: offset + 3.
    both = ApOf(rows.Slice(2, 3, 3));
  });
  ASSERT_TRUE(graph.ok()) << graph.status();
  EXPECT_EQ(stepped.offset(), 6);
  EXPECT_THAT(PatternOf(stepped),
              ElementsAre(Pair(30, 4), Pair(12, 2), Pair(1, 6)));
  EXPECT_EQ(both.offset(), 9);
  EXPECT_THAT(PatternOf(both),
              ElementsAre(Pair(30, 4), Pair(12, 2), Pair(1, 3)));
}

TEST(ViewTest, SlicedViewBecomesTheInstructionOperand) {
  absl::StatusOr<proto::Graph> graph = Trace1([&](Tracer& t) {
    Tensor x = t.Input("x", {4, 6}, proto::FLOAT32);
    Tensor tile = builder::ndarray({2, 3}, proto::FLOAT32, Buffer::kSbuf, "t");
    isa::dma_copy(tile, x.Slice(0, 1, 2, 2).Slice(1, 2, 3));
  });
  ASSERT_TRUE(graph.ok()) << graph.status();
  ASSERT_EQ(graph->streams(0).instructions_size(), 1);
  const proto::Instruction& copy = graph->streams(0).instructions(0);
  ASSERT_EQ(copy.operands_size(), 2);
  const proto::AccessPattern& src = testing::OperandOf(copy, "src");
  EXPECT_EQ(src.tensor_id(), 1u);
  EXPECT_EQ(src.offset(), 1 * 6 + 2);
  EXPECT_THAT(PatternOf(src), ElementsAre(Pair(12, 2), Pair(1, 3)));
  const proto::AccessPattern& dst = testing::OperandOf(copy, "dst");
  EXPECT_EQ(dst.tensor_id(), 2u);
  EXPECT_THAT(PatternOf(dst), ElementsAre(Pair(3, 2), Pair(1, 3)));
}

TEST(ViewTest, SelectDropsTheDimOfAnHbmView) {
  proto::AccessPattern ap;
  absl::StatusOr<proto::Graph> graph = Trace1([&](Tracer& t) {
    Tensor x = t.Input("x", {4, 5, 6}, proto::FLOAT32);
    Tensor row = x.Select(1, 2);
    EXPECT_EQ(row.rank(), 2);
    ap = ApOf(row);
  });
  ASSERT_TRUE(graph.ok()) << graph.status();
  EXPECT_EQ(ap.offset(), 12);
  EXPECT_THAT(PatternOf(ap), ElementsAre(Pair(30, 4), Pair(1, 6)));
}

TEST(ViewTest, SelectKeepsThePartitionDimOfAnSbufViewWithCountOne) {
  proto::AccessPattern partition, column;
  absl::StatusOr<proto::Graph> graph = Trace1([&](Tracer& t) {
    Tensor s = t.Allocate({8, 16}, proto::FLOAT32, Buffer::kSbuf, "s");
    Tensor p3 = s.Select(0, 3);
    EXPECT_EQ(p3.rank(), 2);
    partition = ApOf(p3);
    // A free dim is dropped as in HBM.
    Tensor c5 = s.Select(1, 5);
    EXPECT_EQ(c5.rank(), 1);
    column = ApOf(c5);
  });
  ASSERT_TRUE(graph.ok()) << graph.status();
  EXPECT_EQ(partition.offset(), 48);
  EXPECT_THAT(PatternOf(partition), ElementsAre(Pair(16, 1), Pair(1, 16)));
  EXPECT_EQ(column.offset(), 5);
  EXPECT_THAT(PatternOf(column), ElementsAre(Pair(16, 8)));
}

TEST(ViewTest, ReshapeMergesAndSplitsContiguousDims) {
  proto::AccessPattern merged, split, sliced_rows, outer_merge;
  absl::StatusOr<proto::Graph> graph = Trace1([&](Tracer& t) {
    Tensor x = t.Input("x", {4, 6}, proto::FLOAT32);
    merged = ApOf(x.Reshape({24}));
    split = ApOf(x.Reshape({2, 2, 6}));
    // Whole rows of a slice are still contiguous.
    sliced_rows = ApOf(x.Slice(0, 1, 2).Reshape({12}));
    // A column slice: the inner dim is strided, but the two outer dims of
    // [4, 5, 3] out of [4, 5, 6] merge (stride 30 == 5 * 6).
    Tensor y = t.Input("y", {4, 5, 6}, proto::FLOAT32);
    outer_merge = ApOf(y.Slice(2, 0, 3).Reshape({20, 3}));
  });
  ASSERT_TRUE(graph.ok()) << graph.status();
  EXPECT_EQ(merged.offset(), 0);
  EXPECT_THAT(PatternOf(merged), ElementsAre(Pair(1, 24)));
  EXPECT_THAT(PatternOf(split),
              ElementsAre(Pair(12, 2), Pair(6, 2), Pair(1, 6)));
  EXPECT_EQ(sliced_rows.offset(), 6);
  EXPECT_THAT(PatternOf(sliced_rows), ElementsAre(Pair(1, 12)));
  EXPECT_THAT(PatternOf(outer_merge), ElementsAre(Pair(6, 20), Pair(1, 3)));
}

TEST(ViewTest, ReshapeOfANonContiguousColumnSliceIsRefused) {
  bool reshaped_valid = true;
  absl::StatusOr<proto::Graph> graph = Trace1([&](Tracer& t) {
    Tensor x = t.Input("x", {4, 6}, proto::FLOAT32);
    Tensor columns = x.Slice(1, 0, 2);  // [4, 2], strides (6, 1)
    reshaped_valid = columns.Reshape({8}).valid();
  });
  EXPECT_FALSE(reshaped_valid);
  ASSERT_FALSE(graph.ok());
  EXPECT_THAT(graph.status().message(), HasSubstr("Reshape of 'x'"));
  EXPECT_THAT(graph.status().message(), HasSubstr("from [4, 2] to [8]"));
  EXPECT_THAT(graph.status().message(), HasSubstr("without a copy"));
}

TEST(ViewTest, ReshapeWithADifferentElementCountIsRefused) {
  absl::StatusOr<proto::Graph> graph = Trace1([&](Tracer& t) {
    Tensor x = t.Input("x", {4, 6}, proto::FLOAT32);
    x.Reshape({5, 5});
  });
  ASSERT_FALSE(graph.ok());
  EXPECT_THAT(graph.status().message(),
              HasSubstr("from [4, 6] to [5, 5]: element counts differ"));
}

TEST(ViewTest, OnChipReshapeKeepsThePartitionDimAndReshapesFreeDims) {
  proto::AccessPattern ap;
  absl::StatusOr<proto::Graph> graph = Trace1([&](Tracer& t) {
    Tensor s = t.Allocate({8, 4, 6}, proto::FLOAT32, Buffer::kSbuf, "s");
    ap = ApOf(s.Reshape({8, 24}));
  });
  ASSERT_TRUE(graph.ok()) << graph.status();
  EXPECT_THAT(PatternOf(ap), ElementsAre(Pair(24, 8), Pair(1, 24)));
}

TEST(ViewTest, OnChipReshapeThatChangesThePartitionDimIsRefused) {
  absl::StatusOr<proto::Graph> graph = Trace1([&](Tracer& t) {
    Tensor s = t.Allocate({8, 24}, proto::FLOAT32, Buffer::kSbuf, "s");
    s.Reshape({16, 12});
  });
  ASSERT_FALSE(graph.ok());
  EXPECT_THAT(graph.status().message(),
              HasSubstr("Reshape of on-chip 's' from [8, 24] to [16, 12] "
                        "changes the partition dim"));
}

TEST(ViewTest, PermuteOfAnHbmViewReordersStrides) {
  proto::AccessPattern transposed, rotated;
  absl::StatusOr<proto::Graph> graph = Trace1([&](Tracer& t) {
    Tensor x = t.Input("x", {4, 6}, proto::FLOAT32);
    transposed = ApOf(x.Permute({1, 0}));
    Tensor y = t.Input("y", {4, 5, 6}, proto::FLOAT32);
    rotated = ApOf(y.Slice(0, 1, 2).Permute({2, 0, 1}));
  });
  ASSERT_TRUE(graph.ok()) << graph.status();
  EXPECT_THAT(PatternOf(transposed), ElementsAre(Pair(1, 6), Pair(6, 4)));
  EXPECT_EQ(rotated.offset(), 30);
  EXPECT_THAT(PatternOf(rotated),
              ElementsAre(Pair(1, 6), Pair(30, 2), Pair(6, 5)));
}

TEST(ViewTest, PermuteOfAnOnChipViewMayReorderOnlyFreeDims) {
  proto::AccessPattern free_swapped;
  absl::StatusOr<proto::Graph> graph = Trace1([&](Tracer& t) {
    Tensor s = t.Allocate({8, 4, 6}, proto::FLOAT32, Buffer::kSbuf, "s");
    free_swapped = ApOf(s.Permute({0, 2, 1}));
  });
  ASSERT_TRUE(graph.ok()) << graph.status();
  EXPECT_THAT(PatternOf(free_swapped),
              ElementsAre(Pair(24, 8), Pair(1, 6), Pair(6, 4)));

  absl::StatusOr<proto::Graph> refused = Trace1([&](Tracer& t) {
    Tensor s = t.Allocate({8, 4, 6}, proto::FLOAT32, Buffer::kSbuf, "s");
    s.Permute({1, 0, 2});
  });
  ASSERT_FALSE(refused.ok());
  EXPECT_THAT(refused.status().message(),
              HasSubstr("Permute of on-chip 's' must keep the partition dim "
                        "first"));
}

TEST(ViewTest, PermuteWithAnOrderThatIsNotAPermutationIsRefused) {
  absl::StatusOr<proto::Graph> graph = Trace1([&](Tracer& t) {
    Tensor x = t.Input("x", {4, 6}, proto::FLOAT32);
    x.Permute({0, 0});
  });
  ASSERT_FALSE(graph.ok());
  EXPECT_THAT(graph.status().message(),
              HasSubstr("[0, 0] is not a permutation of 2 dims"));
}

TEST(ViewTest, BroadcastInsertsAStrideZeroDim) {
  proto::AccessPattern hbm, sbuf;
  absl::StatusOr<proto::Graph> graph = Trace1([&](Tracer& t) {
    Tensor x = t.Input("x", {4, 6}, proto::FLOAT32);
    Tensor b = x.Broadcast(1, 3);
    EXPECT_EQ(b.num_elements(), 72);
    hbm = ApOf(b);
    Tensor col = t.Allocate({8, 1}, proto::FLOAT32, Buffer::kSbuf, "col");
    sbuf = ApOf(col.Broadcast(2, 16));
  });
  ASSERT_TRUE(graph.ok()) << graph.status();
  EXPECT_THAT(PatternOf(hbm), ElementsAre(Pair(6, 4), Pair(0, 3), Pair(1, 6)));
  EXPECT_THAT(PatternOf(sbuf),
              ElementsAre(Pair(1, 8), Pair(1, 1), Pair(0, 16)));
}

TEST(ViewTest, BroadcastBeforeThePartitionDimOfAnOnChipViewIsRefused) {
  absl::StatusOr<proto::Graph> graph = Trace1([&](Tracer& t) {
    Tensor col = t.Allocate({8, 1}, proto::FLOAT32, Buffer::kSbuf, "col");
    col.Broadcast(0, 2);
  });
  ASSERT_FALSE(graph.ok());
  EXPECT_THAT(graph.status().message(),
              HasSubstr("Broadcast of 'col': cannot insert 2 copies at dim 0"));
}

TEST(ViewTest, WithScalarOffsetFillsTheDynamicOffset) {
  proto::AccessPattern ap;
  uint32_t index_id = 0;
  absl::StatusOr<proto::Graph> graph = Trace1([&](Tracer& t) {
    Tensor table = t.Input("table", {10, 6}, proto::FLOAT32);
    Tensor index = t.Allocate({1, 4}, proto::INT32, Buffer::kSbuf, "index");
    index_id = index.id();
    ap = ApOf(table.Slice(0, 0, 1).WithScalarOffset(index.Slice(1, 2, 1), 0,
                                                    OobMode::kSkip));
  });
  ASSERT_TRUE(graph.ok()) << graph.status();
  EXPECT_EQ(ap.offset(), 0);
  EXPECT_THAT(PatternOf(ap), ElementsAre(Pair(6, 1), Pair(1, 6)));
  ASSERT_TRUE(ap.has_dynamic());
  const proto::DynamicOffset& dyn = ap.dynamic();
  EXPECT_EQ(dyn.kind(), proto::DynamicOffset::SCALAR);
  EXPECT_EQ(dyn.tensor_id(), index_id);
  EXPECT_EQ(dyn.offset_element(), 2);
  EXPECT_EQ(dyn.offset_stride(), 0);
  EXPECT_EQ(dyn.indirect_dim(), 0u);
  EXPECT_EQ(dyn.oob_mode(), proto::DynamicOffset::OOB_SKIP);
}

TEST(ViewTest, WithScalarOffsetNeedsAOneElementIndex) {
  absl::StatusOr<proto::Graph> graph = Trace1([&](Tracer& t) {
    Tensor table = t.Input("table", {10, 6}, proto::FLOAT32);
    Tensor index = t.Allocate({1, 4}, proto::INT32, Buffer::kSbuf, "index");
    table.WithScalarOffset(index, 0);
  });
  ASSERT_FALSE(graph.ok());
  EXPECT_THAT(graph.status().message(),
              HasSubstr("scalar offset into 'table' must be a one-element "
                        "index view"));
}

TEST(ViewTest, WithVectorOffsetOnDimZeroZeroesDimZerosStride) {
  proto::AccessPattern ap;
  uint32_t index_id = 0;
  absl::StatusOr<proto::Graph> graph = Trace1([&](Tracer& t) {
    Tensor table = t.Input("table", {10, 6}, proto::FLOAT32);
    // Column 1 of a [4, 2] index tile: entries at flat 1, 3, 5, 7.
    Tensor index = t.Allocate({4, 2}, proto::INT32, Buffer::kSbuf, "index");
    index_id = index.id();
    ap = ApOf(table.Slice(0, 0, 4).WithVectorOffset(index.Select(1, 1), 0));
  });
  ASSERT_TRUE(graph.ok()) << graph.status();
  EXPECT_THAT(PatternOf(ap), ElementsAre(Pair(0, 4), Pair(1, 6)));
  ASSERT_TRUE(ap.has_dynamic());
  const proto::DynamicOffset& dyn = ap.dynamic();
  EXPECT_EQ(dyn.kind(), proto::DynamicOffset::VECTOR);
  EXPECT_EQ(dyn.tensor_id(), index_id);
  EXPECT_EQ(dyn.offset_element(), 1);
  EXPECT_EQ(dyn.offset_stride(), 2);
  EXPECT_EQ(dyn.indirect_dim(), 0u);
  EXPECT_EQ(dyn.oob_mode(), proto::DynamicOffset::OOB_ERROR);
}

TEST(ViewTest, WithVectorOffsetOnAnotherDimKeepsDimZerosStride) {
  proto::AccessPattern ap;
  absl::StatusOr<proto::Graph> graph = Trace1([&](Tracer& t) {
    Tensor table = t.Input("table", {4, 10, 6}, proto::FLOAT32);
    Tensor index = t.Allocate({4, 1}, proto::INT32, Buffer::kSbuf, "index");
    ap = ApOf(table.Select(1, 0).WithVectorOffset(index, 1, OobMode::kSkip));
  });
  ASSERT_TRUE(graph.ok()) << graph.status();
  EXPECT_THAT(PatternOf(ap), ElementsAre(Pair(60, 4), Pair(1, 6)));
  EXPECT_EQ(ap.dynamic().kind(), proto::DynamicOffset::VECTOR);
  EXPECT_EQ(ap.dynamic().offset_stride(), 1);
  EXPECT_EQ(ap.dynamic().indirect_dim(), 1u);
  EXPECT_EQ(ap.dynamic().oob_mode(), proto::DynamicOffset::OOB_SKIP);
}

TEST(ViewTest, VectorOffsetGatherIsRecordedOnTheDmaOperand) {
  absl::StatusOr<proto::Graph> graph = Trace1([&](Tracer& t) {
    Tensor table = t.Input("table", {10, 6}, proto::FLOAT32);
    Tensor index = t.Allocate({4, 2}, proto::INT32, Buffer::kSbuf, "index");
    Tensor rows = t.Allocate({4, 6}, proto::FLOAT32, Buffer::kSbuf, "rows");
    isa::dma_copy(rows, table.Slice(0, 0, 4).WithVectorOffset(
                            index.Select(1, 1), 0, OobMode::kSkip));
  });
  ASSERT_TRUE(graph.ok()) << graph.status();
  ASSERT_EQ(graph->streams(0).instructions_size(), 1);
  const proto::Instruction& copy = graph->streams(0).instructions(0);
  const proto::AccessPattern& src = testing::OperandOf(copy, "src");
  EXPECT_THAT(PatternOf(src), ElementsAre(Pair(0, 4), Pair(1, 6)));
  EXPECT_EQ(src.dynamic().kind(), proto::DynamicOffset::VECTOR);
  EXPECT_EQ(src.dynamic().tensor_id(), 2u);
  EXPECT_EQ(src.dynamic().offset_element(), 1);
  EXPECT_EQ(src.dynamic().offset_stride(), 2);
  EXPECT_EQ(src.dynamic().oob_mode(), proto::DynamicOffset::OOB_SKIP);
  // The destination carries no dynamic offset.
  EXPECT_FALSE(testing::OperandOf(copy, "dst").has_dynamic());
}

TEST(ViewTest, WithVectorOffsetNeedsOneIndexPerDimZeroEntry) {
  absl::StatusOr<proto::Graph> graph = Trace1([&](Tracer& t) {
    Tensor table = t.Input("table", {10, 6}, proto::FLOAT32);
    Tensor index = t.Allocate({3, 1}, proto::INT32, Buffer::kSbuf, "index");
    table.Slice(0, 0, 4).WithVectorOffset(index, 0);
  });
  ASSERT_FALSE(graph.ok());
  EXPECT_THAT(graph.status().message(),
              HasSubstr("vector offset into 'table' needs one index per "
                        "dim-0 entry (4)"));
}

TEST(ViewTest, TiledRangeYieldsFullTilesAndATail) {
  std::vector<builder::Tile> tiles;
  for (builder::Tile tile : builder::TiledRange(300, 128)) {
    tiles.push_back(tile);
  }
  ASSERT_EQ(tiles.size(), 3u);
  EXPECT_EQ(builder::TiledRange(300, 128).size(), 3);
  const std::vector<std::vector<int64_t>> expected = {
      {0, 0, 128}, {1, 128, 128}, {2, 256, 44}};
  for (size_t i = 0; i < tiles.size(); ++i) {
    EXPECT_EQ(
        (std::vector<int64_t>{tiles[i].index, tiles[i].offset, tiles[i].size}),
        expected[i])
        << "tile " << i;
  }
}

TEST(ViewTest, TiledRangeOfAnExactMultipleHasNoTail) {
  std::vector<int64_t> sizes;
  for (builder::Tile tile : builder::TiledRange(256, 128)) {
    sizes.push_back(tile.size);
  }
  EXPECT_THAT(sizes, ElementsAre(128, 128));
  EXPECT_EQ(builder::TiledRange(256, 128).size(), 2);
}

TEST(ViewTest, TiledRangeSmallerThanOneTileAndEmpty) {
  std::vector<int64_t> sizes;
  for (builder::Tile tile : builder::TiledRange(5, 128)) {
    EXPECT_EQ(tile.index, 0);
    EXPECT_EQ(tile.offset, 0);
    sizes.push_back(tile.size);
  }
  EXPECT_THAT(sizes, ElementsAre(5));
  EXPECT_EQ(builder::TiledRange(5, 128).size(), 1);
  int visited = 0;
  for (builder::Tile tile : builder::TiledRange(0, 128)) {
    (void)tile;
    ++visited;
  }
  EXPECT_EQ(visited, 0);
  EXPECT_EQ(builder::TiledRange(0, 128).size(), 0);
}

}  // namespace
}  // namespace nkigraph
