#ifndef NKIGRAPH_UTIL_NAMED_ARRAY_H_
#define NKIGRAPH_UTIL_NAMED_ARRAY_H_

// A host array in a replay bundle (proto::NamedArray): float32, int32 or
// uint16 raw bits, its data little-endian bytes.

#include "absl/status/statusor.h"
#include "proto/nkigraph.pb.h"
#include "util/host_array.h"

namespace nkigraph {

proto::NamedArray ToNamedArray(const HostArray& array);
// Checks the dtype, shape and data size; errors name the array.
absl::StatusOr<HostArray> FromNamedArray(const proto::NamedArray& array);

}  // namespace nkigraph

#endif  // NKIGRAPH_UTIL_NAMED_ARRAY_H_
