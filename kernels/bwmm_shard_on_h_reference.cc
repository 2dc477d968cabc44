// The oracle of bwmm_shard_on_H: the blockwise expert FFN in double.
//
//   for block n, e = block_to_expert[n], slot b holding token t (x = 0 for
//   an empty slot):
//     g = x·W[e, :, 0, :] + bg[e, 0],  u = x·W[e, :, 1, :] + bg[e, 1]
//     y = (act(g) ⊙ u)·Wd[e] + bd[e]
//     ckpt_T[n, 0, :, b] = g, ckpt_T[n, 1, :, b] = u, down_ckpt[n, b] = y
//     output[t] += affinity[t·E + e] · y           (routed slots only)
#include <cstdint>
#include <vector>

#include "kernels/bwmm_shard_on_h.h"
#include "util/status_macros.h"

namespace nkigraph::kernels {

HostOutputs BwmmShardOnHReference(const MoeParams& p,
                                  const HostArrays& inputs) {
  NKI_ASSIGN_OR_RETURN(const HostIo io, BwmmShardOnHSpec().Host(p, inputs));
  NKI_ASSIGN_OR_RETURN(const MoeHostInputs in, MoeHostInputsOf(io, p));
  const int64_t T = p.num_tokens, H = p.hidden, E = p.num_experts,
                I = p.intermediate, B = p.block_size, N = p.num_blocks;
  const std::vector<float>& x_all = in.hidden_states->f32;
  const std::vector<float>& w = in.gate_up_proj_weight->f32;
  const std::vector<float>& wd = in.down_proj_weight->f32;

  HostArray output = io.Zeros("output");
  HostArray gate_up_ckpt = io.Zeros("gate_up_proj_act_checkpoint_T");
  HostArray down_ckpt = io.Zeros("down_proj_act_checkpoint");
  std::vector<double> output_acc(T * H, 0.0);
  std::vector<double> gu(2 * I), m(I), y(H);
  for (int64_t n = 0; n < N; ++n) {
    const int64_t e = in.block_to_expert->i32[n];
    for (int64_t b = 0; b < B; ++b) {
      const int64_t t = in.Token(p, n, b);
      for (int64_t j = 0; j < 2; ++j) {
        for (int64_t i = 0; i < I; ++i) {
          gu[j * I + i] =
              p.bias ? in.gate_up_proj_bias->f32[(e * 2 + j) * I + i] : 0.0;
        }
      }
      if (t >= 0) {
        for (int64_t h = 0; h < H; ++h) {
          const double x = x_all[t * H + h];
          const float* row = &w[((e * H + h) * 2) * I];
          for (int64_t k = 0; k < 2 * I; ++k) gu[k] += x * row[k];
        }
      }
      for (int64_t i = 0; i < I; ++i) {
        m[i] = MoeReferenceAct(p.activation, gu[i]) * gu[I + i];
      }
      for (int64_t h = 0; h < H; ++h) {
        y[h] = p.bias ? in.down_proj_bias->f32[e * H + h] : 0.0;
      }
      for (int64_t i = 0; i < I; ++i) {
        const float* row = &wd[(e * I + i) * H];
        for (int64_t h = 0; h < H; ++h) y[h] += m[i] * row[h];
      }
      for (int64_t j = 0; j < 2; ++j) {
        for (int64_t i = 0; i < I; ++i) {
          gate_up_ckpt.f32[((n * 2 + j) * I + i) * B + b] =
              static_cast<float>(gu[j * I + i]);
        }
      }
      for (int64_t h = 0; h < H; ++h) {
        down_ckpt.f32[(n * B + b) * H + h] = static_cast<float>(y[h]);
      }
      if (t < 0) continue;
      const double affinity = in.expert_affinities_masked->f32[t * E + e];
      for (int64_t h = 0; h < H; ++h) {
        output_acc[t * H + h] += affinity * y[h];
      }
    }
  }
  for (int64_t k = 0; k < T * H; ++k) {
    output.f32[k] = static_cast<float>(output_acc[k]);
  }
  std::vector<HostArray> outputs;
  outputs.push_back(std::move(output));
  outputs.push_back(std::move(gate_up_ckpt));
  outputs.push_back(std::move(down_ckpt));
  return outputs;
}

}  // namespace nkigraph::kernels
