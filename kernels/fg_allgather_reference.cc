// The oracle of fg_allgather: each rank's group rows, concatenated in rank
// order.
#include <cstdint>
#include <vector>

#include "kernels/collective_reference.h"
#include "kernels/fg_allgather.h"
#include "util/status_macros.h"

namespace nkigraph::kernels {

HostOutputs FgAllgatherReference(const RingParams& params,
                                 const HostArrays& inputs) {
  NKI_ASSIGN_OR_RETURN(const HostIo io, FgAllgatherSpec().Host(params, inputs));
  const std::vector<std::vector<float>> lhs =
      PerRankInput(io, "lhs", params.dtype);
  const int64_t tp = params.tp_degree, ranks = io.num_ranks();
  std::vector<std::vector<float>> result(ranks);
  for (int64_t r = 0; r < ranks; ++r) {
    for (int64_t j : GroupRanks(r, tp)) {
      result[r].insert(result[r].end(), lhs[j].begin(), lhs[j].end());
    }
  }
  std::vector<HostArray> outputs;
  outputs.push_back(PerRankOutput(io, "result", result));
  return outputs;
}

}  // namespace nkigraph::kernels
