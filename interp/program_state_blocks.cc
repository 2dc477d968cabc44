// ProgramState's operands as strided blocks (ExecContext::ReadBlock,
// WriteBlockInPlace): copies and transposes move them in one loop instead
// of through a buffer in element order.
#include "interp/program_state.h"
#include "ops/access_pattern.h"
#include "util/dtype.h"
#include "util/status_macros.h"

namespace nkigraph::interp {

bool ProgramState::LayoutAsBlock(int i, int64_t* byte,
                                 ops::ConstBlock* block) const {
  const ops::OperandInfo& op = view_.operand(i);
  const proto::Tensor& t = *op.tensor;
  const proto::AccessPattern& ap = *op.ap;
  if (any_skipped_ ||
      ap.dynamic().kind() != proto::DynamicOffset::KIND_UNSPECIFIED) {
    return false;
  }
  const bool on_chip = ops::IsOnChip(t.space());
  const int64_t row = on_chip ? ops::RowElements(t) : 0;
  if (on_chip && row <= 0) return false;
  // On chip a stride of whole rows steps partitions, any other stays in a
  // partition row: the two never merge into one dim.
  auto partition_step = [&](int64_t stride) {
    return on_chip && stride % row == 0;
  };
  struct Dim {
    int64_t stride;
    int64_t count;
  };
  Dim dims[2];
  int nd = 0;
  for (int d = 0; d < ops::NumDims(ap); ++d) {
    const int64_t stride = ops::Stride(ap, d);
    const int64_t count = ops::Count(ap, d);
    if (count == 1) continue;
    if (nd > 0 && dims[nd - 1].stride == stride * count &&
        partition_step(dims[nd - 1].stride) == partition_step(stride)) {
      dims[nd - 1] = {stride, dims[nd - 1].count * count};
      continue;
    }
    if (nd == 2) return false;
    dims[nd++] = {stride, count};
  }
  const int64_t esize = DTypeSize(t.dtype());
  const Region& region = memory_.RegionFor(t, rank_, core_);
  const int64_t base = ap.offset();
  int64_t step[2] = {esize, esize};
  // On chip the free dims must keep every element in its partition row,
  // where bytes follow elements (Walk's runs assume the same).
  int64_t low = 0, high = 0;
  for (int d = 0; d < nd; ++d) {
    if (partition_step(dims[d].stride)) {
      step[d] = dims[d].stride / row * region.partition_bytes;
      continue;
    }
    step[d] = dims[d].stride * esize;
    const int64_t reach = dims[d].stride * (dims[d].count - 1);
    (reach < 0 ? low : high) += reach;
  }
  if (on_chip && (base % row + low < 0 || base % row + high >= row)) {
    return false;
  }
  *byte = DeviceMemory::ByteOffset(t, base, region.partition_bytes);
  ops::ConstBlock b;
  if (nd == 2) {
    b.rows = dims[0].count;
    b.cols = dims[1].count;
    b.row_stride = step[0];
    b.col_stride = step[1];
  } else {
    b.rows = 1;
    b.cols = nd == 1 ? dims[0].count : 1;
    b.col_stride = step[0];
    b.row_stride = b.cols * b.col_stride;
  }
  *block = b;
  return true;
}

absl::StatusOr<ops::ConstBlock> ProgramState::ReadBlock(int i) {
  int64_t byte = 0;
  ops::ConstBlock block;
  if (!LayoutAsBlock(i, &byte, &block)) return ops::ConstBlock{};
  NKI_RETURN_IF_ERROR(CheckReadable(i));
  const Region& region =
      memory_.RegionFor(*view_.operand(i).tensor, rank_, core_);
  block.data = &region.data[byte];
  return block;
}

ops::MutableBlock ProgramState::WriteBlockInPlace(int i, int64_t cols) {
  int64_t byte = 0;
  ops::ConstBlock layout;
  if (!WriteCannotFail(i) || !LayoutAsBlock(i, &byte, &layout) ||
      !ops::ReshapeToCols(layout, cols)) {
    return ops::MutableBlock{};
  }
  MarkWritten(i);
  Region& region = memory_.RegionFor(*view_.operand(i).tensor, rank_, core_);
  return {&region.data[byte], layout.rows, layout.cols, layout.row_stride,
          layout.col_stride};
}

}  // namespace nkigraph::interp
