// mlp_tkg: the decode MLP block on two cores, H split.
//
//   xn_T      = RmsNormXT(x, gamma)               # this core's H columns
//   gate_up   = InputProjection(xn_T, W_gate_up)  # [T, 2I], both cores
//   product   = silu(gate_up[:, :I]) · gate_up[:, I:]
//   out[:, Hc] = product · W_down[:, Hc]          # this core's columns
//
// The stages are decode_common's, shared with attention_block_tkg; only
// the SwiGLU middle is this kernel's own.
#include "kernels/mlp_tkg.h"

#include <random>

#include "kernels/dsl.h"
#include "kernels/input_draws.h"
#include "kernels/two_cores.h"
#include "util/status_macros.h"

namespace nkigraph::kernels {
namespace {

// silu(gate) · up into a new [T, I] SBUF tensor of params.dtype, from the
// float32 projection [T, 2I].
Tensor SwiGlu(const Tensor& gate_up, const MlpParams& p) {
  const int64_t t = p.tokens(), i = p.intermediate;
  Tensor product =
      builder::ndarray({t, i}, p.dtype, Buffer::kSbuf, "gate_up_product");
  Scope scope("swiglu");
  Tensor gate =
      builder::ndarray({t, i}, proto::FLOAT32, Buffer::kSbuf, "silu_gate");
  isa::activation(gate, isa::ActFunc::kSilu, gate_up.Slice(1, 0, i));
  isa::tensor_tensor(product, gate, gate_up.Slice(1, i, i),
                     isa::Alu::kMultiply);
  return product;
}

void TraceMlpTkg(KernelIo& io, const MlpParams& p) {
  const int64_t t = p.tokens();
  MlpWeights w;
  const Tensor x = io.Input("X");
  w.gamma = io.Input("rmsnorm_gamma");
  w.w_gate_up = io.Input("W_gate_up");
  w.w_down = io.Input("W_down");
  const Tensor out = io.Output("out");
  const BlockIo block{x.Reshape({t, p.hidden}), out.Reshape({t, p.hidden})};
  builder::jit("mlp_tkg", MlpTkg)(block, w, p);
}

}  // namespace

void MlpTkg(const BlockIo& io, const MlpWeights& w, const MlpParams& p) {
  const Tensor xn_T = RmsNormXT(io, w.gamma, p);
  const Tensor gate_up = InputProjection(
      xn_T, w.w_gate_up.Reshape({p.hidden, 2 * p.intermediate}), p, "gate_up");
  const Tensor product = SwiGlu(gate_up, p);
  const Tensor product_T = TransposeRows(product, "gate_up_product_T");
  OutputProjection(product_T, w.w_down, io, p);
}

HostOutputs MakeMlpTkgInputs(const MlpParams& p, uint64_t seed) {
  NKI_ASSIGN_OR_RETURN(const HostIo io, MlpTkgSpec().Host(p));
  std::mt19937_64 rng(seed);
  const InputDraws draw(io, p.dtype, rng);
  HostArrays inputs;
  inputs.push_back(draw.Uniform("X", -1.0, 1.0));
  inputs.push_back(draw.Uniform("rmsnorm_gamma", 0.5, 1.5));
  inputs.push_back(draw.FanInWeights("W_gate_up", p.hidden));
  inputs.push_back(draw.FanInWeights("W_down", p.intermediate));
  return inputs;
}

const KernelSpec<MlpParams>& MlpTkgSpec() {
  using P = MlpParams;
  static const auto* const spec = new KernelSpec<P>{
      .name = "mlp_tkg",
      .summary =
          "decode MLP block: fused RMSNorm (sum of squares by matmul against "
          "ones, rsqrt activation) -> gate/up -> silu * up -> down, H split "
          "across two cores; out is this rank's partial sum",
      .params = DecodeFields<P>({"batch", "seq_tkg", "hidden", "intermediate",
                                 "rmsnorm_eps", "dtype"}),
      .validate = [](const P& p) { return ValidateDecodeTokens(p); },
      .io =
          {
              DecodeXRow<P>(),
              DecodeGammaRow<P>("rmsnorm_gamma"),
              InputRow<P>("W_gate_up", "[H, 2, I]",
                          [](const P& p) {
                            return Shape{p.hidden, 2, p.intermediate};
                          }),
              InputRow<P>("W_down", "[I, H]",
                          [](const P& p) {
                            return Shape{p.intermediate, p.hidden};
                          }),
              DecodeOutRow<P>(),
          },
      .world = [](const P&) { return TwoCoreWorld(); },
      .body = TraceMlpTkg,
      .reference = MlpTkgReference,
      .tolerance = [](const P& p) { return ScaleTolerance(p.dtype); },
      .comparison = Comparison::kScale,
      .make_inputs = MakeMlpTkgInputs,
  };
  return *spec;
}

}  // namespace nkigraph::kernels
