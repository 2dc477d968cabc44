// The oracle of transformer_tkg: the leaf references composed, written
// from the contract rather than from the composer.
//
//   for l in layers:
//     h = round(x + round(Σ_ranks round(attention_ref_r(x, layer l))))
//     x = round(h + round(Σ_ranks round(mlp_ref_r(h, layer l))))
//
// with round() the contract's dtype of each tensor (a block's output, the
// all-reduced sum and the residual are dtype tensors), each rank's caches
// updated by its attention reference.
#include <cmath>
#include <cstdint>
#include <random>
#include <vector>

#include "absl/types/span.h"
#include "kernels/device.h"
#include "kernels/input_draws.h"
#include "kernels/transformer_tkg.h"
#include "util/status_macros.h"

namespace nkigraph::kernels {
namespace {

// Rank r's part of a per-rank host array (the whole array with one rank),
// and layer l's slice of it.
template <typename T>
absl::Span<T> LayerOf(absl::Span<T> all, int64_t ranks, int64_t r,
                      int64_t layers, int64_t l) {
  const size_t per_rank = all.size() / ranks;
  const size_t per_layer = per_rank / layers;
  return all.subspan(r * per_rank + l * per_layer, per_layer);
}

}  // namespace

HostOutputs TransformerTkgReference(const TransformerParams& p,
                                    const HostArrays& inputs) {
  NKI_ASSIGN_OR_RETURN(const HostIo io, TransformerTkgSpec().Host(p, inputs));
  const int64_t R = p.tp_degree, L = p.num_layers, T = p.tokens(), H = p.hidden;
  const AttentionParams ap = AttentionParamsOf(p);
  const MlpParams mp = MlpParamsOf(p);
  const auto round = [&](double v) {
    return RoundLikeDevice(p.dtype, static_cast<float>(v));
  };
  const auto in = [&](const char* name) {
    return absl::Span<const float>(io.In(name).f32);
  };
  HostArray k_cache = io.In("K_cache");
  HostArray v_cache = io.In("V_cache");
  std::vector<float> x(in("X").begin(), in("X").end());
  std::vector<double> sum(T * H);
  for (int64_t l = 0; l < L; ++l) {
    // h = x + AllReduce(attention(x)).
    std::fill(sum.begin(), sum.end(), 0.0);
    for (int64_t r = 0; r < R; ++r) {
      AttentionHostLayer layer;
      layer.x = x;
      layer.rmsnorm_gamma = LayerOf(in("rmsnorm_attn_gamma"), 1, 0, L, l);
      layer.w_qkv = LayerOf(in("W_qkv"), R, r, L, l);
      layer.cos = in("cos");
      layer.sin = in("sin");
      layer.mask_cache = in("mask_cache");
      layer.cache_position = io.In("cache_position").i32;
      layer.w_o = LayerOf(in("W_o"), R, r, L, l);
      layer.k_cache = LayerOf(absl::Span<float>(k_cache.f32), R, r, L, l);
      layer.v_cache = LayerOf(absl::Span<float>(v_cache.f32), R, r, L, l);
      NKI_ASSIGN_OR_RETURN(const std::vector<float> out,
                           AttentionLayerReference(ap, layer));
      for (int64_t k = 0; k < T * H; ++k) sum[k] += round(out[k]);
    }
    for (int64_t k = 0; k < T * H; ++k) x[k] = round(x[k] + round(sum[k]));
    // x = h + AllReduce(mlp(h)).
    std::fill(sum.begin(), sum.end(), 0.0);
    for (int64_t r = 0; r < R; ++r) {
      const std::vector<double> out = MlpTkgReferenceRows(
          mp, x, LayerOf(in("rmsnorm_mlp_gamma"), 1, 0, L, l),
          LayerOf(in("W_gate_up"), R, r, L, l),
          LayerOf(in("W_down"), R, r, L, l));
      for (int64_t k = 0; k < T * H; ++k) sum[k] += round(out[k]);
    }
    for (int64_t k = 0; k < T * H; ++k) x[k] = round(x[k] + round(sum[k]));
  }
  HostArray out = io.Zeros("out");
  for (int64_t r = 0; r < R; ++r) {
    std::copy(x.begin(), x.end(), out.f32.begin() + r * T * H);
  }
  k_cache.name = "K_cache";
  v_cache.name = "V_cache";
  HostArrays outputs;
  outputs.push_back(std::move(out));
  outputs.push_back(std::move(k_cache));
  outputs.push_back(std::move(v_cache));
  return outputs;
}

HostOutputs MakeTransformerTkgInputs(const TransformerParams& p,
                                     uint64_t seed) {
  NKI_ASSIGN_OR_RETURN(const HostIo io, TransformerTkgSpec().Host(p));
  std::mt19937_64 rng(seed);
  const InputDraws draw(io, p.dtype, rng);
  HostArrays inputs;
  inputs.push_back(draw.Uniform("X", -1.0, 1.0));
  inputs.push_back(draw.Uniform("rmsnorm_attn_gamma", 0.5, 1.5));
  inputs.push_back(draw.Uniform("rmsnorm_mlp_gamma", 0.5, 1.5));
  inputs.push_back(draw.FanInWeights("W_qkv", p.hidden));
  inputs.push_back(draw.FanInWeights("W_o", p.q_heads * p.head_dim));
  inputs.push_back(draw.FanInWeights("W_gate_up", p.hidden));
  inputs.push_back(draw.FanInWeights("W_down", p.intermediate));
  inputs.push_back(draw.Uniform("K_cache", -1.0, 1.0));
  inputs.push_back(draw.Uniform("V_cache", -1.0, 1.0));
  // cos and sin of one random angle per (token, frequency).
  HostArray cos = io.Zeros("cos");
  HostArray sin = io.Zeros("sin");
  std::uniform_real_distribution<double> angle(-M_PI, M_PI);
  for (size_t k = 0; k < cos.f32.size(); ++k) {
    const double a = angle(rng);
    cos.f32[k] = RoundLikeDevice(p.dtype, static_cast<float>(std::cos(a)));
    sin.f32[k] = RoundLikeDevice(p.dtype, static_cast<float>(std::sin(a)));
  }
  inputs.push_back(std::move(cos));
  inputs.push_back(std::move(sin));
  // About one prior position in eight masked out.
  HostArray mask = io.Zeros("mask_cache");
  for (float& v : mask.f32) v = rng() % 8 == 0 ? 0.0f : 1.0f;
  inputs.push_back(std::move(mask));
  HostArray position = io.Zeros("cache_position");
  for (int32_t& v : position.i32) {
    v = static_cast<int32_t>(rng() % (p.cache_len - p.seq_tkg + 1));
  }
  inputs.push_back(std::move(position));
  return inputs;
}

}  // namespace nkigraph::kernels
