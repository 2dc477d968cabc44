// The oracle of attention_block_tkg: one layer in plain host loops, in
// double, the softmax over all attended positions computed the ordinary
// way (max, exponentials, sum) — independent of the kernel's tiles, head
// layouts and running statistics.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <random>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "kernels/attention_block_tkg.h"
#include "kernels/decode_common.h"
#include "kernels/device.h"
#include "kernels/input_draws.h"
#include "util/status_macros.h"

namespace nkigraph::kernels {
namespace {

// x / sqrt(mean(x²) + eps) · gamma over one head's d values, in place.
void NormalizeHead(double* x, absl::Span<const float> gamma, int64_t d,
                   double eps) {
  double sum = 0;
  for (int64_t j = 0; j < d; ++j) sum += x[j] * x[j];
  const double rstd = 1.0 / std::sqrt(sum / static_cast<double>(d) + eps);
  for (int64_t j = 0; j < d; ++j) x[j] = x[j] * rstd * gamma[j];
}

// Rotate-half RoPE of one head with this token's cos and sin [d/2].
void RotateHead(double* x, const float* cos, const float* sin, int64_t d) {
  const int64_t half = d / 2;
  for (int64_t j = 0; j < half; ++j) {
    const double x1 = x[j], x2 = x[j + half];
    x[j] = x1 * cos[j] - x2 * sin[j];
    x[j + half] = x2 * cos[j] + x1 * sin[j];
  }
}

// What the cache stores: clipped to ±the e4m3 maximum and rounded to e4m3
// with fp8_kv, else the value rounded to dtype.
double Stored(const AttentionParams& p, double value) {
  if (!p.fp8_kv) return RoundLikeDevice(p.dtype, static_cast<float>(value));
  const double max = KernelDevice().fp8_e4m3_max;
  return RoundLikeDevice(proto::FLOAT8_E4M3,
                         static_cast<float>(std::clamp(value, -max, max)));
}

}  // namespace

absl::StatusOr<std::vector<float>> AttentionLayerReference(
    const AttentionParams& p, const AttentionHostLayer& in) {
  const int64_t B = p.batch, S = p.seq_tkg, T = p.tokens(), H = p.hidden;
  const int64_t Hq = p.q_heads, Hkv = p.kv_heads, d = p.head_dim;
  const int64_t C = p.cache_len, W = p.QkvWidth(), R = Hq / Hkv;
  for (int64_t b = 0; b < B; ++b) {
    const int64_t pos = in.cache_position[b];
    if (pos < 0 || pos > C - S) {
      return absl::InvalidArgumentError(
          absl::StrCat("cache_position[", b, "] is ", pos,
                       "; it must be in [0, C − S] = [0, ", C - S, "]"));
    }
  }

  // RMSNorm of X, rounded to dtype as the projection's operand.
  std::vector<double> xn =
      ReferenceRmsNorm(in.x, in.rmsnorm_gamma, T, H, p.rmsnorm_eps);
  for (double& v : xn) v = RoundLikeDevice(p.dtype, static_cast<float>(v));

  // qkv[t, c] = Σ_h xn[t, h] · W_qkv[h, c].
  std::vector<double> qkv(T * W, 0.0);
  for (int64_t t = 0; t < T; ++t) {
    for (int64_t h = 0; h < H; ++h) {
      const double x = xn[t * H + h];
      for (int64_t c = 0; c < W; ++c) qkv[t * W + c] += x * in.w_qkv[h * W + c];
    }
  }
  // Head (t, head) of q, k, v starts at these offsets of qkv.
  const auto q_at = [&](int64_t t, int64_t h) { return &qkv[t * W + h * d]; };
  const auto k_at = [&](int64_t t, int64_t g) {
    return &qkv[t * W + (Hq + g) * d];
  };
  const auto v_at = [&](int64_t t, int64_t g) {
    return &qkv[t * W + (Hq + Hkv + g) * d];
  };

  // RoPE of one head of token t, with the optional norm before or after.
  const auto rope = [&](double* head, int64_t t,
                        absl::Span<const float> gamma) {
    if (p.qk_norm == QkNorm::kPreRope) {
      NormalizeHead(head, gamma, d, p.rmsnorm_eps);
    }
    RotateHead(head, &in.cos[t * (d / 2)], &in.sin[t * (d / 2)], d);
    if (p.qk_norm == QkNorm::kPostRope) {
      NormalizeHead(head, gamma, d, p.rmsnorm_eps);
    }
  };

  for (int64_t t = 0; t < T; ++t) {
    for (int64_t h = 0; h < Hq; ++h) rope(q_at(t, h), t, in.qk_norm_gamma_q);
    for (int64_t g = 0; g < Hkv; ++g) {
      double* k = k_at(t, g);
      rope(k, t, in.qk_norm_gamma_k);
      // The active K and V are attended exactly as the cache stores them
      // under fp8; otherwise as computed.
      if (p.fp8_kv) {
        double* v = v_at(t, g);
        for (int64_t j = 0; j < d; ++j) {
          k[j] = Stored(p, k[j]);
          v[j] = Stored(p, v[j]);
        }
      }
    }
  }

  // Attention: query head h of token (b, s) over the prior positions j
  // with mask_cache[b, j] = 1 and the active tokens s' ≤ s, kv head h / R.
  const double scale = 1.0 / std::sqrt(static_cast<double>(d));
  std::vector<double> attn(T * Hq * d, 0.0);
  std::vector<double> scores;
  std::vector<const float*> cache_values;
  std::vector<const double*> active_values;
  for (int64_t b = 0; b < B; ++b) {
    for (int64_t s = 0; s < S; ++s) {
      const int64_t t = b * S + s;
      for (int64_t h = 0; h < Hq; ++h) {
        const int64_t g = h / R;
        const double* q = q_at(t, h);
        scores.clear();
        cache_values.clear();
        active_values.clear();
        for (int64_t j = 0; j < C; ++j) {
          if (in.mask_cache[b * C + j] != 1.0f) continue;
          const float* k = &in.k_cache[((b * Hkv + g) * C + j) * d];
          double dot = 0;
          for (int64_t e = 0; e < d; ++e) dot += q[e] * k[e];
          scores.push_back(dot * scale);
          cache_values.push_back(&in.v_cache[((b * Hkv + g) * C + j) * d]);
        }
        for (int64_t s2 = 0; s2 <= s; ++s2) {
          const double* k = k_at(b * S + s2, g);
          double dot = 0;
          for (int64_t e = 0; e < d; ++e) dot += q[e] * k[e];
          scores.push_back(dot * scale);
          active_values.push_back(v_at(b * S + s2, g));
        }
        const double max = *std::max_element(scores.begin(), scores.end());
        double sum = 0;
        for (double& x : scores) {
          x = std::exp(x - max);
          sum += x;
        }
        double* o = &attn[(t * Hq + h) * d];
        const size_t n_cache = cache_values.size();
        for (size_t i = 0; i < scores.size(); ++i) {
          const double weight = scores[i] / sum;
          for (int64_t e = 0; e < d; ++e) {
            o[e] += weight * (i < n_cache ? double{cache_values[i][e]}
                                          : active_values[i - n_cache][e]);
          }
        }
      }
    }
  }

  // The cache update, after every read of the prior cache.
  for (int64_t b = 0; b < B; ++b) {
    const int64_t pos = in.cache_position[b];
    for (int64_t s = 0; s < S; ++s) {
      for (int64_t g = 0; g < Hkv; ++g) {
        const int64_t row = ((b * Hkv + g) * C + pos + s) * d;
        const double* k = k_at(b * S + s, g);
        const double* v = v_at(b * S + s, g);
        for (int64_t e = 0; e < d; ++e) {
          in.k_cache[row + e] = static_cast<float>(Stored(p, k[e]));
          in.v_cache[row + e] = static_cast<float>(Stored(p, v[e]));
        }
      }
    }
  }

  const int64_t width = p.OutWidth();
  std::vector<float> out(T * width);
  if (!p.o_proj) {
    for (int64_t i = 0; i < T * width; ++i)
      out[i] = static_cast<float>(attn[i]);
    return out;
  }
  // o_proj: out[t, :] = attn[t, :] · W_o.
  const int64_t K = Hq * d;
  std::vector<double> row(H);
  for (int64_t t = 0; t < T; ++t) {
    row.assign(H, 0.0);
    for (int64_t k = 0; k < K; ++k) {
      const double a = attn[t * K + k];
      for (int64_t c = 0; c < H; ++c) row[c] += a * in.w_o[k * H + c];
    }
    for (int64_t c = 0; c < H; ++c) out[t * H + c] = static_cast<float>(row[c]);
  }
  return out;
}

HostOutputs AttentionBlockTkgReference(const AttentionParams& p,
                                       const HostArrays& inputs) {
  NKI_ASSIGN_OR_RETURN(const HostIo io,
                       AttentionBlockTkgSpec().Host(p, inputs));
  HostArray k_cache = io.In("K_cache");
  HostArray v_cache = io.In("V_cache");
  const auto span_of = [&](absl::string_view name) {
    const HostArray* a = io.Optional(name);
    return a == nullptr ? absl::Span<const float>()
                        : absl::Span<const float>(a->f32);
  };
  AttentionHostLayer layer;
  layer.x = io.In("X").f32;
  layer.rmsnorm_gamma = io.In("rmsnorm_gamma").f32;
  layer.w_qkv = io.In("W_qkv").f32;
  layer.cos = io.In("cos").f32;
  layer.sin = io.In("sin").f32;
  layer.mask_cache = io.In("mask_cache").f32;
  layer.cache_position = io.In("cache_position").i32;
  layer.qk_norm_gamma_q = span_of("qk_norm_gamma_q");
  layer.qk_norm_gamma_k = span_of("qk_norm_gamma_k");
  layer.w_o = span_of("W_o");
  layer.k_cache = absl::MakeSpan(k_cache.f32);
  layer.v_cache = absl::MakeSpan(v_cache.f32);
  NKI_ASSIGN_OR_RETURN(std::vector<float> out,
                       AttentionLayerReference(p, layer));
  HostArray out_array = io.Zeros("out");
  out_array.f32 = std::move(out);
  std::vector<HostArray> outputs;
  outputs.push_back(std::move(out_array));
  outputs.push_back(std::move(k_cache));
  outputs.push_back(std::move(v_cache));
  return outputs;
}

HostOutputs MakeAttentionBlockTkgInputs(const AttentionParams& p,
                                        uint64_t seed) {
  NKI_ASSIGN_OR_RETURN(const HostIo io, AttentionBlockTkgSpec().Host(p));
  std::mt19937_64 rng(seed);
  const int64_t B = p.batch, S = p.seq_tkg, C = p.cache_len, d = p.head_dim;
  std::vector<HostArray> inputs;
  const InputDraws draw(io, p.dtype, rng);
  inputs.push_back(draw.Uniform("X", -1.0, 1.0));
  inputs.push_back(draw.Uniform("rmsnorm_gamma", 0.5, 1.5));
  inputs.push_back(draw.FanInWeights("W_qkv", p.hidden));
  inputs.push_back(draw.Uniform("K_cache", -1.0, 1.0, p.CacheDType()));
  inputs.push_back(draw.Uniform("V_cache", -1.0, 1.0, p.CacheDType()));
  if (p.qk_norm != QkNorm::kNone) {
    inputs.push_back(draw.Uniform("qk_norm_gamma_q", 0.5, 1.5));
    inputs.push_back(draw.Uniform("qk_norm_gamma_k", 0.5, 1.5));
  }
  if (p.o_proj) {
    inputs.push_back(draw.FanInWeights("W_o", p.q_heads * p.head_dim));
  }

  HostArray position = io.Zeros("cache_position");
  for (int32_t& v : position.i32) {
    v = static_cast<int32_t>(rng() % static_cast<uint64_t>(C - S + 1));
  }
  // The prior positions are those before cache_position, a tenth of them
  // masked out; the rest of the cache is not attended.
  HostArray mask = io.Zeros("mask_cache");
  for (int64_t b = 0; b < B; ++b) {
    for (int64_t j = 0; j < position.i32[b]; ++j) {
      mask.f32[b * C + j] = rng() % 10 == 0 ? 0.0f : 1.0f;
    }
  }
  // RoPE angles (position + s) · 10000^(−2j/d).
  HostArray cos = io.Zeros("cos"), sin = io.Zeros("sin");
  for (int64_t b = 0; b < B; ++b) {
    for (int64_t s = 0; s < S; ++s) {
      for (int64_t j = 0; j < d / 2; ++j) {
        const double angle = static_cast<double>(position.i32[b] + s) *
                             std::pow(10000.0, -2.0 * static_cast<double>(j) /
                                                   static_cast<double>(d));
        const int64_t i = (b * S + s) * (d / 2) + j;
        cos.f32[i] =
            RoundLikeDevice(p.dtype, static_cast<float>(std::cos(angle)));
        sin.f32[i] =
            RoundLikeDevice(p.dtype, static_cast<float>(std::sin(angle)));
      }
    }
  }
  inputs.push_back(std::move(position));
  inputs.push_back(std::move(mask));
  inputs.push_back(std::move(cos));
  inputs.push_back(std::move(sin));
  return inputs;
}

}  // namespace nkigraph::kernels
