#include "util/npy.h"

#include <bit>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "util/file_io.h"
#include "util/mapped_file.h"
#include "util/status_macros.h"

namespace nkigraph {
namespace {

constexpr absl::string_view kMagic("\x93NUMPY", 6);
// Dims beyond this are refused before any arithmetic on them.
constexpr int64_t kMaxDim = int64_t{1} << 62;
constexpr int kMaxRank = 32;

// --- Reading little-endian scalars ---------------------------------------

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

// --- The header: a Python dict literal -----------------------------------

struct Header {
  std::string descr;
  bool fortran_order = false;
  std::vector<int64_t> shape;
};

// Parses the subset of Python literal syntax .npy headers use:
// {'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }
class HeaderParser {
 public:
  explicit HeaderParser(absl::string_view text) : text_(text) {}

  absl::StatusOr<Header> Parse() {
    Header header;
    bool has_descr = false, has_order = false, has_shape = false;
    NKI_RETURN_IF_ERROR(Expect('{'));
    while (!Peek('}')) {
      NKI_ASSIGN_OR_RETURN(std::string key, String());
      NKI_RETURN_IF_ERROR(Expect(':'));
      if (key == "descr") {
        if (has_descr) return Duplicate(key);
        has_descr = true;
        if (!Peek('\'') && !Peek('"')) {
          return Error("'descr' must be a simple dtype string such as '<f4'");
        }
        NKI_ASSIGN_OR_RETURN(header.descr, String());
      } else if (key == "fortran_order") {
        if (has_order) return Duplicate(key);
        has_order = true;
        NKI_ASSIGN_OR_RETURN(header.fortran_order, Bool());
      } else if (key == "shape") {
        if (has_shape) return Duplicate(key);
        has_shape = true;
        NKI_ASSIGN_OR_RETURN(header.shape, Tuple());
      } else {
        return Error(absl::StrCat("unexpected key '", key, "'"));
      }
      if (!Peek('}')) NKI_RETURN_IF_ERROR(Expect(','));
    }
    NKI_RETURN_IF_ERROR(Expect('}'));
    SkipSpace();
    if (pos_ != text_.size()) return Error("trailing characters after '}'");
    if (!has_descr || !has_order || !has_shape) {
      return Error(
          "the header must have the keys 'descr', 'fortran_order' "
          "and 'shape'");
    }
    return header;
  }

 private:
  absl::Status Error(absl::string_view what) const {
    return absl::InvalidArgumentError(absl::StrCat(
        "malformed header: ", what, " (at byte ", pos_, " of the header)"));
  }
  absl::Status Duplicate(absl::string_view key) const {
    return Error(absl::StrCat("key '", key, "' appears twice"));
  }

  void SkipSpace() {
    while (pos_ < text_.size() &&
           (text_[pos_] == ' ' || text_[pos_] == '\t' || text_[pos_] == '\n' ||
            text_[pos_] == '\r')) {
      ++pos_;
    }
  }
  bool Peek(char c) {
    SkipSpace();
    return pos_ < text_.size() && text_[pos_] == c;
  }
  absl::Status Expect(char c) {
    if (!Peek(c))
      return Error(absl::StrCat("expected '", std::string(1, c), "'"));
    ++pos_;
    return absl::OkStatus();
  }

  absl::StatusOr<std::string> String() {
    SkipSpace();
    if (pos_ >= text_.size() || (text_[pos_] != '\'' && text_[pos_] != '"')) {
      return Error("expected a quoted string");
    }
    const char quote = text_[pos_++];
    const size_t start = pos_;
    while (pos_ < text_.size() && text_[pos_] != quote) {
      if (text_[pos_] == '\\' || text_[pos_] == '\n') {
        return Error("unsupported character in a string");
      }
      ++pos_;
    }
    if (pos_ >= text_.size()) return Error("unterminated string");
    std::string value(text_.substr(start, pos_ - start));
    ++pos_;
    return value;
  }

  absl::StatusOr<bool> Bool() {
    SkipSpace();
    for (const auto& [word, value] :
         {std::pair<absl::string_view, bool>{"True", true}, {"False", false}}) {
      if (text_.substr(pos_, word.size()) == word) {
        pos_ += word.size();
        return value;
      }
    }
    return Error("expected True or False");
  }

  absl::StatusOr<int64_t> Int() {
    SkipSpace();
    const size_t start = pos_;
    int64_t value = 0;
    while (pos_ < text_.size() && text_[pos_] >= '0' && text_[pos_] <= '9') {
      const int digit = text_[pos_] - '0';
      // Checked before multiplying, so a long run of digits cannot overflow.
      if (value > (kMaxDim - digit) / 10) return Error("dimension too large");
      value = value * 10 + digit;
      ++pos_;
    }
    if (pos_ == start) return Error("expected a non-negative integer");
    return value;
  }

  // A Python tuple of ints: "()", "(3,)", "(2, 3)", "(2, 3,)".
  absl::StatusOr<std::vector<int64_t>> Tuple() {
    std::vector<int64_t> dims;
    NKI_RETURN_IF_ERROR(Expect('('));
    bool trailing_comma = false;
    while (!Peek(')')) {
      NKI_ASSIGN_OR_RETURN(int64_t dim, Int());
      dims.push_back(dim);
      if (dims.size() > kMaxRank) return Error("too many dimensions");
      trailing_comma = false;
      if (!Peek(')')) {
        NKI_RETURN_IF_ERROR(Expect(','));
        trailing_comma = true;
      }
    }
    NKI_RETURN_IF_ERROR(Expect(')'));
    if (dims.size() == 1 && !trailing_comma) {
      return Error("'shape' must be a tuple; a one-dim shape is written (n,)");
    }
    return dims;
  }

  absl::string_view text_;
  size_t pos_ = 0;
};

struct DescrInfo {
  absl::string_view descr;
  int itemsize;
};
constexpr DescrInfo kDescrs[] = {
    {"<f4", 4}, {"<f8", 8}, {"<i4", 4}, {"<i8", 8}, {"<u2", 2}};

// A checked .npy file: its header and where its data lie.
struct Layout {
  Header header;
  const DescrInfo* descr = nullptr;
  absl::string_view data;
  int64_t elements = 0;
};

absl::StatusOr<Layout> ParseLayout(absl::string_view bytes) {
  if (bytes.size() < 10 || bytes.substr(0, 6) != kMagic) {
    return absl::InvalidArgumentError("not a .npy file (bad magic bytes)");
  }
  const int major = static_cast<uint8_t>(bytes[6]);
  const int minor = static_cast<uint8_t>(bytes[7]);
  if ((major != 1 && major != 2 && major != 3) || minor != 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("unsupported .npy version ", major, ".", minor,
                     " (supported: 1.0, 2.0, 3.0)"));
  }
  size_t header_start;
  uint64_t header_len;
  if (major == 1) {
    header_start = 10;
    header_len = LoadLittle<uint16_t>(bytes.data() + 8);
  } else {
    if (bytes.size() < 12) {
      return absl::InvalidArgumentError("truncated .npy preamble");
    }
    header_start = 12;
    header_len = LoadLittle<uint32_t>(bytes.data() + 8);
  }
  if (header_len > bytes.size() - header_start) {
    return absl::InvalidArgumentError(
        absl::StrCat("truncated header: it declares ", header_len,
                     " bytes but the file has ", bytes.size() - header_start,
                     " after the preamble"));
  }
  NKI_ASSIGN_OR_RETURN(
      Header header,
      HeaderParser(bytes.substr(header_start, header_len)).Parse());

  const DescrInfo* descr = nullptr;
  for (const DescrInfo& d : kDescrs) {
    if (d.descr == header.descr) descr = &d;
  }
  if (descr == nullptr) {
    return absl::InvalidArgumentError(
        absl::StrCat("unsupported dtype '", header.descr,
                     "' (supported: <f4, <f8, <i4, <i8, <u2)"));
  }
  if (header.fortran_order) {
    return absl::InvalidArgumentError(
        "fortran_order arrays are not supported; save a C-order array");
  }

  absl::string_view data = bytes.substr(header_start + header_len);
  const int64_t available = static_cast<int64_t>(data.size()) / descr->itemsize;
  int64_t elements = 1;
  bool empty = false;
  for (int64_t dim : header.shape) empty = empty || dim == 0;
  if (empty) {
    elements = 0;
  } else {
    for (int64_t dim : header.shape) {
      if (elements > available / dim) {
        return absl::InvalidArgumentError(absl::StrCat(
            "truncated data: shape (", absl::StrJoin(header.shape, ", "),
            ") needs more than the ", data.size(), " bytes present"));
      }
      elements *= dim;
    }
  }
  const int64_t expected = elements * descr->itemsize;
  if (static_cast<int64_t>(data.size()) != expected) {
    return absl::InvalidArgumentError(absl::StrCat(
        data.size() < static_cast<size_t>(expected)
            ? "truncated data"
            : "unexpected trailing data",
        ": shape (", absl::StrJoin(header.shape, ", "), ") of ", header.descr,
        " needs ", expected, " bytes but the file holds ", data.size()));
  }

  return Layout{std::move(header), descr, data, elements};
}

// Elements [first, first + count) of the file's data, converted.
absl::StatusOr<HostArray> Convert(const Layout& layout, int64_t first,
                                  int64_t elements) {
  const Header& header = layout.header;
  HostArray array;
  array.shape = header.shape;
  const char* src = layout.data.data() + first * layout.descr->itemsize;
  if (header.descr == "<f4") {
    array.dtype = proto::FLOAT32;
    array.f32.resize(elements);
    for (int64_t i = 0; i < elements; ++i) {
      array.f32[i] = LoadLittle<float>(src + 4 * i);
    }
  } else if (header.descr == "<f8") {
    array.dtype = proto::FLOAT32;
    array.f32.resize(elements);
    for (int64_t i = 0; i < elements; ++i) {
      const double value = LoadLittle<double>(src + 8 * i);
      if (std::isfinite(value) &&
          std::fabs(value) > std::numeric_limits<float>::max()) {
        return absl::InvalidArgumentError(
            absl::StrCat("float64 value ", value, " at flat index ", first + i,
                         " is outside the float32 range"));
      }
      array.f32[i] = static_cast<float>(value);
    }
  } else if (header.descr == "<u2") {
    array.dtype = proto::UINT16;
    array.u16.resize(elements);
    for (int64_t i = 0; i < elements; ++i) {
      array.u16[i] = LoadLittle<uint16_t>(src + 2 * i);
    }
  } else if (header.descr == "<i4") {
    array.dtype = proto::INT32;
    array.i32.resize(elements);
    for (int64_t i = 0; i < elements; ++i) {
      array.i32[i] = LoadLittle<int32_t>(src + 4 * i);
    }
  } else {  // <i8
    array.dtype = proto::INT32;
    array.i32.resize(elements);
    for (int64_t i = 0; i < elements; ++i) {
      const int64_t value = LoadLittle<int64_t>(src + 8 * i);
      if (value < std::numeric_limits<int32_t>::min() ||
          value > std::numeric_limits<int32_t>::max()) {
        return absl::InvalidArgumentError(
            absl::StrCat("int64 value ", value, " at flat index ", first + i,
                         " is outside the int32 range"));
      }
      array.i32[i] = static_cast<int32_t>(value);
    }
  }
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
    return absl::Status(
        array.status().code(),
        absl::StrCat("'", path, "': ", array.status().message()));
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
    return absl::Status(
        array.status().code(),
        absl::StrCat("'", path, "': ", array.status().message()));
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
    return absl::Status(
        layout.status().code(),
        absl::StrCat("'", path, "': ", layout.status().message()));
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

namespace {

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

// The array's values as stored, when that is already little-endian.
absl::string_view RawValues(const HostArray& array) {
  switch (array.dtype) {
    case proto::FLOAT32:
      return absl::string_view(reinterpret_cast<const char*>(array.f32.data()),
                               4 * array.f32.size());
    case proto::UINT16:
      return absl::string_view(reinterpret_cast<const char*>(array.u16.data()),
                               2 * array.u16.size());
    default:
      return absl::string_view(reinterpret_cast<const char*>(array.i32.data()),
                               4 * array.i32.size());
  }
}

}  // namespace

absl::StatusOr<std::string> SerializeNpy(const HostArray& array) {
  NKI_ASSIGN_OR_RETURN(std::string bytes, NpyPreamble(array));
  const size_t values = array.values();
  bytes.reserve(bytes.size() + 4 * values);
  if constexpr (std::endian::native == std::endian::little) {
    const absl::string_view raw = RawValues(array);
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
      return absl::Status(
          preamble.status().code(),
          absl::StrCat("'", path, "': ", preamble.status().message()));
    }
    const absl::string_view pieces[] = {*preamble, RawValues(array)};
    return WriteFileAtomically(path, pieces);
  }
  absl::StatusOr<std::string> bytes = SerializeNpy(array);
  if (!bytes.ok()) {
    return absl::Status(
        bytes.status().code(),
        absl::StrCat("'", path, "': ", bytes.status().message()));
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
  const absl::string_view values = RawValues(rows);
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
