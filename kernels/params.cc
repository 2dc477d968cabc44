#include "kernels/params.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace nkigraph::kernels {
namespace {

bool HasSpace(absl::string_view text) {
  return std::any_of(text.begin(), text.end(), [](char c) {
    return std::isspace(static_cast<unsigned char>(c)) != 0;
  });
}

absl::Status OutOfRange(absl::string_view name, absl::string_view value,
                        absl::string_view lo, absl::string_view hi,
                        absl::string_view why) {
  return absl::InvalidArgumentError(absl::StrCat(
      "parameter '", name, "' is ", value, "; it must be between ", lo, " and ",
      hi, why.empty() ? "" : " (", why, why.empty() ? "" : ")"));
}

}  // namespace

absl::StatusOr<int64_t> ParseIntText(absl::string_view text) {
  int64_t value = 0;
  if (text.empty() || HasSpace(text) || !absl::SimpleAtoi(text, &value)) {
    return absl::InvalidArgumentError(
        absl::StrCat("'", text, "' is not an integer"));
  }
  return value;
}

absl::StatusOr<double> ParseFloatText(absl::string_view text) {
  double value = 0.0;
  if (text.empty() || HasSpace(text) || !absl::SimpleAtod(text, &value) ||
      !std::isfinite(value)) {
    return absl::InvalidArgumentError(
        absl::StrCat("'", text, "' is not a finite number"));
  }
  return value;
}

absl::StatusOr<bool> ParseBoolText(absl::string_view text) {
  if (text == "1" || text == "true") return true;
  if (text == "0" || text == "false") return false;
  return absl::InvalidArgumentError(
      absl::StrCat("'", text, "' is not a boolean (0, 1, true or false)"));
}

std::string FormatFloat(double value) {
  char buffer[32];
  const std::to_chars_result result =
      std::to_chars(buffer, buffer + sizeof(buffer), value);
  return std::string(buffer, result.ptr);
}

absl::Status CheckRange(absl::string_view name, int64_t value, int64_t lo,
                        int64_t hi, absl::string_view why) {
  if (value >= lo && value <= hi) return absl::OkStatus();
  return OutOfRange(name, absl::StrCat(value), absl::StrCat(lo),
                    absl::StrCat(hi), why);
}

absl::Status CheckTraceSize(
    absl::Span<const std::pair<absl::string_view, int64_t>> sizes,
    int64_t count, absl::string_view what, absl::string_view kernel,
    int64_t limit, absl::string_view hint) {
  if (count <= limit) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrCat(
      "parameters ", absl::StrJoin(sizes, ", ", absl::PairFormatter("=")),
      " need ", count, " ", what, "; ", kernel, " traces at most ", limit, " (",
      hint, ")"));
}

absl::Status CheckFloatRange(absl::string_view name, double value, double lo,
                             double hi, absl::string_view why) {
  if (value >= lo && value <= hi) return absl::OkStatus();
  return OutOfRange(name, FormatFloat(value), FormatFloat(lo), FormatFloat(hi),
                    why);
}

}  // namespace nkigraph::kernels
