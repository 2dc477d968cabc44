#ifndef NKIGRAPH_UTIL_HOST_ARRAY_H_
#define NKIGRAPH_UTIL_HOST_ARRAY_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "proto/nkigraph.pb.h"

namespace nkigraph {

// The product of `shape`'s dimensions, for shapes from anywhere (a file, a
// caller): 0 when a dimension is 0 (whatever the others: [2^62, 2^62, 0]
// holds nothing), -1 when one is negative and none is 0 (no array has that
// shape), and INT64_MAX when the product does not fit in int64 (no array
// holds that many values).
int64_t ShapeElementCount(absl::Span<const int64_t> shape);

// A host-side array in the .npy exchange form: float32 for floating
// tensors (bf16/fp8 included), int32 for integer ones, or uint16 raw bits
// for any 2-byte tensor (bfloat16, float16, int16, uint16), taken and
// given bit for bit: no float path keeps a bf16 NaN payload, and small
// integers packed into bf16 columns are subnormals.
struct HostArray {
  std::string name;
  proto::DType dtype = proto::FLOAT32;  // FLOAT32, INT32 or UINT16
  std::vector<int64_t> shape;
  std::vector<float> f32;     // when FLOAT32
  std::vector<int32_t> i32;   // when INT32
  std::vector<uint16_t> u16;  // when UINT16: the elements' raw bits

  // How many values the array holds (of its dtype's vector).
  size_t values() const {
    return dtype == proto::INT32    ? i32.size()
           : dtype == proto::UINT16 ? u16.size()
                                    : f32.size();
  }
  // The first of values() values as stored, value_bytes() bytes each (in
  // the vector of the array's dtype): the one place the storage is
  // chosen by dtype for code that handles the values as bytes.
  const void* data() const {
    return dtype == proto::INT32    ? static_cast<const void*>(i32.data())
           : dtype == proto::UINT16 ? static_cast<const void*>(u16.data())
                                    : static_cast<const void*>(f32.data());
  }
  size_t value_bytes() const { return dtype == proto::UINT16 ? 2 : 4; }
  // The same values as bytes, in the host's byte order.
  absl::string_view raw_bytes() const {
    return absl::string_view(static_cast<const char*>(data()),
                             values() * value_bytes());
  }
  // Appends `other`'s values (of the same dtype).
  void Append(const HostArray& other) {
    f32.insert(f32.end(), other.f32.begin(), other.f32.end());
    i32.insert(i32.end(), other.i32.begin(), other.i32.end());
    u16.insert(u16.end(), other.u16.begin(), other.u16.end());
  }

  // How many elements the shape describes (see ShapeElementCount): never
  // an overflow, so comparing it with values() is always safe.
  int64_t num_elements() const { return ShapeElementCount(shape); }
};

using HostArrays = std::vector<HostArray>;
// What a kernel reference or input maker returns: the arrays, or why not.
using HostOutputs = absl::StatusOr<HostArrays>;

// A float32 array of zeros.
HostArray ZeroHostArray(const std::string& name, std::vector<int64_t> shape);

// The array called `name` among `inputs`, which must have `dtype` (FLOAT32,
// INT32 or UINT16) and `shape` with as many values; an error naming the input
// when it is missing, of another dtype or misshapen. What every kernel
// reference does first with its inputs.
absl::StatusOr<const HostArray*> FindHostInput(
    const std::vector<HostArray>& inputs, const std::string& name,
    const std::vector<int64_t>& shape, proto::DType dtype = proto::FLOAT32);

}  // namespace nkigraph

#endif  // NKIGRAPH_UTIL_HOST_ARRAY_H_
