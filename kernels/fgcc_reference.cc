// The oracle of fgcc: each rank's group rows, gathered in rank order, times
// its rhs, in double.
#include <cstdint>
#include <vector>

#include "kernels/collective_reference.h"
#include "kernels/fgcc.h"
#include "util/status_macros.h"

namespace nkigraph::kernels {

absl::StatusOr<std::vector<HostArray>> FgccReference(
    const FgccParams& params, const std::vector<HostArray>& inputs) {
  NKI_RETURN_IF_ERROR(ValidateFgccParams(params));
  const RingParams& ring = params.ring;
  const int64_t tp = ring.tp_degree, m = ring.m, k = ring.k, n = params.n;
  const int64_t ranks = tp * ring.num_groups;
  NKI_ASSIGN_OR_RETURN(const std::vector<std::vector<float>> lhs,
                       PerRankInput(inputs, "lhs", ranks, {m, k}, ring.dtype));
  NKI_ASSIGN_OR_RETURN(const std::vector<std::vector<float>> rhs,
                       PerRankInput(inputs, "rhs", ranks, {k, n}, ring.dtype));

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
  outputs.push_back(PerRankOutput("out", {tp * m, n}, out));
  return outputs;
}

}  // namespace nkigraph::kernels
