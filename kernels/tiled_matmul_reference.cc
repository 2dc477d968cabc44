// The oracle of tiled_matmul: a plain triple loop in double.
#include <cstdint>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "kernels/tiled_matmul.h"
#include "util/status_macros.h"

namespace nkigraph::kernels {

absl::StatusOr<std::vector<HostArray>> TiledMatmulReference(
    const TiledMatmulParams& params, const std::vector<HostArray>& inputs) {
  NKI_RETURN_IF_ERROR(ValidateTiledMatmulParams(params));
  const int64_t m = params.m, k = params.k, n = params.n;
  NKI_ASSIGN_OR_RETURN(const HostArray* lhs,
                       FindHostInput(inputs, "lhs", {m, k}));
  NKI_ASSIGN_OR_RETURN(const HostArray* rhs,
                       FindHostInput(inputs, "rhs", {k, n}));
  const HostArray* bias = nullptr;
  if (params.bias) {
    NKI_ASSIGN_OR_RETURN(bias, FindHostInput(inputs, "bias", {n}));
  }

  HostArray out;
  out.name = "out";
  out.dtype = proto::FLOAT32;
  out.shape = {m, n};
  out.f32.resize(m * n);
  std::vector<double> row(n);
  for (int64_t i = 0; i < m; ++i) {
    for (int64_t j = 0; j < n; ++j) row[j] = bias ? bias->f32[j] : 0.0;
    for (int64_t kk = 0; kk < k; ++kk) {
      const double a = lhs->f32[i * k + kk];
      const float* b = &rhs->f32[kk * n];
      for (int64_t j = 0; j < n; ++j) row[j] += a * b[j];
    }
    for (int64_t j = 0; j < n; ++j) {
      out.f32[i * n + j] =
          static_cast<float>(ReferenceActivation(params.activation, row[j]));
    }
  }
  std::vector<HostArray> outputs;
  outputs.push_back(std::move(out));
  return outputs;
}

}  // namespace nkigraph::kernels
