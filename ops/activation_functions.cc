#include "ops/activation_functions.h"

#include <algorithm>
#include <cmath>
#include <iterator>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "ops/row_ops.h"
#include "ops/vector_exp.h"

namespace nkigraph::ops {
namespace {

constexpr float kSqrt2OverPi = 0.7978845608028654f;
constexpr float kInvSqrt2 = 0.7071067811865476f;
constexpr float kInvSqrt2Pi = 0.3989422804014327f;
constexpr float k2OverSqrtPi = 1.1283791670955126f;
constexpr float kSwishAlpha = 1.702f;

float Sigmoid(float x) { return 1.0f / (1.0f + ExpOf(-x)); }
float Softplus(float x) { return x > 20.0f ? x : std::log1p(ExpOf(x)); }

const absl::flat_hash_map<absl::string_view, ActFunc>& ByName() {
  static const auto* by_name = [] {
    auto* map = new absl::flat_hash_map<absl::string_view, ActFunc>;
    for (const ActFuncInfo& info : kActFuncs) {
      map->emplace(info.name, info.value);
    }
    return map;
  }();
  return *by_name;
}

}  // namespace

absl::StatusOr<ActFunc> ParseActFunc(absl::string_view name) {
  // Read for every executed instruction: a hash lookup, not a scan of the
  // table.
  auto it = ByName().find(name);
  if (it != ByName().end()) return it->second;
  return absl::InvalidArgumentError(
      absl::StrCat("unknown activation function '", name, "'"));
}

bool IsActFuncName(absl::string_view name) { return ByName().contains(name); }

// Out of line on purpose: ApplyActFuncRow's NaN fallback calls this very
// code, whose choice between two NaNs is the reference.
[[gnu::noinline]] float ApplyActFunc(ActFunc func, float x) {
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
             x * kInvSqrt2Pi * ExpOf(-0.5f * x * x);
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
      return k2OverSqrtPi * ExpOf(-x * x);
    case ActFunc::kExp:
      return ExpOf(x);
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

namespace {

template <ActFunc kFunc>
void MapRow(float* v, int64_t n) {
  for (int64_t j = 0; j < n; ++j) v[j] = ApplyActFunc(kFunc, v[j]);
}

// v[j] = 1 / (1 + exp(-(alpha v[j]))), Sigmoid's operations on rows.
void SigmoidRow(float alpha_or_one, bool scaled, const float* x, float* out,
                int64_t n) {
  for (int64_t j = 0; j < n; ++j) {
    out[j] = -(scaled ? alpha_or_one * x[j] : x[j]);
  }
  ExpRow(out, out, n);
  for (int64_t j = 0; j < n; ++j) out[j] = 1.0f / (1.0f + out[j]);
}

}  // namespace

void ApplyActFuncRow(ActFunc func, const float* x, float scale, float bias,
                     float* out, int64_t n) {
  if (func == ActFunc::kExp && scale == scale && bias == bias) {
    // No two NaNs can meet here (only x's can be one, and ExpOf keeps it),
    // so the row needs no scan: one pass.
    return ExpAffineRow(x, scale, bias, out, n);
  }
  if (scale != scale || bias != bias || RowHasNan(x, n)) {
    // Two NaNs may meet: element by element, as ApplyActFunc decides.
    for (int64_t j = 0; j < n; ++j) {
      out[j] = ApplyActFunc(func, x[j] * scale + bias);
    }
    return;
  }
  for (int64_t j = 0; j < n; ++j) out[j] = x[j] * scale + bias;
  switch (func) {
    case ActFunc::kCopy:
      return;
    case ActFunc::kSigmoid:
      return SigmoidRow(1.0f, false, out, out, n);
    case ActFunc::kSilu:
    case ActFunc::kGeluApprxSigmoid: {
      // x * Sigmoid(x) and x * Sigmoid(1.702 x): the sigmoid in a second
      // buffer would cost an allocation, so by blocks on the stack.
      const bool swish = func == ActFunc::kGeluApprxSigmoid;
      constexpr int64_t kBlock = 256;
      float s[kBlock];
      for (int64_t j0 = 0; j0 < n; j0 += kBlock) {
        const int64_t m = std::min(kBlock, n - j0);
        SigmoidRow(kSwishAlpha, swish, out + j0, s, m);
        for (int64_t j = 0; j < m; ++j) out[j0 + j] = out[j0 + j] * s[j];
      }
      return;
    }
    default:
      break;
  }
  switch (func) {
#define NKIGRAPH_ACT_CASE(f) \
  case f:                    \
    return MapRow<f>(out, n);
    NKIGRAPH_ACT_CASE(ActFunc::kSquare)
    NKIGRAPH_ACT_CASE(ActFunc::kRelu)
    NKIGRAPH_ACT_CASE(ActFunc::kGelu)
    NKIGRAPH_ACT_CASE(ActFunc::kGeluDx)
    NKIGRAPH_ACT_CASE(ActFunc::kGeluApprxTanh)
    NKIGRAPH_ACT_CASE(ActFunc::kGeluApprxSigmoidDx)
    NKIGRAPH_ACT_CASE(ActFunc::kSiluDx)
    NKIGRAPH_ACT_CASE(ActFunc::kTanh)
    NKIGRAPH_ACT_CASE(ActFunc::kSoftplus)
    NKIGRAPH_ACT_CASE(ActFunc::kMish)
    NKIGRAPH_ACT_CASE(ActFunc::kErf)
    NKIGRAPH_ACT_CASE(ActFunc::kErfDx)
    NKIGRAPH_ACT_CASE(ActFunc::kLog)
    NKIGRAPH_ACT_CASE(ActFunc::kSin)
    NKIGRAPH_ACT_CASE(ActFunc::kArctan)
    NKIGRAPH_ACT_CASE(ActFunc::kSqrt)
    NKIGRAPH_ACT_CASE(ActFunc::kRsqrt)
    NKIGRAPH_ACT_CASE(ActFunc::kReciprocal)
    NKIGRAPH_ACT_CASE(ActFunc::kSign)
    NKIGRAPH_ACT_CASE(ActFunc::kAbs)
#undef NKIGRAPH_ACT_CASE
    default:
      return;
  }
}

}  // namespace nkigraph::ops
