#include "kernels/epilogue.h"

#include <cmath>
#include <numbers>

#include "builder/tracer.h"

namespace nkigraph::kernels {

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
                            const builder::Tensor& psum, builder::Loc loc) {
  return builder::isa::tensor_copy(dst, psum, builder::isa::Engine::kVector,
                                   loc);
}

builder::Tensor EvacuatePsum(const builder::Tensor& psum, proto::DType dtype,
                             absl::string_view name, builder::Loc loc) {
  builder::Tensor tile =
      builder::ndarray(psum.shape(), dtype, builder::Buffer::kSbuf, name, loc);
  EvacuatePsum(tile, psum, loc);
  return tile;
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
