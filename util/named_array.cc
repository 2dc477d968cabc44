#include "util/named_array.h"

#include <bit>
#include <cstdint>
#include <cstring>
#include <limits>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace nkigraph {

static_assert(std::endian::native == std::endian::little,
              "NamedArray data is little-endian; this host is not");

proto::NamedArray ToNamedArray(const HostArray& array) {
  proto::NamedArray named;
  named.set_name(array.name);
  named.set_dtype(array.dtype);
  for (int64_t d : array.shape) named.add_shape(d);
  named.set_data(array.data(), array.values() * array.value_bytes());
  return named;
}

absl::StatusOr<HostArray> FromNamedArray(const proto::NamedArray& named) {
  HostArray array;
  array.name = named.name();
  if (named.dtype() != proto::FLOAT32 && named.dtype() != proto::INT32 &&
      named.dtype() != proto::UINT16) {
    return absl::InvalidArgumentError(absl::StrCat(
        "array '", named.name(), "' has dtype ",
        static_cast<int>(named.dtype()),
        "; bundles hold float32, int32 or uint16 (raw bits) arrays"));
  }
  array.dtype = named.dtype();
  const uint64_t esize = array.dtype == proto::UINT16 ? 2 : 4;
  // The element count must match the data, which bounds it by the bundle's
  // size: no allocation beyond what was read. Counted so that it cannot
  // wrap: a dim of 0 makes the array empty whatever the others, and
  // otherwise the product stops as soon as it passes what the data holds.
  const uint64_t max_elements = named.data().size() / esize;
  bool empty = false;
  for (int64_t d : named.shape()) {
    if (d < 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("array '", named.name(), "' has a negative dim in [",
                       absl::StrJoin(named.shape(), ", "), "]"));
    }
    empty = empty || d == 0;
    array.shape.push_back(d);
  }
  uint64_t elements = empty ? 0 : 1;
  for (int64_t d : named.shape()) {
    if (empty) break;
    if (elements > max_elements / static_cast<uint64_t>(d)) {
      elements = std::numeric_limits<uint64_t>::max();
      break;
    }
    elements *= static_cast<uint64_t>(d);
  }
  if (elements == std::numeric_limits<uint64_t>::max() ||
      elements * esize != named.data().size()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "array '", named.name(), "' of shape [",
        absl::StrJoin(named.shape(), ", "), "] holds ", named.data().size(),
        " bytes of data, not ", esize, " per element"));
  }
  if (array.dtype == proto::UINT16) {
    array.u16.resize(elements);
    std::memcpy(array.u16.data(), named.data().data(), named.data().size());
  } else if (array.dtype == proto::INT32) {
    array.i32.resize(elements);
    std::memcpy(array.i32.data(), named.data().data(), named.data().size());
  } else {
    array.f32.resize(elements);
    std::memcpy(array.f32.data(), named.data().data(), named.data().size());
  }
  return array;
}

}  // namespace nkigraph
