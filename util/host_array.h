#ifndef NKIGRAPH_UTIL_HOST_ARRAY_H_
#define NKIGRAPH_UTIL_HOST_ARRAY_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "proto/nkigraph.pb.h"

namespace nkigraph {

// A host-side array in the .npy exchange form: float32 for floating
// tensors (bf16/fp8 included), int32 for integer ones.
struct HostArray {
  std::string name;
  proto::DType dtype = proto::FLOAT32;  // FLOAT32 or INT32
  std::vector<int64_t> shape;
  std::vector<float> f32;    // when FLOAT32
  std::vector<int32_t> i32;  // when INT32

  int64_t num_elements() const {
    int64_t n = 1;
    for (int64_t d : shape) n *= d;
    return n;
  }
};

using HostArrays = std::vector<HostArray>;
// What a kernel reference or input maker returns: the arrays, or why not.
using HostOutputs = absl::StatusOr<HostArrays>;

// A float32 array of zeros.
HostArray ZeroHostArray(const std::string& name, std::vector<int64_t> shape);

// The array called `name` among `inputs`, which must have `dtype` (FLOAT32
// or INT32) and `shape` with as many values; an error naming the input
// when it is missing, of another dtype or misshapen. What every kernel
// reference does first with its inputs.
absl::StatusOr<const HostArray*> FindHostInput(
    const std::vector<HostArray>& inputs, const std::string& name,
    const std::vector<int64_t>& shape, proto::DType dtype = proto::FLOAT32);

}  // namespace nkigraph

#endif  // NKIGRAPH_UTIL_HOST_ARRAY_H_
