// Writes host arrays as .npy files, whole (WriteNpy, SerializeNpy) or
// in parts of rows that several processes write into one file
// (WriteNpyRows).
#include <bit>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "util/file_io.h"
#include "util/npy.h"
#include "util/npy_format.h"
#include "util/status_macros.h"

namespace nkigraph {
namespace {

using npy_format::InFile;
using npy_format::kMagic;
using npy_format::kMaxDim;
using npy_format::kMaxRank;
using npy_format::StoreLittle;

// The .npy descr a host array of `dtype` is written as; empty for none.
absl::string_view NpyDescr(proto::DType dtype) {
  switch (dtype) {
    case proto::FLOAT32:
      return "<f4";
    case proto::INT32:
      return "<i4";
    case proto::UINT16:
      return "<u2";
    default:
      return "";
  }
}

// The magic, version, length and padded header of a .npy file of `shape`
// and `dtype`, after checking such an array can be written (`values`: how
// many the array holds, -1 when it is written in parts).
absl::StatusOr<std::string> NpyPreamble(const HostArray& array,
                                        const std::vector<int64_t>& shape_of,
                                        int64_t values);

absl::StatusOr<std::string> NpyPreamble(const HostArray& array) {
  return NpyPreamble(array, array.shape, static_cast<int64_t>(array.values()));
}

absl::StatusOr<std::string> NpyPreamble(const HostArray& array,
                                        const std::vector<int64_t>& shape_of,
                                        int64_t values) {
  const absl::string_view descr = NpyDescr(array.dtype);
  if (descr.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat("array '", array.name,
                     "': .npy files hold float32, int32 or uint16, not dtype ",
                     static_cast<int>(array.dtype)));
  }
  if (shape_of.size() > kMaxRank) {
    return absl::InvalidArgumentError(absl::StrCat(
        "array '", array.name, "' has ", shape_of.size(), " dims"));
  }
  int64_t elements = 1;
  for (int64_t dim : shape_of) {
    if (dim < 0 || dim > kMaxDim) {
      return absl::InvalidArgumentError(
          absl::StrCat("array '", array.name, "' has a dimension of ", dim));
    }
    if (dim != 0 && elements > std::numeric_limits<int64_t>::max() / dim) {
      return absl::InvalidArgumentError(
          absl::StrCat("array '", array.name, "' is too large"));
    }
    elements *= dim;
  }
  if (values >= 0 && values != elements) {
    return absl::InvalidArgumentError(absl::StrCat(
        "array '", array.name, "' has shape [", absl::StrJoin(shape_of, ", "),
        "] (", elements, " elements) but ", values, " values"));
  }

  std::string shape = absl::StrJoin(shape_of, ", ");
  if (shape_of.size() == 1) shape += ",";
  std::string header =
      absl::StrCat("{'descr': '", descr,
                   "', 'fortran_order': False, 'shape': (", shape, "), }");
  // Pad with spaces so that the data starts at a multiple of 64 bytes; the
  // header ends in a newline. As numpy does, an already aligned header still
  // gets 64 spaces, so the bytes match numpy.save's.
  constexpr size_t kPreamble = 10;
  const size_t unpadded = kPreamble + header.size() + 1;
  header.append(64 - unpadded % 64, ' ');
  header.push_back('\n');
  if (header.size() > std::numeric_limits<uint16_t>::max()) {
    return absl::InvalidArgumentError("the .npy header is too long");
  }

  std::string bytes(kMagic);
  bytes.push_back('\x01');
  bytes.push_back('\x00');
  StoreLittle<uint16_t>(static_cast<uint16_t>(header.size()), &bytes);
  bytes += header;
  return bytes;
}

}  // namespace

absl::StatusOr<std::string> SerializeNpy(const HostArray& array) {
  NKI_ASSIGN_OR_RETURN(std::string bytes, NpyPreamble(array));
  const size_t values = array.values();
  bytes.reserve(bytes.size() + 4 * values);
  if constexpr (std::endian::native == std::endian::little) {
    const absl::string_view raw = array.raw_bytes();
    bytes.append(raw.data(), raw.size());
  } else {
    for (size_t i = 0; i < values; ++i) {
      if (array.dtype == proto::FLOAT32) {
        StoreLittle<float>(array.f32[i], &bytes);
      } else if (array.dtype == proto::UINT16) {
        StoreLittle<uint16_t>(array.u16[i], &bytes);
      } else {
        StoreLittle<int32_t>(array.i32[i], &bytes);
      }
    }
  }
  return bytes;
}

absl::Status WriteNpy(const std::string& path, const HostArray& array) {
  if constexpr (std::endian::native == std::endian::little) {
    // Writes the values from the array itself: outputs of wide multi-rank
    // graphs run to gigabytes, too many to copy into one string first.
    absl::StatusOr<std::string> preamble = NpyPreamble(array);
    if (!preamble.ok()) {
      return InFile(path, preamble.status());
    }
    const absl::string_view pieces[] = {*preamble, array.raw_bytes()};
    return WriteFileAtomically(path, pieces);
  }
  absl::StatusOr<std::string> bytes = SerializeNpy(array);
  if (!bytes.ok()) {
    return InFile(path, bytes.status());
  }
  return WriteFileAtomically(path, *bytes);
}

absl::Status WriteNpyRows(const std::string& path, const HostArray& rows,
                          int64_t total_rows, int64_t first_row, bool create) {
  if constexpr (std::endian::native != std::endian::little) {
    return absl::UnimplementedError(
        "writing .npy files in parts needs a little-endian host");
  }
  if (rows.shape.empty() || first_row < 0 ||
      first_row + rows.shape[0] > total_rows) {
    return absl::InvalidArgumentError(
        absl::StrCat("'", path, "': rows from ", first_row, " of array '",
                     rows.name, "' do not fit its ", total_rows, " rows"));
  }
  std::vector<int64_t> whole = rows.shape;
  whole[0] = total_rows;
  NKI_ASSIGN_OR_RETURN(const std::string preamble,
                       NpyPreamble(rows, whole, /*values=*/-1));
  const absl::string_view values = rows.raw_bytes();
  const int64_t row_bytes =
      rows.shape[0] == 0 ? 0
                         : static_cast<int64_t>(values.size()) / rows.shape[0];
  const int64_t offset =
      static_cast<int64_t>(preamble.size()) + first_row * row_bytes;
  if (create) {
    return WriteFileParts(
        path, preamble,
        static_cast<int64_t>(preamble.size()) + total_rows * row_bytes, offset,
        values);
  }
  return WriteFileParts(path, {}, -1, offset, values);
}

}  // namespace nkigraph
