// The oracle of blockwise_mm_bwd: the analytic gradients in double of
// L = Σ output ⊙ output_hidden_states_grad, the forward being
//   g = x·Wg + bg, u = x·Wu + bu, m = act(g) ⊙ u, y = m·Wd + bd,
//   output[t] += a[t·E + e] · y.
// Per routed slot (token t of block n, expert e), with g, u from
// gate_up_proj_act_checkpoint_T and y from down_proj_act_checkpoint:
//   dY = a · dO[t]                   d(a)[t·E + e] += dO[t] · y
//   dM = dY · Wd[e]^T                dWd[e] += m^T · dY,   dbd[e] += dY
//   dU = dM ⊙ act(g)                 dG = dM ⊙ u ⊙ act'(g)
//   dWg[e] += x^T · dG, dWu[e] += x^T · dU, dbg[e] += dG, dbu[e] += dU
//   dX[t] += dG · Wg[e]^T + dU · Wu[e]^T
// Empty slots contribute nothing.
#include <cstdint>
#include <vector>

#include "kernels/blockwise_mm_bwd.h"
#include "util/status_macros.h"

namespace nkigraph::kernels {

HostOutputs BlockwiseMmBwdReference(const MoeParams& p,
                                    const HostArrays& inputs) {
  NKI_ASSIGN_OR_RETURN(const HostIo io, BlockwiseMmBwdSpec().Host(p, inputs));
  NKI_ASSIGN_OR_RETURN(const MoeHostInputs in, MoeHostInputsOf(io, p));
  const HostArray& gate_up_ckpt = io.In("gate_up_proj_act_checkpoint_T");
  const HostArray& down_ckpt = io.In("down_proj_act_checkpoint");
  const HostArray& output_grad = io.In("output_hidden_states_grad");
  const int64_t T = p.num_tokens, H = p.hidden, E = p.num_experts,
                I = p.intermediate, B = p.block_size, N = p.num_blocks;
  const std::vector<float>& x_all = in.hidden_states->f32;
  const std::vector<float>& w = in.gate_up_proj_weight->f32;
  const std::vector<float>& wd = in.down_proj_weight->f32;

  std::vector<double> dx(T * H, 0.0), daff(T * E, 0.0);
  std::vector<double> dw(E * H * 2 * I, 0.0), dwd(E * I * H, 0.0);
  std::vector<double> dbgu(E * 2 * I, 0.0), dbd(E * H, 0.0);
  std::vector<double> dy(H), dm(I), m(I), dgu(2 * I);
  for (int64_t n = 0; n < N; ++n) {
    const int64_t e = in.block_to_expert->i32[n];
    for (int64_t b = 0; b < B; ++b) {
      const int64_t t = in.Token(p, n, b);
      if (t < 0) continue;
      const double a = in.expert_affinities_masked->f32[t * E + e];
      const float* d_out = &output_grad.f32[t * H];
      const float* y = &down_ckpt.f32[(n * B + b) * H];
      double da = 0.0;
      for (int64_t h = 0; h < H; ++h) {
        dy[h] = a * d_out[h];
        da += static_cast<double>(d_out[h]) * y[h];
      }
      daff[t * E + e] += da;
      for (int64_t i = 0; i < I; ++i) {
        const float* row = &wd[(e * I + i) * H];
        double sum = 0.0;
        for (int64_t h = 0; h < H; ++h) sum += row[h] * dy[h];
        dm[i] = sum;
      }
      for (int64_t i = 0; i < I; ++i) {
        const double g = gate_up_ckpt.f32[((n * 2 + 0) * I + i) * B + b];
        const double u = gate_up_ckpt.f32[((n * 2 + 1) * I + i) * B + b];
        const double s = MoeReferenceAct(p.activation, g);
        m[i] = s * u;
        dgu[i] = dm[i] * u * MoeReferenceActDerivative(p.activation, g);
        dgu[I + i] = dm[i] * s;
      }
      for (int64_t i = 0; i < I; ++i) {
        double* row = &dwd[(e * I + i) * H];
        for (int64_t h = 0; h < H; ++h) row[h] += m[i] * dy[h];
      }
      for (int64_t h = 0; h < H; ++h) {
        const double x = x_all[t * H + h];
        const float* w_row = &w[((e * H + h) * 2) * I];
        double* dw_row = &dw[((e * H + h) * 2) * I];
        double sum = 0.0;
        for (int64_t k = 0; k < 2 * I; ++k) {
          dw_row[k] += x * dgu[k];
          sum += dgu[k] * w_row[k];
        }
        dx[t * H + h] += sum;
      }
      for (int64_t k = 0; k < 2 * I; ++k) dbgu[e * 2 * I + k] += dgu[k];
      for (int64_t h = 0; h < H; ++h) dbd[e * H + h] += dy[h];
    }
  }
  const auto to_array = [&](const char* name,
                            const std::vector<double>& values) {
    HostArray array = io.Zeros(name);
    for (size_t k = 0; k < values.size(); ++k) {
      array.f32[k] = static_cast<float>(values[k]);
    }
    return array;
  };
  std::vector<HostArray> outputs;
  outputs.push_back(to_array("hidden_states_grad", dx));
  outputs.push_back(to_array("expert_affinities_masked_grad", daff));
  outputs.push_back(to_array("gate_up_proj_weight_grad", dw));
  outputs.push_back(to_array("down_proj_weight_grad", dwd));
  if (p.bias) {
    outputs.push_back(to_array("gate_up_proj_bias_grad", dbgu));
    outputs.push_back(to_array("down_proj_bias_grad", dbd));
  }
  return outputs;
}

}  // namespace nkigraph::kernels
