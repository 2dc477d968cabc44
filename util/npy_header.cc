// Checks a .npy file's bytes: the preamble, the header (a Python dict
// literal, parsed here) and that the data are what it declares.
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "util/npy_format.h"
#include "util/status_macros.h"

namespace nkigraph::npy_format {
namespace {

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

constexpr DescrInfo kDescrs[] = {
    {"<f4", 4}, {"<f8", 8}, {"<i4", 4}, {"<i8", 8}, {"<u2", 2}};

}  // namespace

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

}  // namespace nkigraph::npy_format
