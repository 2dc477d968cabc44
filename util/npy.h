#ifndef NKIGRAPH_UTIL_NPY_H_
#define NKIGRAPH_UTIL_NPY_H_

// The .npy exchange format (numpy's NEP 1), as nkigraph reads and writes
// tensors: float32 and int32 host arrays.

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "util/file_io.h"
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

// A checked .npy header and where its values lie in the file's bytes.
struct NpyLayout {
  std::string descr;  // "<f4", "<f8", "<i4", "<i8" or "<u2"
  std::vector<int64_t> shape;
  int64_t elements = 0;
  absl::string_view data;  // exactly elements * itemsize bytes

  // The values converted as ReadNpy returns them (name empty).
  absl::StatusOr<HostArray> ToHostArray() const;
  // The values in place when they already are what a HostArray holds
  // (<f4 as FLOAT32, <i4 as INT32, <u2 as UINT16, on a little-endian
  // machine), with that dtype in `dtype`; else nullptr.
  const void* HostValues(proto::DType* dtype) const;
};
// The layout of the bytes of a .npy file (the checks ParseNpy makes).
absl::StatusOr<NpyLayout> ParseNpyLayout(absl::string_view bytes);

// A .npy file mapped into memory: its values are read where the page
// cache holds them, so an input goes to the device in one copy.
class MappedNpy {
 public:
  static absl::StatusOr<MappedNpy> Open(const std::string& path);
  const NpyLayout& layout() const { return layout_; }
  const std::string& path() const { return path_; }
  // The values as ReadNpy returns them.
  absl::StatusOr<HostArray> Read() const;

 private:
  MappedFile file_;
  NpyLayout layout_;
  std::string path_;
};

// Writes `array` (FLOAT32 as <f4, INT32 as <i4, UINT16 as <u2) as a version 1.0
// .npy file whose header is padded to a multiple of 64 bytes. Atomic: a
// temporary file is renamed over `path`.
absl::Status WriteNpy(const std::string& path, const HostArray& array);

// The bytes WriteNpy writes.
absl::StatusOr<std::string> SerializeNpy(const HostArray& array);

}  // namespace nkigraph

#endif  // NKIGRAPH_UTIL_NPY_H_
