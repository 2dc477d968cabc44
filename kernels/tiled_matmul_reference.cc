// The oracle of tiled_matmul: a plain triple loop in double.
#include <cstdint>
#include <vector>

#include "kernels/tiled_matmul.h"
#include "util/status_macros.h"

namespace nkigraph::kernels {

HostOutputs TiledMatmulReference(const TiledMatmulParams& params,
                                 const HostArrays& inputs) {
  NKI_ASSIGN_OR_RETURN(const HostIo io, TiledMatmulSpec().Host(params, inputs));
  const HostArray& lhs = io.In("lhs");
  const HostArray& rhs = io.In("rhs");
  const HostArray* bias = io.Optional("bias");  // nullptr without bias
  const int64_t m = params.m, k = params.k, n = params.n;
  HostArray out = io.Zeros("out");
  std::vector<double> row(n);
  for (int64_t i = 0; i < m; ++i) {
    for (int64_t j = 0; j < n; ++j) row[j] = bias ? bias->f32[j] : 0.0;
    for (int64_t kk = 0; kk < k; ++kk) {
      const double a = lhs.f32[i * k + kk];
      const float* b = &rhs.f32[kk * n];
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
