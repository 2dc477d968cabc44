#ifndef NKIGRAPH_OPS_ACTIVATION_FUNCTIONS_H_
#define NKIGRAPH_OPS_ACTIVATION_FUNCTIONS_H_

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

absl::string_view ActFuncName(ActFunc func);
absl::StatusOr<ActFunc> ParseActFunc(absl::string_view name);
float ApplyActFunc(ActFunc func, float x);

}  // namespace nkigraph::ops

#endif  // NKIGRAPH_OPS_ACTIVATION_FUNCTIONS_H_
