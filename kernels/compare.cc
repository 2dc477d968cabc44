#include "kernels/compare.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace nkigraph::kernels {
namespace {

int64_t DataSize(const HostArray& a) {
  return static_cast<int64_t>(a.dtype == proto::INT32 ? a.i32.size()
                                                      : a.f32.size());
}

double Value(const HostArray& a, int64_t i) {
  return a.dtype == proto::INT32 ? a.i32[i] : a.f32[i];
}

std::string Shape(const std::vector<int64_t>& shape) {
  return absl::StrCat("[", absl::StrJoin(shape, ", "), "]");
}

}  // namespace

absl::string_view ComparisonName(Comparison comparison) {
  switch (comparison) {
    case Comparison::kElementwise:
      return "elementwise";
    case Comparison::kScale:
      return "scale";
  }
  return "unknown";
}

absl::string_view ComparisonMeasure(Comparison comparison) {
  switch (comparison) {
    case Comparison::kElementwise:
      return "|err|/(1+|want|)";
    case Comparison::kScale:
      return "|err|/max|want|";
  }
  return "unknown";
}

absl::StatusOr<OutputComparison> CompareOutput(const HostArray& got,
                                               const HostArray& want,
                                               Comparison comparison,
                                               double tolerance) {
  if (got.shape != want.shape) {
    return absl::InvalidArgumentError(
        absl::StrCat("'", want.name, "': shape ", Shape(got.shape),
                     " but the reference has ", Shape(want.shape)));
  }
  const int64_t n = want.num_elements();
  if (DataSize(got) != n || DataSize(want) != n) {
    return absl::InvalidArgumentError(absl::StrCat(
        "'", want.name, "': element count does not match the shape ",
        Shape(want.shape)));
  }
  OutputComparison result;
  result.comparison = comparison;
  result.tolerance = tolerance;
  for (int64_t i = 0; i < n; ++i) {
    const double w = std::fabs(Value(want, i));
    if (std::isfinite(w)) result.scale = std::max(result.scale, w);
  }
  const double inf = std::numeric_limits<double>::infinity();
  for (int64_t i = 0; i < n; ++i) {
    const double g = Value(got, i);
    const double w = Value(want, i);
    if (g == w || (std::isnan(g) && std::isnan(w))) continue;
    const double diff = std::fabs(g - w);
    const double bound =
        comparison == Comparison::kScale ? result.scale : 1.0 + std::fabs(w);
    // An infinite difference (an infinity against a number or the other
    // infinity) is infinitely wrong whatever the bound; a NaN (against a
    // number) sticks: nothing is larger or smaller.
    const bool infinite = std::isinf(diff);
    if (std::isnan(diff)) {
      result.max_abs_error = result.error = diff;
    } else if (!std::isnan(result.max_abs_error)) {
      result.max_abs_error = std::max(result.max_abs_error, diff);
      result.error =
          std::max(result.error, infinite || bound == 0.0 ? inf : diff / bound);
      if (w != 0.0 && !infinite) {
        result.max_rel_error =
            std::max(result.max_rel_error, diff / std::fabs(w));
      }
    }
    if (infinite || !(diff <= tolerance * bound)) {
      if (result.failures++ == 0) {
        result.first_failure = i;
        result.first_got = g;
        result.first_want = w;
      }
    }
  }
  return result;
}

}  // namespace nkigraph::kernels
