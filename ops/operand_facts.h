#ifndef NKIGRAPH_OPS_OPERAND_FACTS_H_
#define NKIGRAPH_OPS_OPERAND_FACTS_H_

// What executing an operand needs to know of where its elements lie, from
// its tensor and access pattern alone: worked out once when a stream is
// decoded (or an instruction bound for execution), so that an instruction
// executed a million times does not walk its pattern a million times.

#include <cstdint>

#include "proto/nkigraph.pb.h"

namespace nkigraph::ops {

struct OperandFacts {
  // Whether the fields below were worked out (ComputeOperandFacts); a view
  // made for checking only leaves them unknown.
  bool known = false;
  bool on_chip = false;
  bool is_float = false;
  int esize = 0;  // bytes per element
  // The bytes the operand's tensor occupies, as two operands' tensors are
  // compared for overlap (MayOverlap): one partition row on chip (the
  // partition ranges are not compared), the whole tensor in HBM.
  int64_t extent_lo = 0;
  int64_t extent_hi = 0;

  // Whether the elements are `rows` runs of `cols` contiguous elements (a
  // static operand: no dynamic offset): the partition rows of a tile, a
  // block of an HBM matrix, a single element.
  bool as_rows = false;
  int64_t rows = 0;
  int64_t cols = 0;
  int64_t flat = 0;         // the first element's flat index in the tensor
  int64_t flat_stride = 0;  // flat elements from one row's start to the next
  // Where the first element lies in its memory region, and the bytes from
  // one row's start to the next, each as partitions * partition_bytes +
  // bytes (partition_bytes: the region's partition size on chip, unused
  // in HBM, where the partition terms are 0). Regions of one core share
  // a partition size, so the facts hold for every rank.
  int64_t partition = 0;
  int64_t byte = 0;
  int64_t partition_step = 0;
  int64_t byte_step = 0;

  int64_t FirstByte(int64_t partition_bytes) const {
    return partition * partition_bytes + byte;
  }
  int64_t RowStride(int64_t partition_bytes) const {
    return partition_step * partition_bytes + byte_step;
  }
};

// The facts of operand `ap` of `tensor` (the viewed tensor for a bitcast
// view), which must have passed CheckAccessPattern.
OperandFacts ComputeOperandFacts(const proto::Tensor& tensor,
                                 const proto::AccessPattern& ap);

}  // namespace nkigraph::ops

#endif  // NKIGRAPH_OPS_OPERAND_FACTS_H_
