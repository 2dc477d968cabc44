#include "ops/access_pattern.h"

#include "absl/strings/str_cat.h"

namespace nkigraph::ops {

bool IsOnChip(proto::MemorySpace space) {
  return space == proto::SBUF || space == proto::PSUM;
}

bool IsHbm(proto::MemorySpace space) {
  return space == proto::HBM || space == proto::SHARED_HBM;
}

absl::StatusOr<int64_t> ShapeElements(
    const google::protobuf::RepeatedField<int64_t>& shape) {
  if (shape.empty() || shape.size() > kMaxDims) {
    return absl::InvalidArgumentError(
        absl::StrCat("shape has ", shape.size(), " dims (1 to ", kMaxDims,
                     " allowed)"));
  }
  int64_t elements = 1;
  for (int64_t dim : shape) {
    if (dim < 1) {
      return absl::InvalidArgumentError(
          absl::StrCat("shape dim ", dim, " is not positive"));
    }
    if (__builtin_mul_overflow(elements, dim, &elements) ||
        elements > kMaxElements) {
      return absl::InvalidArgumentError("shape has too many elements");
    }
  }
  return elements;
}

int64_t RowElements(const proto::Tensor& tensor) {
  const int64_t* shape = tensor.shape().data();
  int64_t row = 1;
  for (int d = 1; d < tensor.shape_size(); ++d) row *= shape[d];
  return row;
}

int64_t DimStride(const proto::Tensor& tensor, int d) {
  int64_t stride = 1;
  for (int i = tensor.shape_size() - 1; i > d; --i) stride *= tensor.shape(i);
  return stride;
}

int64_t ApElements(const proto::AccessPattern& ap) {
  const int64_t* pattern = ap.pattern().data();
  int64_t elements = 1;
  for (int i = 1; i < ap.pattern_size(); i += 2) elements *= pattern[i];
  return elements;
}

absl::StatusOr<FlatExtent> StaticExtent(const proto::AccessPattern& ap,
                                        int first_dim) {
  if (ap.pattern_size() % 2 != 0) {
    return absl::InvalidArgumentError(
        "access pattern is not a list of [stride, count] pairs");
  }
  if (NumDims(ap) < 1 || NumDims(ap) > kMaxDims) {
    return absl::InvalidArgumentError(absl::StrCat(
        "access pattern has ", NumDims(ap), " dims (1 to ", kMaxDims,
        " allowed)"));
  }
  if (ap.offset() < -kMaxElements || ap.offset() > kMaxElements) {
    return absl::InvalidArgumentError(
        absl::StrCat("access pattern offset ", ap.offset(), " is absurd"));
  }
  FlatExtent extent{ap.offset(), ap.offset()};
  int64_t elements = 1;
  const int64_t* pattern = ap.pattern().data();
  for (int d = 0; d < NumDims(ap); ++d) {
    const int64_t stride = pattern[2 * d];
    const int64_t count = pattern[2 * d + 1];
    if (count < 1 || count > kMaxElements) {
      return absl::InvalidArgumentError(
          absl::StrCat("access pattern dim ", d, " has count ", count));
    }
    if (stride < -kMaxElements || stride > kMaxElements) {
      return absl::InvalidArgumentError(
          absl::StrCat("access pattern dim ", d, " has stride ", stride));
    }
    if (__builtin_mul_overflow(elements, count, &elements) ||
        elements > kMaxElements) {
      return absl::InvalidArgumentError("access pattern has too many elements");
    }
    if (d < first_dim) continue;
    // Each factor is below 2^40, but their product need not fit.
    int64_t reach = 0;
    int64_t& end = stride < 0 ? extent.lo : extent.hi;
    if (__builtin_mul_overflow(stride, count - 1, &reach) ||
        __builtin_add_overflow(end, reach, &end)) {
      return absl::InvalidArgumentError(
          absl::StrCat("access pattern dim ", d, " (stride ", stride,
                       ", count ", count, ") reaches beyond the int64 range"));
    }
  }
  return extent;
}

absl::Status CheckAccessPattern(const proto::AccessPattern& ap,
                                const proto::Tensor& tensor) {
  absl::StatusOr<FlatExtent> extent = StaticExtent(ap);
  if (!extent.ok()) return extent.status();
  const int64_t* shape = tensor.shape().data();
  int64_t tensor_elements = 1;
  for (int d = 0; d < tensor.shape_size(); ++d) tensor_elements *= shape[d];
  const auto out_of_bounds = [&](int64_t lo, int64_t hi, int64_t size,
                                 absl::string_view what) {
    return absl::OutOfRangeError(absl::StrCat(
        "access outside tensor '", tensor.name(), "': ", what, " [", lo, ", ",
        hi, "] not within [0, ", size - 1, "]"));
  };
  if (extent->lo < 0 || extent->hi >= tensor_elements) {
    return out_of_bounds(extent->lo, extent->hi, tensor_elements,
                         "flat elements");
  }
  if (!IsOnChip(tensor.space())) return absl::OkStatus();

  // On chip: dim 0 walks partitions, the other dims stay in one row.
  const int64_t row = RowElements(tensor);
  const int64_t pcount = Count(ap, 0);
  if (pcount > 1 && Stride(ap, 0) != row) {
    return absl::InvalidArgumentError(absl::StrCat(
        "on-chip access pattern of '", tensor.name(),
        "' must walk partitions in its first dim (stride ", row, "), not ",
        Stride(ap, 0)));
  }
  const int64_t first_partition = ap.offset() / row;
  if (first_partition + pcount > shape[0]) {
    return out_of_bounds(first_partition, first_partition + pcount - 1,
                         shape[0], "partitions");
  }
  int64_t free_lo = ap.offset() % row;
  int64_t free_hi = free_lo;
  for (int d = 1; d < NumDims(ap); ++d) {
    const int64_t reach = Stride(ap, d) * (Count(ap, d) - 1);
    (reach < 0 ? free_lo : free_hi) += reach;
  }
  if (free_lo < 0 || free_hi >= row) {
    return out_of_bounds(free_lo, free_hi, row, "elements of a partition row");
  }
  if (NumDims(ap) > 5) {
    return absl::InvalidArgumentError(absl::StrCat(
        "on-chip access pattern of '", tensor.name(), "' has ",
        NumDims(ap) - 1, " free dims (the hardware allows 4)"));
  }
  return absl::OkStatus();
}

}  // namespace nkigraph::ops
