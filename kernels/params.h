#ifndef NKIGRAPH_KERNELS_PARAMS_H_
#define NKIGRAPH_KERNELS_PARAMS_H_

// Helpers shared by the kernels' parameter tables and their validation, so
// every kernel spells `dtype`, integer limits and their messages the same
// way.

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "kernels/registry.h"
#include "proto/nkigraph.pb.h"

namespace nkigraph::kernels {

ParamSpec IntParam(std::string name, int64_t default_value, std::string help);
ParamSpec RequiredIntParam(std::string name, std::string help);
ParamSpec ChoiceParam(std::string name, std::string default_value,
                      std::vector<std::string> choices, std::string help);

// `dtype` ∈ {float32, bfloat16}, default bfloat16: the dtype of a kernel's
// floating inputs and outputs (KERNELS.md conventions).
ParamSpec DTypeParam();
// The value of the `dtype` parameter.
absl::StatusOr<proto::DType> DTypeParamValue(const ParamValues& values);

// OK if lo <= value <= hi; otherwise an error naming the parameter, its
// value and the limits, and `why` in parentheses when given.
absl::Status CheckRange(absl::string_view name, int64_t value, int64_t lo,
                        int64_t hi, absl::string_view why = "");

// CheckRange of values.Int(name).
absl::Status CheckIntRange(const ParamValues& values, const std::string& name,
                           int64_t lo, int64_t hi);

}  // namespace nkigraph::kernels

#endif  // NKIGRAPH_KERNELS_PARAMS_H_
