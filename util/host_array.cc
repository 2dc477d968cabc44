#include "util/host_array.h"

#include <limits>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "util/dtype.h"

namespace nkigraph {

int64_t ShapeElementCount(absl::Span<const int64_t> shape) {
  // Zero and negative dimensions first: the product's overflow must not
  // hide an empty shape.
  bool negative = false;
  for (int64_t d : shape) {
    if (d == 0) return 0;
    negative = negative || d < 0;
  }
  if (negative) return -1;
  int64_t n = 1;
  for (int64_t d : shape) {
    if (__builtin_mul_overflow(n, d, &n)) {
      return std::numeric_limits<int64_t>::max();
    }
  }
  return n;
}

HostArray ZeroHostArray(const std::string& name, std::vector<int64_t> shape) {
  HostArray array;
  array.name = name;
  array.dtype = proto::FLOAT32;
  array.shape = std::move(shape);
  array.f32.assign(array.num_elements(), 0.0f);
  return array;
}

absl::StatusOr<const HostArray*> FindHostInput(
    const std::vector<HostArray>& inputs, const std::string& name,
    const std::vector<int64_t>& shape, proto::DType dtype) {
  for (const HostArray& array : inputs) {
    if (array.name != name) continue;
    if (array.dtype != dtype) {
      return absl::InvalidArgumentError(
          absl::StrCat("input '", name, "' must be ", DTypeName(dtype),
                       ", not ", DTypeName(array.dtype)));
    }
    const size_t values = array.values();
    if (array.shape != shape ||
        static_cast<int64_t>(values) != array.num_elements()) {
      return absl::InvalidArgumentError(
          absl::StrCat("input '", name, "' has shape [",
                       absl::StrJoin(array.shape, ", "), "] with ", values,
                       " values; expected [", absl::StrJoin(shape, ", "), "]"));
    }
    return &array;
  }
  return absl::InvalidArgumentError(absl::StrCat("missing input '", name, "'"));
}

}  // namespace nkigraph
