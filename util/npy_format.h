#ifndef NKIGRAPH_UTIL_NPY_FORMAT_H_
#define NKIGRAPH_UTIL_NPY_FORMAT_H_

// The .npy layout the reader and the writer share (util/npy.h is the
// public side): the magic, the limits on dims, little-endian scalars, the
// dtypes read, and the checked layout of a file's bytes.

#include <bit>
#include <cstdint>
#include <cstring>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"

namespace nkigraph::npy_format {

inline constexpr absl::string_view kMagic("\x93NUMPY", 6);
// Dims beyond this are refused before any arithmetic on them.
inline constexpr int64_t kMaxDim = int64_t{1} << 62;
inline constexpr int kMaxRank = 32;

template <typename T>
T LoadLittle(const char* src) {
  T value;
  std::memcpy(&value, src, sizeof(T));
  if constexpr (std::endian::native == std::endian::big) {
    using U = std::conditional_t<
        sizeof(T) == 2, uint16_t,
        std::conditional_t<sizeof(T) == 4, uint32_t, uint64_t>>;
    U bits;
    std::memcpy(&bits, &value, sizeof(T));
    U swapped = 0;
    for (size_t i = 0; i < sizeof(T); ++i) {
      swapped = static_cast<U>((swapped << 8) | ((bits >> (8 * i)) & 0xff));
    }
    std::memcpy(&value, &swapped, sizeof(T));
  }
  return value;
}

template <typename T>
void StoreLittle(T value, std::string* out) {
  char bytes[sizeof(T)];
  std::memcpy(bytes, &value, sizeof(T));
  if constexpr (std::endian::native == std::endian::big) {
    for (size_t i = 0; i < sizeof(T) / 2; ++i) {
      std::swap(bytes[i], bytes[sizeof(T) - 1 - i]);
    }
  }
  out->append(bytes, sizeof(T));
}

// The header's three keys.
struct Header {
  std::string descr;
  bool fortran_order = false;
  std::vector<int64_t> shape;
};

struct DescrInfo {
  absl::string_view descr;
  int itemsize;
};

// A checked .npy file: its header and where its data lie.
struct Layout {
  Header header;
  const DescrInfo* descr = nullptr;
  absl::string_view data;
  int64_t elements = 0;
};

// Checks the preamble, the header and that the data are exactly what the
// header's shape and dtype need.
absl::StatusOr<Layout> ParseLayout(absl::string_view bytes);

// `status` with "'path': " before its message (the errors name the file).
inline absl::Status InFile(const std::string& path,
                           const absl::Status& status) {
  return absl::Status(status.code(),
                      absl::StrCat("'", path, "': ", status.message()));
}

}  // namespace nkigraph::npy_format

#endif  // NKIGRAPH_UTIL_NPY_FORMAT_H_
