// The oracle of fgcc: each rank's group rows, gathered in rank order, times
// its rhs, in double.
#include <cstdint>
#include <vector>

#include "kernels/collective_reference.h"
#include "kernels/fgcc.h"
#include "util/status_macros.h"

namespace nkigraph::kernels {

HostOutputs FgccReference(const FgccParams& params, const HostArrays& inputs) {
  NKI_ASSIGN_OR_RETURN(const HostIo io, FgccSpec().Host(params, inputs));
  const std::vector<std::vector<float>> lhs =
      PerRankInput(io, "lhs", params.dtype);
  const std::vector<std::vector<float>> rhs =
      PerRankInput(io, "rhs", params.dtype);
  const int64_t tp = params.tp_degree, m = params.m, k = params.k, n = params.n;
  const int64_t ranks = io.num_ranks();

  std::vector<std::vector<float>> out(ranks, std::vector<float>(tp * m * n));
  std::vector<double> row(n);
  for (int64_t r = 0; r < ranks; ++r) {
    const std::vector<int64_t> group = GroupRanks(r, tp);
    for (int64_t j = 0; j < tp; ++j) {
      const std::vector<float>& a = lhs[group[j]];
      for (int64_t i = 0; i < m; ++i) {
        row.assign(n, 0.0);
        for (int64_t kk = 0; kk < k; ++kk) {
          const double x = a[i * k + kk];
          const float* b = &rhs[r][kk * n];
          for (int64_t c = 0; c < n; ++c) row[c] += x * b[c];
        }
        float* dst = &out[r][(j * m + i) * n];
        for (int64_t c = 0; c < n; ++c) dst[c] = static_cast<float>(row[c]);
      }
    }
  }
  std::vector<HostArray> outputs;
  outputs.push_back(PerRankOutput(io, "out", out));
  return outputs;
}

}  // namespace nkigraph::kernels
