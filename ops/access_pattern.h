#ifndef NKIGRAPH_OPS_ACCESS_PATTERN_H_
#define NKIGRAPH_OPS_ACCESS_PATTERN_H_

#include <cstdint>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "proto/nkigraph.pb.h"

namespace nkigraph::ops {

// Limits that keep arithmetic on untrusted graphs inside int64.
inline constexpr int kMaxDims = 8;
inline constexpr int64_t kMaxElements = int64_t{1} << 40;

// Element count of a shape; error if a dim is < 1 or the product is absurd.
absl::StatusOr<int64_t> ShapeElements(
    const google::protobuf::RepeatedField<int64_t>& shape);
// Elements per partition row of an on-chip tensor (product of shape[1:]).
int64_t RowElements(const proto::Tensor& tensor);
// Stride, in flat elements, of dim `d` of the tensor's row-major layout.
int64_t DimStride(const proto::Tensor& tensor, int d);

// The [stride, count] pairs of an access pattern's `pattern` field.
inline int NumDims(const proto::AccessPattern& ap) {
  return ap.pattern_size() / 2;
}
// (Through data(): RepeatedField<int64_t>::Get is not inlined across the
// protobuf library boundary, and these sit on the tracer's hot path.)
inline int64_t Stride(const proto::AccessPattern& ap, int d) {
  return ap.pattern().data()[2 * d];
}
inline int64_t Count(const proto::AccessPattern& ap, int d) {
  return ap.pattern().data()[2 * d + 1];
}

// A dynamic offset's fields (proto::DynamicOffset's), as plain values.
struct DynamicRef {
  proto::DynamicOffset::Kind kind = proto::DynamicOffset::KIND_UNSPECIFIED;
  uint32_t tensor_id = 0;
  int64_t offset_element = 0;
  int64_t offset_stride = 0;
  uint32_t indirect_dim = 0;
  proto::DynamicOffset::OobMode oob_mode = proto::DynamicOffset::OOB_ERROR;
};

// An operand's access pattern wherever it is held: read from a graph's
// proto::AccessPattern (PatternOf), or filled by the builder from its own
// views, which then never makes a message per operand. `pattern` points
// at pattern_size values, [stride, count] pairs outermost first, owned by
// whoever filled it. tensor_id 0: an absent operand.
struct PatternRef {
  uint32_t tensor_id = 0;
  proto::DType view_dtype = proto::DTYPE_UNSPECIFIED;
  int pattern_size = 0;
  int64_t offset = 0;
  const int64_t* pattern = nullptr;
  // Whether the operand carries a DynamicOffset message (an all-zero one
  // still counts: it is written).
  bool has_dynamic = false;
  DynamicRef dynamic;
};

// The view of `ap`; it points into `ap`, which must outlive it.
PatternRef PatternOf(const proto::AccessPattern& ap);

// Product of the access pattern's counts.
inline int64_t ApElements(const int64_t* pattern, int pattern_size) {
  int64_t elements = 1;
  for (int i = 1; i < pattern_size; i += 2) elements *= pattern[i];
  return elements;
}
int64_t ApElements(const proto::AccessPattern& ap);

// Lowest and highest flat element the static part of `ap` reaches.
struct FlatExtent {
  int64_t lo;
  int64_t hi;
};
// Validates the dims (count >= 1, few dims, no overflow) and returns the
// extent of the static pattern, dims starting at `first_dim`.
absl::StatusOr<FlatExtent> StaticExtent(const proto::AccessPattern& ap,
                                        int first_dim = 0);

// Checks the static part of `ap` against `tensor`: in bounds; for on-chip
// tensors, dim 0 walks whole partitions and the rest stays inside one
// partition row. Dynamic offsets are bounded at run time.
absl::Status CheckAccessPattern(const proto::AccessPattern& ap,
                                const proto::Tensor& tensor);
absl::Status CheckAccessPattern(const PatternRef& ap,
                                const proto::Tensor& tensor);

// The tensor as an operand with a bitcast view (`ap.view_dtype`) sees it:
// the same bytes and declaration, with dtype `view` and the last dim
// holding shape[-1] * size(dtype) / size(view) elements. An error when
// that is not a whole number, the view dtype is unknown, or the last dim
// is an on-chip tensor's partition dim.
absl::Status ViewedTensor(const proto::Tensor& tensor, proto::DType view,
                          proto::Tensor* viewed);

// The dtype operand `ap` reads `tensor` as: its bitcast view's
// (ap.view_dtype), else the tensor's own. The pattern counts elements of
// it.
proto::DType OperandDType(const proto::AccessPattern& ap,
                          const proto::Tensor& tensor);

// Elements of one partition row of on-chip `tensor` as operand `ap` counts
// them (a bitcast view rescales the row to its dtype); at least 1.
int64_t OperandRowElements(const proto::AccessPattern& ap,
                           const proto::Tensor& tensor);

// The partitions [lo, hi) of on-chip memory (tensor.partition_offset()
// included) that the static part of `ap` touches: from the partition of
// its lowest element to that of its highest. (Validation refuses an
// on-chip partition stride other than the row; the answer holds for any
// stride, so a view or picture of a graph still being checked is right.)
struct PartitionSpan {
  int64_t lo;
  int64_t hi;
};
PartitionSpan OperandPartitions(const proto::AccessPattern& ap,
                                const proto::Tensor& tensor);

bool IsOnChip(proto::MemorySpace space);
bool IsHbm(proto::MemorySpace space);

}  // namespace nkigraph::ops

#endif  // NKIGRAPH_OPS_ACCESS_PATTERN_H_
