#ifndef NKIGRAPH_UTIL_NPY_H_
#define NKIGRAPH_UTIL_NPY_H_

// The .npy exchange format (numpy's NEP 1), as nkigraph reads and writes
// tensors: float32 and int32 host arrays.

#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "util/host_array.h"

namespace nkigraph {

// Reads a .npy file: versions 1.0, 2.0 and 3.0, C order, little-endian
// <f4 and <f8 (returned as FLOAT32; doubles are narrowed), <i4 and <i8
// (returned as INT32; int64 values outside int32 are an error) or <u2
// (returned as UINT16: raw 16-bit elements, bf16 bits say). A 0-d array
// has an empty shape and one element. Anything else, and any malformed or
// truncated header or data, is an error naming the file. The returned
// array's name is empty.
absl::StatusOr<HostArray> ReadNpy(const std::string& path);

// Parses the bytes of a .npy file; `path` only names it in errors.
absl::StatusOr<HostArray> ParseNpy(absl::string_view bytes,
                                   const std::string& path);

// Writes `array` (FLOAT32 as <f4, INT32 as <i4, UINT16 as <u2) as a version 1.0
// .npy file whose header is padded to a multiple of 64 bytes. Atomic: a
// temporary file is renamed over `path`.
absl::Status WriteNpy(const std::string& path, const HostArray& array);

// The bytes WriteNpy writes.
absl::StatusOr<std::string> SerializeNpy(const HostArray& array);

}  // namespace nkigraph

#endif  // NKIGRAPH_UTIL_NPY_H_
