#include "kernels/epilogue.h"

#include <cmath>
#include <numbers>

#include "absl/strings/str_cat.h"
#include "kernels/params.h"

namespace nkigraph::kernels {

ParamSpec ActivationParam() {
  return ChoiceParam("activation", "none",
                     {"none", "relu", "silu", "gelu_tanh"},
                     "activation applied after the bias");
}

absl::StatusOr<Activation> ParseActivation(absl::string_view name) {
  if (name == "none") return Activation::kNone;
  if (name == "relu") return Activation::kRelu;
  if (name == "silu") return Activation::kSilu;
  if (name == "gelu_tanh") return Activation::kGeluTanh;
  return absl::InvalidArgumentError(
      absl::StrCat("parameter 'activation' is '", name,
                   "'; it must be none, relu, silu or gelu_tanh"));
}

absl::string_view ActivationName(Activation activation) {
  switch (activation) {
    case Activation::kNone:
      return "none";
    case Activation::kRelu:
      return "relu";
    case Activation::kSilu:
      return "silu";
    case Activation::kGeluTanh:
      return "gelu_tanh";
  }
  return "none";
}

ops::ActFunc DeviceActFunc(Activation activation) {
  switch (activation) {
    case Activation::kNone:
      return ops::ActFunc::kCopy;
    case Activation::kRelu:
      return ops::ActFunc::kRelu;
    case Activation::kSilu:
      return ops::ActFunc::kSilu;
    case Activation::kGeluTanh:
      return ops::ActFunc::kGeluApprxTanh;
  }
  return ops::ActFunc::kCopy;
}

double ReferenceActivation(Activation activation, double x) {
  switch (activation) {
    case Activation::kNone:
      return x;
    case Activation::kRelu:
      return x > 0.0 ? x : 0.0;
    case Activation::kSilu:
      return x / (1.0 + std::exp(-x));
    case Activation::kGeluTanh: {
      const double c = std::sqrt(2.0 / std::numbers::pi);
      return 0.5 * x * (1.0 + std::tanh(c * (x + 0.044715 * x * x * x)));
    }
  }
  return x;
}

builder::Instr EvacuatePsum(const builder::Tensor& dst,
                            const builder::Tensor& psum, Activation activation,
                            const builder::Tensor& bias_column,
                            builder::Loc loc) {
  builder::isa::ActivationArgs args;
  if (bias_column.valid()) args.bias = bias_column;
  return builder::isa::activation(dst, DeviceActFunc(activation), psum, args,
                                  loc);
}

}  // namespace nkigraph::kernels
