#include "ops/operand_facts.h"

#include "ops/access_pattern.h"
#include "util/dtype.h"

namespace nkigraph::ops {
namespace {

// Sets the row fields of `f` when `ap`'s elements lie in rows; leaves
// as_rows false otherwise (a dynamic offset, strided elements, two outer
// dims, on chip rows that are not the partitions).
void LayOutAsRows(const proto::Tensor& t, const proto::AccessPattern& ap,
                  OperandFacts& f) {
  if (ap.dynamic().kind() != proto::DynamicOffset::KIND_UNSPECIFIED) return;
  const int nd = NumDims(ap);
  // Merge the inner dims into one contiguous run while they are (never
  // across partitions: on chip dim 0 walks them).
  int d = nd - 1;
  while (d >= 0 && Count(ap, d) == 1) --d;
  int64_t rows = 1;
  int64_t cols = 1;
  int64_t flat_stride = 0;
  if (d >= 0) {  // else a single element
    if (Stride(ap, d) != 1 || (f.on_chip && d == 0)) return;
    cols = Count(ap, d);
    for (--d; d >= (f.on_chip ? 1 : 0); --d) {
      if (Count(ap, d) == 1) continue;
      if (Stride(ap, d) != cols) break;
      cols *= Count(ap, d);
    }
    for (; d >= 0; --d) {
      if (Count(ap, d) == 1) continue;
      if (rows != 1) return;  // two outer dims
      // On chip the rows are the partitions: every reader takes them so
      // (partitions × free size). A free dim left outside the run (a
      // broadcast over a middle dim of a one-partition tile) is no row.
      if (f.on_chip && d != 0) return;
      rows = Count(ap, d);
      flat_stride = Stride(ap, d);
    }
  }
  const int64_t flat = ap.offset();
  if (f.on_chip) {
    const int64_t row = RowElements(t);
    if (rows != 1 && flat_stride % row != 0) return;
    f.partition = t.partition_offset() + flat / row;
    f.byte = t.address() + (flat % row) * f.esize;
    f.partition_step = rows != 1 ? flat_stride / row : 0;
    f.byte_step = 0;
  } else {
    f.partition = 0;
    f.byte = t.address() + flat * f.esize;
    f.partition_step = 0;
    f.byte_step = rows != 1 ? flat_stride * f.esize : 0;
  }
  f.as_rows = true;
  f.rows = rows;
  f.cols = cols;
  f.flat = flat;
  f.flat_stride = flat_stride;
}

}  // namespace

OperandFacts ComputeOperandFacts(const proto::Tensor& tensor,
                                 const proto::AccessPattern& ap) {
  OperandFacts f;
  f.known = true;
  f.on_chip = IsOnChip(tensor.space());
  f.is_float = IsFloatDType(tensor.dtype());
  f.esize = DTypeSize(tensor.dtype());
  int64_t elements = f.on_chip ? RowElements(tensor) : 1;
  if (!f.on_chip) {
    for (int64_t d : tensor.shape()) elements *= d;
  }
  f.extent_lo = static_cast<int64_t>(tensor.address());
  f.extent_hi = f.extent_lo + elements * f.esize;
  LayOutAsRows(tensor, ap, f);
  return f;
}

}  // namespace nkigraph::ops
