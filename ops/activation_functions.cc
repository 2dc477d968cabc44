#include "ops/activation_functions.h"

#include <cmath>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"

namespace nkigraph::ops {
namespace {

struct ActInfo {
  ActFunc func;
  absl::string_view name;
};

constexpr ActInfo kActs[] = {
    {ActFunc::kCopy, "copy"},
    {ActFunc::kSquare, "square"},
    {ActFunc::kSigmoid, "sigmoid"},
    {ActFunc::kRelu, "relu"},
    {ActFunc::kGelu, "gelu"},
    {ActFunc::kGeluDx, "gelu_dx"},
    {ActFunc::kGeluApprxTanh, "gelu_apprx_tanh"},
    {ActFunc::kGeluApprxSigmoid, "gelu_apprx_sigmoid"},
    {ActFunc::kGeluApprxSigmoidDx, "gelu_apprx_sigmoid_dx"},
    {ActFunc::kSilu, "silu"},
    {ActFunc::kSiluDx, "silu_dx"},
    {ActFunc::kTanh, "tanh"},
    {ActFunc::kSoftplus, "softplus"},
    {ActFunc::kMish, "mish"},
    {ActFunc::kErf, "erf"},
    {ActFunc::kErfDx, "erf_dx"},
    {ActFunc::kExp, "exp"},
    {ActFunc::kLog, "log"},
    {ActFunc::kSin, "sin"},
    {ActFunc::kArctan, "arctan"},
    {ActFunc::kSqrt, "sqrt"},
    {ActFunc::kRsqrt, "rsqrt"},
    {ActFunc::kReciprocal, "reciprocal"},
    {ActFunc::kSign, "sign"},
    {ActFunc::kAbs, "abs"},
};

constexpr float kSqrt2OverPi = 0.7978845608028654f;
constexpr float kInvSqrt2 = 0.7071067811865476f;
constexpr float kInvSqrt2Pi = 0.3989422804014327f;
constexpr float k2OverSqrtPi = 1.1283791670955126f;
constexpr float kSwishAlpha = 1.702f;

float Sigmoid(float x) { return 1.0f / (1.0f + std::exp(-x)); }
float Softplus(float x) { return x > 20.0f ? x : std::log1p(std::exp(x)); }

}  // namespace

absl::string_view ActFuncName(ActFunc func) {
  for (const ActInfo& info : kActs) {
    if (info.func == func) return info.name;
  }
  return "invalid_activation";
}

absl::StatusOr<ActFunc> ParseActFunc(absl::string_view name) {
  // Checked for every traced and executed instruction: a hash lookup, not a
  // scan of the table.
  static const auto* by_name = [] {
    auto* map = new absl::flat_hash_map<absl::string_view, ActFunc>;
    for (const ActInfo& info : kActs) map->emplace(info.name, info.func);
    return map;
  }();
  auto it = by_name->find(name);
  if (it != by_name->end()) return it->second;
  return absl::InvalidArgumentError(
      absl::StrCat("unknown activation function '", name, "'"));
}

float ApplyActFunc(ActFunc func, float x) {
  switch (func) {
    case ActFunc::kCopy:
      return x;
    case ActFunc::kSquare:
      return x * x;
    case ActFunc::kSigmoid:
      return Sigmoid(x);
    case ActFunc::kRelu:
      return x > 0.0f ? x : 0.0f;
    case ActFunc::kGelu:
      return 0.5f * x * (1.0f + std::erf(x * kInvSqrt2));
    case ActFunc::kGeluDx:
      return 0.5f * (1.0f + std::erf(x * kInvSqrt2)) +
             x * kInvSqrt2Pi * std::exp(-0.5f * x * x);
    case ActFunc::kGeluApprxTanh:
      return 0.5f * x *
             (1.0f + std::tanh(kSqrt2OverPi * (x + 0.044715f * x * x * x)));
    case ActFunc::kGeluApprxSigmoid:
      return x * Sigmoid(kSwishAlpha * x);
    case ActFunc::kGeluApprxSigmoidDx: {
      const float s = Sigmoid(kSwishAlpha * x);
      return s + kSwishAlpha * x * s * (1.0f - s);
    }
    case ActFunc::kSilu:
      return x * Sigmoid(x);
    case ActFunc::kSiluDx: {
      const float s = Sigmoid(x);
      return s + x * s * (1.0f - s);
    }
    case ActFunc::kTanh:
      return std::tanh(x);
    case ActFunc::kSoftplus:
      return Softplus(x);
    case ActFunc::kMish:
      return x * std::tanh(Softplus(x));
    case ActFunc::kErf:
      return std::erf(x);
    case ActFunc::kErfDx:
      return k2OverSqrtPi * std::exp(-x * x);
    case ActFunc::kExp:
      return std::exp(x);
    case ActFunc::kLog:
      return std::log(x);
    case ActFunc::kSin:
      return std::sin(x);
    case ActFunc::kArctan:
      return std::atan(x);
    case ActFunc::kSqrt:
      return std::sqrt(x);
    case ActFunc::kRsqrt:
      return 1.0f / std::sqrt(x);
    case ActFunc::kReciprocal:
      return 1.0f / x;
    case ActFunc::kSign:
      return x > 0.0f ? 1.0f : (x < 0.0f ? -1.0f : 0.0f);
    case ActFunc::kAbs:
      return std::fabs(x);
  }
  return x;
}

}  // namespace nkigraph::ops
