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
#include "util/host_array.h"
#include "util/mapped_file.h"

namespace nkigraph {

// Reads a .npy file: versions 1.0, 2.0 and 3.0, C order, little-endian
// <f4 and <f8 (returned as FLOAT32; doubles are narrowed), <i4 and <i8
// (returned as INT32; int64 values outside int32 are an error) or <u2
// (returned as UINT16: raw 16-bit elements, bf16 bits say). A 0-d array
// has an empty shape and one element. Anything else, and any malformed or
// truncated header or data, is an error naming the file. The returned
// array's name is empty.
absl::StatusOr<HostArray> ReadNpy(const std::string& path);

// Rows [first, first + count) of the first axis of a .npy file, as
// ReadNpy would return them (shape[0] is `count`): only their bytes of the
// mapped file are read, so a process holding some ranks of a per-rank
// input reads its part alone. `total_rows`, when given, gets the file's
// first dim (-1 when its header could not be read), also on an error.
absl::StatusOr<HostArray> ReadNpyRows(const std::string& path, int64_t first,
                                      int64_t count,
                                      int64_t* total_rows = nullptr);
// A .npy file mapped read-only, its header checked: the values where they
// lie in the page cache, for loading into device memory without a host
// copy (only the pages read are touched, so a process reading some ranks'
// rows of a per-rank input reads only those).
struct MappedNpy {
  MappedFile file;
  proto::DType dtype =
      proto::FLOAT32;  // FLOAT32 (<f4), INT32 (<i4), UINT16 (<u2)
  std::vector<int64_t> shape;
  int64_t elements = 0;
  const void* values = nullptr;  // aligned to the element size
};
// Maps `path`. A file whose values need converting (<f8, <i8), or lie
// unaligned, or a big-endian host, is FailedPrecondition: ReadNpy reads
// those. Other errors are ReadNpy's.
absl::StatusOr<MappedNpy> MapNpy(const std::string& path);
// Parses the bytes of a .npy file; `path` only names it in errors.
absl::StatusOr<HostArray> ParseNpy(absl::string_view bytes,
                                   const std::string& path);

// Writes `array` (FLOAT32 as <f4, INT32 as <i4, UINT16 as <u2) as a version 1.0
// .npy file whose header is padded to a multiple of 64 bytes. Atomic: a
// temporary file is renamed over `path`.
absl::Status WriteNpy(const std::string& path, const HostArray& array);

// Writes `rows`, rows [first_row, first_row + rows.shape[0]) of an array of
// total_rows rows along its first axis, into the .npy file at `path`
// (not atomically): with `create`, the file is made with its header and
// its full size first; the other parts are written into it at their
// offsets, so processes each holding some rows write one file together
// without any of them holding it all. Little-endian hosts only.
absl::Status WriteNpyRows(const std::string& path, const HostArray& rows,
                          int64_t total_rows, int64_t first_row, bool create);
// The bytes WriteNpy writes.
absl::StatusOr<std::string> SerializeNpy(const HostArray& array);

}  // namespace nkigraph

#endif  // NKIGRAPH_UTIL_NPY_H_
