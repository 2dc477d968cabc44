#include "kernels/conv_common.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "builder/tracer.h"

namespace nkigraph::kernels {

int64_t ConvWindow::OutputLength(int64_t length) const {
  const int64_t span = length + pad_left + pad_right;
  const int64_t receptive_field = dilation * (kernel_size - 1) + 1;
  if (span < receptive_field || stride < 1) return 0;
  return (span - receptive_field) / stride + 1;
}

ClippedRun ClipRun(int64_t start, int64_t size, int64_t length) {
  ClippedRun run;
  const int64_t begin = std::clamp<int64_t>(start, 0, length);
  const int64_t end = std::clamp<int64_t>(start + size, 0, length);
  run.valid_start = begin;
  run.valid_size = std::max<int64_t>(0, end - begin);
  run.zeros_before = std::min(size, std::max<int64_t>(0, -start));
  run.zeros_after = size - run.zeros_before - run.valid_size;
  return run;
}

builder::Tensor SlidingWindows(const builder::Tensor& rows, int64_t start,
                               int64_t taps, int64_t width, builder::Loc loc) {
  if (!rows.valid()) return builder::Tensor();
  if (rows.rank() != 2 || start < 0 || taps < 1 || width < 1 ||
      start + taps + width - 2 >= rows.dim(1)) {
    rows.tracer()->RecordError(
        absl::StrCat("SlidingWindows over '", rows.name(), "' [",
                     absl::StrJoin(rows.shape(), ", "), "]: ", taps, " taps x ",
                     width, " columns from position ", start,
                     " leave the rows"),
        loc);
    return builder::Tensor();
  }
  const builder::Tensor::Dim row = rows.dims()[0];
  const builder::Tensor::Dim column = rows.dims()[1];
  const builder::Tensor first = rows.Slice(1, start, 1, 1, loc);
  return rows.Ap(
      {{column.stride, taps}, {row.stride, row.count}, {column.stride, width}},
      first.offset(), loc);
}

PsumRotation::PsumRotation(int64_t partitions, int64_t columns, int count) {
  for (int i = 0; i < count; ++i) {
    tiles_.push_back(builder::ndarray({partitions, columns}, proto::FLOAT32,
                                      builder::Buffer::kPsum,
                                      absl::StrCat("psum_", i)));
  }
}

const builder::Tensor& PsumRotation::Next() {
  const builder::Tensor& tile = tiles_[next_];
  next_ = (next_ + 1) % tiles_.size();
  return tile;
}

}  // namespace nkigraph::kernels
