// Reads .npy files into host arrays (ReadNpy, ReadNpyRows, ParseNpy) or
// maps them for loading without a host copy (MapNpy).
#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "util/mapped_file.h"
#include "util/npy.h"
#include "util/npy_format.h"
#include "util/status_macros.h"

namespace nkigraph {
namespace {

using npy_format::Header;
using npy_format::InFile;
using npy_format::Layout;
using npy_format::LoadLittle;
using npy_format::ParseLayout;

// Reads `n` little-endian `From` values at `src` into `out` as `To`;
// `fits` says which values `To` holds: another is an error naming it, its
// flat index (counted from `first`) and the dtypes `from` and `to`.
template <typename From, typename To, typename Fits>
absl::Status LoadAll(const char* src, int64_t n, int64_t first, Fits fits,
                     absl::string_view from, absl::string_view to,
                     std::vector<To>* out) {
  out->resize(n);
  for (int64_t i = 0; i < n; ++i) {
    const From value = LoadLittle<From>(src + sizeof(From) * i);
    if (!fits(value)) {
      return absl::InvalidArgumentError(
          absl::StrCat(from, " value ", value, " at flat index ", first + i,
                       " is outside the ", to, " range"));
    }
    (*out)[i] = static_cast<To>(value);
  }
  return absl::OkStatus();
}

// Elements [first, first + count) of the file's data, converted.
absl::StatusOr<HostArray> Convert(const Layout& layout, int64_t first,
                                  int64_t elements) {
  const absl::string_view descr = layout.header.descr;
  HostArray array;
  array.shape = layout.header.shape;
  const char* src = layout.data.data() + first * layout.descr->itemsize;
  auto any = [](auto) { return true; };
  absl::Status status;
  if (descr == "<f4") {
    array.dtype = proto::FLOAT32;
    status = LoadAll<float>(src, elements, first, any, "", "", &array.f32);
  } else if (descr == "<f8") {
    array.dtype = proto::FLOAT32;
    status = LoadAll<double>(
        src, elements, first,
        [](double v) {
          return !std::isfinite(v) ||
                 std::fabs(v) <= std::numeric_limits<float>::max();
        },
        "float64", "float32", &array.f32);
  } else if (descr == "<u2") {
    array.dtype = proto::UINT16;
    status = LoadAll<uint16_t>(src, elements, first, any, "", "", &array.u16);
  } else if (descr == "<i4") {
    array.dtype = proto::INT32;
    status = LoadAll<int32_t>(src, elements, first, any, "", "", &array.i32);
  } else {  // <i8
    array.dtype = proto::INT32;
    status = LoadAll<int64_t>(
        src, elements, first,
        [](int64_t v) {
          return v >= std::numeric_limits<int32_t>::min() &&
                 v <= std::numeric_limits<int32_t>::max();
        },
        "int64", "int32", &array.i32);
  }
  if (!status.ok()) return status;
  return array;
}

absl::StatusOr<HostArray> Parse(absl::string_view bytes) {
  NKI_ASSIGN_OR_RETURN(const Layout layout, ParseLayout(bytes));
  return Convert(layout, 0, layout.elements);
}

absl::StatusOr<HostArray> ParseRows(absl::string_view bytes, int64_t first,
                                    int64_t count, int64_t* total_rows) {
  NKI_ASSIGN_OR_RETURN(const Layout layout, ParseLayout(bytes));
  const std::vector<int64_t>& shape = layout.header.shape;
  if (total_rows != nullptr && !shape.empty()) *total_rows = shape[0];
  if (shape.empty() || first < 0 || count < 0 || first + count > shape[0]) {
    return absl::InvalidArgumentError(absl::StrCat(
        "has shape (", absl::StrJoin(shape, ", "), "); rows [", first, ", ",
        first + count, ") of its first axis were asked for"));
  }
  const int64_t row = shape[0] == 0 ? 0 : layout.elements / shape[0];
  NKI_ASSIGN_OR_RETURN(HostArray array,
                       Convert(layout, first * row, count * row));
  array.shape[0] = count;
  return array;
}

}  // namespace

absl::StatusOr<HostArray> ParseNpy(absl::string_view bytes,
                                   const std::string& path) {
  absl::StatusOr<HostArray> array = Parse(bytes);
  if (!array.ok()) {
    return InFile(path, array.status());
  }
  return array;
}

absl::StatusOr<HostArray> ReadNpyRows(const std::string& path, int64_t first,
                                      int64_t count, int64_t* total_rows) {
  if (total_rows != nullptr) *total_rows = -1;
  NKI_ASSIGN_OR_RETURN(const MappedFile file, MappedFile::Open(path));
  absl::StatusOr<HostArray> array =
      ParseRows(file.bytes(), first, count, total_rows);
  if (!array.ok()) {
    return InFile(path, array.status());
  }
  return array;
}

absl::StatusOr<MappedNpy> MapNpy(const std::string& path) {
  if constexpr (std::endian::native != std::endian::little) {
    return absl::FailedPreconditionError("a big-endian host converts .npy");
  }
  MappedNpy npy;
  NKI_ASSIGN_OR_RETURN(npy.file, MappedFile::Open(path));
  absl::StatusOr<Layout> layout = ParseLayout(npy.file.bytes());
  if (!layout.ok()) {
    return InFile(path, layout.status());
  }
  const absl::string_view descr = layout->descr->descr;
  npy.dtype = descr == "<f4"   ? proto::FLOAT32
              : descr == "<i4" ? proto::INT32
              : descr == "<u2" ? proto::UINT16
                               : proto::DTYPE_UNSPECIFIED;
  const uintptr_t address = reinterpret_cast<uintptr_t>(layout->data.data());
  if (npy.dtype == proto::DTYPE_UNSPECIFIED ||
      address % layout->descr->itemsize != 0) {
    return absl::FailedPreconditionError(absl::StrCat(
        "'", path, "' holds ", descr, " values that need converting"));
  }
  npy.shape = layout->header.shape;
  npy.elements = layout->elements;
  npy.values = layout->data.data();
  return npy;
}

absl::StatusOr<HostArray> ReadNpy(const std::string& path) {
  // Mapped rather than read into a string: the values are copied once,
  // from the page cache into the array.
  NKI_ASSIGN_OR_RETURN(const MappedFile file, MappedFile::Open(path));
  return ParseNpy(file.bytes(), path);
}
}  // namespace nkigraph
