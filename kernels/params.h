#ifndef NKIGRAPH_KERNELS_PARAMS_H_
#define NKIGRAPH_KERNELS_PARAMS_H_

// The text forms of kernel parameters and their range checks, shared by
// the registry's parser and the kernels' parameter tables
// (kernels/kernel_spec.h), so every kernel spells values and limits, and
// their messages, the same way.

#include <cstdint>
#include <string>
#include <utility>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"

namespace nkigraph::kernels {

// A decimal integer without surrounding space ("+300" and "0200" read).
absl::StatusOr<int64_t> ParseIntText(absl::string_view text);
// A finite number without surrounding space.
absl::StatusOr<double> ParseFloatText(absl::string_view text);
// 0, 1, true or false.
absl::StatusOr<bool> ParseBoolText(absl::string_view text);
// The shortest text that reads back as `value` ("1e-06", "0.5").
std::string FormatFloat(double value);

// OK if lo <= value <= hi; otherwise an error naming the parameter, its
// value and the limits, and `why` in parentheses when given.
absl::Status CheckRange(absl::string_view name, int64_t value, int64_t lo,
                        int64_t hi, absl::string_view why = "");
// OK when `count` <= `limit`; otherwise the refusal of a trace too big to
// hold: "parameters m=600, k=300 need <count> <what>; <kernel> traces at
// most <limit> (<hint>)", `sizes` being the parameters the count grows
// with.
absl::Status CheckTraceSize(
    absl::Span<const std::pair<absl::string_view, int64_t>> sizes,
    int64_t count, absl::string_view what, absl::string_view kernel,
    int64_t limit, absl::string_view hint);

absl::Status CheckFloatRange(absl::string_view name, double value, double lo,
                             double hi, absl::string_view why = "");

}  // namespace nkigraph::kernels

#endif  // NKIGRAPH_KERNELS_PARAMS_H_
