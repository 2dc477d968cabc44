// The oracle of mlp_tkg, in double, written from the contract:
//
//   xn  = x / sqrt(mean(x²) + eps) · gamma        (per token row)
//   g   = xn · W_gate_up[:, 0, :],  u = xn · W_gate_up[:, 1, :]
//   out = (g · sigmoid(g) ⊙ u) · W_down
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

#include "kernels/device.h"
#include "kernels/mlp_tkg.h"
#include "util/status_macros.h"

namespace nkigraph::kernels {

std::vector<double> MlpTkgReferenceRows(const MlpParams& p,
                                        absl::Span<const float> x,
                                        absl::Span<const float> gamma,
                                        absl::Span<const float> w_gate_up,
                                        absl::Span<const float> w_down) {
  const int64_t T = p.tokens(), H = p.hidden, I = p.intermediate;
  // The normalised rows and the gated product are dtype tensors on the
  // device (stage 1's xnT, the product the down projection reads), as in
  // the attention reference: rounded so here too. Unrounded, bfloat16 runs
  // of a small hidden size drifted apart layer by layer (hidden 2, two
  // layers: 6% of the output's scale).
  std::vector<double> xn = ReferenceRmsNorm(x, gamma, T, H, p.rmsnorm_eps);
  for (double& v : xn) v = RoundLikeDevice(p.dtype, static_cast<float>(v));
  std::vector<double> out(T * H, 0.0);
  std::vector<double> g(I), u(I);
  for (int64_t t = 0; t < T; ++t) {
    std::fill(g.begin(), g.end(), 0.0);
    std::fill(u.begin(), u.end(), 0.0);
    for (int64_t h = 0; h < H; ++h) {
      const double v = xn[t * H + h];
      for (int64_t i = 0; i < I; ++i) {
        g[i] += v * w_gate_up[(h * 2 + 0) * I + i];
        u[i] += v * w_gate_up[(h * 2 + 1) * I + i];
      }
    }
    for (int64_t i = 0; i < I; ++i) {
      const double m = RoundLikeDevice(
          p.dtype, static_cast<float>(g[i] / (1.0 + std::exp(-g[i])) * u[i]));
      for (int64_t h = 0; h < H; ++h) out[t * H + h] += m * w_down[i * H + h];
    }
  }
  return out;
}

HostOutputs MlpTkgReference(const MlpParams& p, const HostArrays& inputs) {
  NKI_ASSIGN_OR_RETURN(const HostIo io, MlpTkgSpec().Host(p, inputs));
  const std::vector<double> rows =
      MlpTkgReferenceRows(p, io.In("X").f32, io.In("rmsnorm_gamma").f32,
                          io.In("W_gate_up").f32, io.In("W_down").f32);
  HostArray out = io.Zeros("out");
  for (size_t k = 0; k < rows.size(); ++k) {
    out.f32[k] = static_cast<float>(rows[k]);
  }
  HostArrays outputs;
  outputs.push_back(std::move(out));
  return outputs;
}

}  // namespace nkigraph::kernels
