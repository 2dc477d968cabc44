#ifndef NKIGRAPH_OPS_ACTIVATION_FUNCTIONS_H_
#define NKIGRAPH_OPS_ACTIVATION_FUNCTIONS_H_

#include <array>
#include <cstddef>
#include <iterator>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace nkigraph::ops {

// The scalar engine's activation function set (nki.api.shared "nki-act-func").
// The hardware evaluates piecewise-polynomial approximations; nkigraph
// evaluates the exact functions in fp32 and documents that difference.
enum class ActFunc {
  kCopy,
  kSquare,
  kSigmoid,
  kRelu,
  kGelu,
  kGeluDx,
  kGeluApprxTanh,
  kGeluApprxSigmoid,    // x * sigmoid(1.702 x), also called swish
  kGeluApprxSigmoidDx,  // its derivative
  kSilu,
  kSiluDx,
  kTanh,
  kSoftplus,
  kMish,
  kErf,
  kErfDx,
  kExp,
  kLog,
  kSin,
  kArctan,
  kSqrt,
  kRsqrt,
  kReciprocal,
  kSign,
  kAbs,
};

// Every ActFunc with its name (the names attribute schemas allow).
struct ActFuncInfo {
  ActFunc value;
  absl::string_view name;
};
inline constexpr ActFuncInfo kActFuncs[] = {
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

constexpr absl::string_view ActFuncName(ActFunc value) {
  for (const ActFuncInfo& info : kActFuncs) {
    if (info.value == value) return info.name;
  }
  return "invalid_activation";
}

// The names alone, in table order.
inline constexpr auto kActFuncNames = [] {
  std::array<absl::string_view, std::size(kActFuncs)> names{};
  for (size_t i = 0; i < names.size(); ++i) names[i] = kActFuncs[i].name;
  return names;
}();
absl::StatusOr<ActFunc> ParseActFunc(absl::string_view name);
// Whether `name` names a function (a hash lookup).
bool IsActFuncName(absl::string_view name);
float ApplyActFunc(ActFunc func, float x);

}  // namespace nkigraph::ops

#endif  // NKIGRAPH_OPS_ACTIVATION_FUNCTIONS_H_
