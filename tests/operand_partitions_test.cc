// The operand facts the cost model and the page share
// (ops/access_pattern.h): the dtype an operand reads, its partition row,
// and the partitions it touches. Expected values worked by hand.
#include <cstdint>
#include <initializer_list>

#include "gtest/gtest.h"
#include "ops/access_pattern.h"
#include "proto/nkigraph.pb.h"

namespace nkigraph::ops {
namespace {

proto::Tensor OnChip(proto::DType dtype, int64_t partitions, int64_t row,
                     int64_t partition_offset) {
  proto::Tensor t;
  t.set_space(proto::SBUF);
  t.set_dtype(dtype);
  t.add_shape(partitions);
  t.add_shape(row);
  t.set_partition_offset(partition_offset);
  return t;
}

proto::AccessPattern Pattern(int64_t offset,
                             std::initializer_list<int64_t> pattern) {
  proto::AccessPattern ap;
  ap.set_tensor_id(1);
  ap.set_offset(offset);
  for (int64_t v : pattern) ap.add_pattern(v);
  return ap;
}

// float32 [8, 4] from partition 16: element e lies in partition
// 16 + e / 4.
TEST(OperandPartitionsTest, WhicheverWayDimZeroWalks) {
  const proto::Tensor t = OnChip(proto::FLOAT32, 8, 4, 16);
  struct Case {
    const char* what;
    proto::AccessPattern ap;
    int64_t lo;
    int64_t hi;
  };
  const Case cases[] = {
      // Offset 8 is partition 2; three partitions down: 2, 3, 4.
      {"positive stride", Pattern(8, {4, 3, 1, 4}), 18, 21},
      // Offset 21 is partition 5, column 1; stride -4 walks partitions 5,
      // 4, 3. Lowest element 21 - 8 = 13 (partition 3), highest 21 + 1 =
      // 22 (partition 5).
      {"negative stride (refused by validation)", Pattern(21, {-4, 3, 1, 2}),
       19, 22},
      // Offset 13 is partition 3, columns 1 and 2.
      {"one partition", Pattern(13, {4, 1, 1, 2}), 19, 20},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.what);
    const PartitionSpan span = OperandPartitions(c.ap, t);
    EXPECT_EQ(span.lo, c.lo);
    EXPECT_EQ(span.hi, c.hi);
  }
}

TEST(OperandPartitionsTest, BitcastViewCountsItsOwnElements) {
  // bfloat16 [4, 8] read as int32: a partition row of 8 x 2 / 4 = 4
  // elements, so offset 4 is partition 1 and two partitions reach 2.
  const proto::Tensor t = OnChip(proto::BFLOAT16, 4, 8, 0);
  proto::AccessPattern ap = Pattern(4, {4, 2, 1, 4});
  ap.set_view_dtype(proto::INT32);
  EXPECT_EQ(OperandDType(ap, t), proto::INT32);
  EXPECT_EQ(OperandRowElements(ap, t), 4);
  const PartitionSpan span = OperandPartitions(ap, t);
  EXPECT_EQ(span.lo, 1);
  EXPECT_EQ(span.hi, 3);

  // Without the view the same offset is column 4 of partition 0.
  ap.set_view_dtype(proto::DTYPE_UNSPECIFIED);
  EXPECT_EQ(OperandDType(ap, t), proto::BFLOAT16);
  EXPECT_EQ(OperandRowElements(ap, t), 8);
  EXPECT_EQ(OperandPartitions(Pattern(4, {8, 2, 1, 4}), t).lo, 0);
  EXPECT_EQ(OperandPartitions(Pattern(4, {8, 2, 1, 4}), t).hi, 2);
}

}  // namespace
}  // namespace nkigraph::ops
