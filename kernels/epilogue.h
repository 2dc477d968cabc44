#ifndef NKIGRAPH_KERNELS_EPILOGUE_H_
#define NKIGRAPH_KERNELS_EPILOGUE_H_

// The matmul epilogue the kernels share: evacuate a PSUM result into SBUF,
// as it is or with a per-partition bias and an activation fused into one
// scalar-engine instruction. The device form (EvacuatePsum) and the
// reference form (ReferenceActivation) sit side by side so they stay in
// step.

#include "absl/strings/string_view.h"
#include "builder/isa.h"
#include "builder/tensor.h"
#include "kernels/kernel_spec.h"
#include "ops/activation_functions.h"

namespace nkigraph::kernels {

// The `activation` parameter of the contract's matmul-style kernels.
enum class Activation { kNone, kRelu, kSilu, kGeluTanh };

// `activation` ∈ {none, relu, silu, gelu_tanh}: the field of a parameter
// struct P whose member is `activation` (default: the member's initializer).
template <typename P>
ParamField<P> ActivationField() {
  return ChoiceField<P>("activation", &P::activation,
                        {{"none", Activation::kNone},
                         {"relu", Activation::kRelu},
                         {"silu", Activation::kSilu},
                         {"gelu_tanh", Activation::kGeluTanh}},
                        "activation applied after the bias");
}

// The scalar-engine function computing `activation`: copy, relu, silu,
// gelu_apprx_tanh.
ops::ActFunc DeviceActFunc(Activation activation);

// The exact function, for references: x, max(x, 0), x·sigmoid(x),
// 0.5·x·(1 + tanh(√(2/π)·(x + 0.044715·x³))).
double ReferenceActivation(Activation activation, double x);

// The PSUM → SBUF evacuation every matmul or transpose result goes through
// before a DMA (a DMA cannot read PSUM). Without arithmetic: dst = psum by
// one tensor_copy; or a new SBUF tile of `dtype` named `name` holding it.
builder::Instr EvacuatePsum(const builder::Tensor& dst,
                            const builder::Tensor& psum,
                            builder::Loc loc = builder::Loc::current());
builder::Tensor EvacuatePsum(const builder::Tensor& psum, proto::DType dtype,
                             absl::string_view name,
                             builder::Loc loc = builder::Loc::current());
// With the matmul epilogue fused in: dst = act(psum + bias_column), one
// activation instruction.
// `bias_column` is an SBUF [P, 1] float32 column (one bias per partition),
// or an invalid Tensor for no bias.
builder::Instr EvacuatePsum(const builder::Tensor& dst,
                            const builder::Tensor& psum, Activation activation,
                            const builder::Tensor& bias_column,
                            builder::Loc loc = builder::Loc::current());

}  // namespace nkigraph::kernels

#endif  // NKIGRAPH_KERNELS_EPILOGUE_H_
