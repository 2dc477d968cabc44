#include "util/progress_text.h"

#include <cmath>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace nkigraph {
namespace {

// 1234567 as "1,234,567".
std::string Thousands(int64_t n) {
  std::string digits = absl::StrCat(n < 0 ? -n : n);
  std::string out;
  for (size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0) out += ',';
    out += digits[i];
  }
  return n < 0 ? "-" + out : out;
}

}  // namespace

std::string FormatDuration(double seconds) {
  const int64_t s =
      seconds > 0 ? static_cast<int64_t>(std::llround(seconds)) : 0;
  if (s < 60) return absl::StrFormat("%d s", s);
  if (s < 3600) return absl::StrFormat("%d min %02d s", s / 60, s % 60);
  return absl::StrFormat("%d h %02d min", s / 3600, s / 60 % 60);
}

std::string FormatProgress(int64_t done, int64_t total,
                           double elapsed_seconds) {
  const double percent =
      total > 0 ? 100.0 * static_cast<double>(done) / total : 100.0;
  const double rate =
      elapsed_seconds > 0 ? static_cast<double>(done) / elapsed_seconds : 0;
  const std::string left =
      done >= total ? FormatDuration(0)
      : rate > 0    ? FormatDuration(static_cast<double>(total - done) / rate)
                    : "?";
  return absl::StrFormat("%s of %s instructions (%.1f%%), %s/s, %s left",
                         Thousands(done), Thousands(total), percent,
                         Thousands(std::llround(rate)), left);
}

}  // namespace nkigraph
