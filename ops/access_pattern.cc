#include "ops/access_pattern.h"

#include <algorithm>

#include "absl/base/attributes.h"
#include "absl/base/optimization.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "util/dtype.h"

namespace nkigraph::ops {

bool IsOnChip(proto::MemorySpace space) {
  return space == proto::SBUF || space == proto::PSUM;
}

bool IsHbm(proto::MemorySpace space) {
  return space == proto::HBM || space == proto::SHARED_HBM;
}

absl::Status ViewedTensor(const proto::Tensor& tensor, proto::DType view,
                          proto::Tensor* viewed) {
  const int view_size = IsValidDType(view) ? DTypeSize(view) : 0;
  if (view_size == 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("bitcast view of '", tensor.name(), "' has dtype ",
                     static_cast<int>(view), ", which is not a dtype"));
  }
  const int rank = tensor.shape_size();
  if (rank < 1 || (IsOnChip(tensor.space()) && rank < 2)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "bitcast of '", tensor.name(), "' as ", DTypeName(view),
        ": it has no free dim to reinterpret (a bitcast changes the last "
        "dim's element count)"));
  }
  const int64_t last_bytes = tensor.shape(rank - 1) * DTypeSize(tensor.dtype());
  if (last_bytes % view_size != 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "bitcast of '", tensor.name(), "' (", DTypeName(tensor.dtype()),
        ", last dim ", tensor.shape(rank - 1), ") as ", DTypeName(view),
        ": the last dim's ", last_bytes, " bytes are not a whole number of ",
        view_size, "-byte elements"));
  }
  *viewed = tensor;
  viewed->set_dtype(view);
  viewed->set_shape(rank - 1, last_bytes / view_size);
  return absl::OkStatus();
}

proto::DType OperandDType(const proto::AccessPattern& ap,
                          const proto::Tensor& tensor) {
  return ap.view_dtype() != proto::DTYPE_UNSPECIFIED ? ap.view_dtype()
                                                     : tensor.dtype();
}

int64_t OperandRowElements(const proto::AccessPattern& ap,
                           const proto::Tensor& tensor) {
  int64_t row = RowElements(tensor);
  const int view_size = DTypeSize(ap.view_dtype());
  if (view_size > 0) row = row * DTypeSize(tensor.dtype()) / view_size;
  return std::max<int64_t>(row, 1);
}

PartitionSpan OperandPartitions(const proto::AccessPattern& ap,
                                const proto::Tensor& tensor) {
  const int64_t row = OperandRowElements(ap, tensor);
  int64_t lo = ap.offset(), hi = ap.offset();
  for (int d = 0; d < NumDims(ap); ++d) {
    const int64_t reach = Stride(ap, d) * (Count(ap, d) - 1);
    (reach < 0 ? lo : hi) += reach;
  }
  // Rounded down, also below zero (a pattern that starts before the
  // tensor, which validation refuses).
  auto partition = [row](int64_t element) {
    return element >= 0 ? element / row : -((-element + row - 1) / row);
  };
  return PartitionSpan{tensor.partition_offset() + partition(lo),
                       tensor.partition_offset() + partition(hi) + 1};
}

absl::StatusOr<int64_t> ShapeElements(
    const google::protobuf::RepeatedField<int64_t>& shape) {
  if (shape.empty() || shape.size() > kMaxDims) {
    return absl::InvalidArgumentError(absl::StrCat(
        "shape has ", shape.size(), " dims (1 to ", kMaxDims, " allowed)"));
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

PatternRef PatternOf(const proto::AccessPattern& ap) {
  PatternRef ref;
  ref.tensor_id = ap.tensor_id();
  ref.view_dtype = ap.view_dtype();
  ref.pattern_size = ap.pattern_size();
  ref.offset = ap.offset();
  ref.pattern = ap.pattern().data();
  ref.has_dynamic = ap.has_dynamic();
  if (ref.has_dynamic) {
    const proto::DynamicOffset& d = ap.dynamic();
    ref.dynamic =
        DynamicRef{d.kind(),          d.tensor_id(),    d.offset_element(),
                   d.offset_stride(), d.indirect_dim(), d.oob_mode()};
  }
  return ref;
}

int64_t ApElements(const proto::AccessPattern& ap) {
  return ApElements(ap.pattern().data(), ap.pattern_size());
}

namespace {

// What a pattern check found wrong. The checks run on every operand the
// tracer records, so they report a code and a dim, and the message is
// built only for a pattern that fails.
enum class Fault {
  kNone,
  kOddPattern,
  kDimCount,
  kOffset,
  kCount,
  kStride,
  kTooManyElements,
  kReach,
  kFlatBounds,
  kPartitionStride,
  kPartitionBounds,
  kRowBounds,
  kFreeDims,
};

// StaticExtent's checks and result without a Status; `*dim` names the dim
// at fault.
Fault ComputeExtent(const PatternRef& ap, int first_dim, FlatExtent* extent,
                    int* dim) {
  const int size = ap.pattern_size;
  if (size % 2 != 0) return Fault::kOddPattern;
  const int dims = size / 2;
  if (dims < 1 || dims > kMaxDims) return Fault::kDimCount;
  const int64_t offset = ap.offset;
  if (offset < -kMaxElements || offset > kMaxElements) return Fault::kOffset;
  *extent = FlatExtent{offset, offset};
  int64_t elements = 1;
  const int64_t* pattern = ap.pattern;
  for (int d = 0; d < dims; ++d) {
    *dim = d;
    const int64_t stride = pattern[2 * d];
    const int64_t count = pattern[2 * d + 1];
    if (count < 1 || count > kMaxElements) return Fault::kCount;
    if (stride < -kMaxElements || stride > kMaxElements) return Fault::kStride;
    if (__builtin_mul_overflow(elements, count, &elements) ||
        elements > kMaxElements) {
      return Fault::kTooManyElements;
    }
    if (d < first_dim) continue;
    // Each factor is below 2^40, but their product need not fit.
    int64_t reach = 0;
    int64_t& end = stride < 0 ? extent->lo : extent->hi;
    if (__builtin_mul_overflow(stride, count - 1, &reach) ||
        __builtin_add_overflow(end, reach, &end)) {
      return Fault::kReach;
    }
  }
  return Fault::kNone;
}

// CheckAccessPattern's checks without a Status. (The tensor's shape is
// read through one data() call: RepeatedField's accessors are not inlined
// across the protobuf library boundary.)
Fault ComputeBounds(const PatternRef& ap, const proto::Tensor& tensor,
                    int* dim) {
  FlatExtent extent;
  if (Fault f = ComputeExtent(ap, 0, &extent, dim); f != Fault::kNone) {
    return f;
  }
  const int64_t* shape = tensor.shape().data();
  const int rank = tensor.shape_size();
  int64_t row = 1;  // RowElements(tensor)
  for (int d = 1; d < rank; ++d) row *= shape[d];
  const int64_t tensor_elements = shape[0] * row;
  if (extent.lo < 0 || extent.hi >= tensor_elements) return Fault::kFlatBounds;
  if (!IsOnChip(tensor.space())) return Fault::kNone;

  // On chip: dim 0 walks partitions, the other dims stay in one row.
  const int64_t* pattern = ap.pattern;
  const int dims = ap.pattern_size / 2;
  const int64_t pcount = pattern[1];
  if (pcount > 1 && pattern[0] != row) return Fault::kPartitionStride;
  if (ap.offset / row + pcount > shape[0]) return Fault::kPartitionBounds;
  int64_t free_lo = ap.offset % row;
  int64_t free_hi = free_lo;
  for (int d = 1; d < dims; ++d) {
    const int64_t reach = pattern[2 * d] * (pattern[2 * d + 1] - 1);
    (reach < 0 ? free_lo : free_hi) += reach;
  }
  if (free_lo < 0 || free_hi >= row) return Fault::kRowBounds;
  if (dims > 5) return Fault::kFreeDims;
  return Fault::kNone;
}

absl::Status OutOfBounds(const proto::Tensor& tensor, int64_t lo, int64_t hi,
                         int64_t size, absl::string_view what) {
  return absl::OutOfRangeError(
      absl::StrCat("access outside tensor '", tensor.name(), "': ", what, " [",
                   lo, ", ", hi, "] not within [0, ", size - 1, "]"));
}

// The message for `fault`, recomputing what it needs. `tensor` is null for
// the extent checks, which do not look at a tensor.
ABSL_ATTRIBUTE_NOINLINE absl::Status FaultStatus(Fault fault, int dim,
                                                 const PatternRef& ap,
                                                 const proto::Tensor* tensor) {
  const auto num_dims = [&] { return ap.pattern_size / 2; };
  const auto stride = [&](int d) { return ap.pattern[2 * d]; };
  const auto count = [&](int d) { return ap.pattern[2 * d + 1]; };
  switch (fault) {
    case Fault::kNone:
      return absl::OkStatus();
    case Fault::kOddPattern:
      return absl::InvalidArgumentError(
          "access pattern is not a list of [stride, count] pairs");
    case Fault::kDimCount:
      return absl::InvalidArgumentError(absl::StrCat("access pattern has ",
                                                     num_dims(), " dims (1 to ",
                                                     kMaxDims, " allowed)"));
    case Fault::kOffset:
      return absl::InvalidArgumentError(
          absl::StrCat("access pattern offset ", ap.offset, " is absurd"));
    case Fault::kCount:
      return absl::InvalidArgumentError(
          absl::StrCat("access pattern dim ", dim, " has count ", count(dim)));
    case Fault::kStride:
      return absl::InvalidArgumentError(absl::StrCat(
          "access pattern dim ", dim, " has stride ", stride(dim)));
    case Fault::kTooManyElements:
      return absl::InvalidArgumentError("access pattern has too many elements");
    case Fault::kReach:
      return absl::InvalidArgumentError(absl::StrCat(
          "access pattern dim ", dim, " (stride ", stride(dim), ", count ",
          count(dim), ") reaches beyond the int64 range"));
    default:
      break;
  }
  // The bounds faults: only CheckAccessPattern reports them, with a tensor.
  FlatExtent extent;
  int unused_dim = 0;
  ComputeExtent(ap, 0, &extent, &unused_dim);
  const int64_t* shape = tensor->shape().data();
  switch (fault) {
    case Fault::kFlatBounds: {
      int64_t tensor_elements = 1;
      for (int d = 0; d < tensor->shape_size(); ++d) {
        tensor_elements *= shape[d];
      }
      return OutOfBounds(*tensor, extent.lo, extent.hi, tensor_elements,
                         "flat elements");
    }
    case Fault::kPartitionStride:
      return absl::InvalidArgumentError(
          absl::StrCat("on-chip access pattern of '", tensor->name(),
                       "' must walk partitions in its first dim (stride ",
                       RowElements(*tensor), "), not ", stride(0)));
    case Fault::kPartitionBounds: {
      const int64_t first_partition = ap.offset / RowElements(*tensor);
      return OutOfBounds(*tensor, first_partition,
                         first_partition + count(0) - 1, shape[0],
                         "partitions");
    }
    case Fault::kRowBounds: {
      const int64_t row = RowElements(*tensor);
      int64_t free_lo = ap.offset % row;
      int64_t free_hi = free_lo;
      for (int d = 1; d < num_dims(); ++d) {
        const int64_t reach = stride(d) * (count(d) - 1);
        (reach < 0 ? free_lo : free_hi) += reach;
      }
      return OutOfBounds(*tensor, free_lo, free_hi, row,
                         "elements of a partition row");
    }
    case Fault::kFreeDims:
      return absl::InvalidArgumentError(
          absl::StrCat("on-chip access pattern of '", tensor->name(), "' has ",
                       num_dims() - 1, " free dims (the hardware allows 4)"));
    default:
      return absl::InternalError("unknown access pattern fault");
  }
}

}  // namespace

absl::StatusOr<FlatExtent> StaticExtent(const proto::AccessPattern& message,
                                        int first_dim) {
  const PatternRef ap = PatternOf(message);
  FlatExtent extent;
  int dim = 0;
  const Fault fault = ComputeExtent(ap, first_dim, &extent, &dim);
  if (fault != Fault::kNone) return FaultStatus(fault, dim, ap, nullptr);
  return extent;
}

absl::Status CheckAccessPattern(const proto::AccessPattern& ap,
                                const proto::Tensor& tensor) {
  return CheckAccessPattern(PatternOf(ap), tensor);
}

absl::Status CheckAccessPattern(const PatternRef& ap,
                                const proto::Tensor& tensor) {
  int dim = 0;
  const Fault fault = ComputeBounds(ap, tensor, &dim);
  if (ABSL_PREDICT_TRUE(fault == Fault::kNone)) return absl::OkStatus();
  return FaultStatus(fault, dim, ap, &tensor);
}

}  // namespace nkigraph::ops
