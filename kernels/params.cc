#include "kernels/params.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "util/dtype.h"

namespace nkigraph::kernels {

ParamSpec IntParam(std::string name, int64_t default_value, std::string help) {
  ParamSpec spec;
  spec.name = std::move(name);
  spec.type = ParamType::kInt;
  spec.default_value = absl::StrCat(default_value);
  spec.help = std::move(help);
  return spec;
}

ParamSpec RequiredIntParam(std::string name, std::string help) {
  ParamSpec spec;
  spec.name = std::move(name);
  spec.type = ParamType::kInt;
  spec.help = std::move(help);
  spec.required = true;
  return spec;
}

ParamSpec ChoiceParam(std::string name, std::string default_value,
                      std::vector<std::string> choices, std::string help) {
  ParamSpec spec;
  spec.name = std::move(name);
  spec.type = ParamType::kString;
  spec.default_value = std::move(default_value);
  spec.help = std::move(help);
  spec.choices = std::move(choices);
  return spec;
}

ParamSpec DTypeParam() {
  return ChoiceParam("dtype", "bfloat16", {"float32", "bfloat16"},
                     "dtype of the floating inputs and outputs; matmuls "
                     "accumulate in float32");
}

absl::StatusOr<proto::DType> DTypeParamValue(const ParamValues& values) {
  absl::StatusOr<proto::DType> dtype = ParseDType(values.Str("dtype"));
  if (!dtype.ok() || (*dtype != proto::FLOAT32 && *dtype != proto::BFLOAT16)) {
    return absl::InvalidArgumentError(
        absl::StrCat("parameter 'dtype' is '", values.Str("dtype"),
                     "'; it must be float32 or bfloat16"));
  }
  return *dtype;
}

absl::Status CheckIntRange(const ParamValues& values, const std::string& name,
                           int64_t lo, int64_t hi) {
  return CheckRange(name, values.Int(name), lo, hi);
}

absl::Status CheckRange(absl::string_view name, int64_t value, int64_t lo,
                        int64_t hi, absl::string_view why) {
  if (value >= lo && value <= hi) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrCat(
      "parameter '", name, "' is ", value, "; it must be between ", lo, " and ",
      hi, why.empty() ? "" : " (", why, why.empty() ? "" : ")"));
}

}  // namespace nkigraph::kernels
