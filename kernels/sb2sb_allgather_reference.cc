// The oracle of sb2sb_allgather(_tiled): each rank's group inputs side by
// side, group rank j at columns [j·W, (j+1)·W).
#include <cstdint>
#include <vector>

#include "kernels/collective_reference.h"
#include "kernels/sb2sb_allgather.h"
#include "util/status_macros.h"

namespace nkigraph::kernels {

HostOutputs Sb2sbAllgatherReference(const Sb2sbAllgatherParams& params,
                                    const HostArrays& inputs) {
  NKI_ASSIGN_OR_RETURN(const HostIo io, Sb2sbHostIo(params, inputs));
  const std::vector<std::vector<float>> inp =
      PerRankInput(io, "inp", params.dtype);
  const int64_t tp = params.tp_degree, rows = params.rows, w = params.width;
  const int64_t ranks = io.num_ranks();
  std::vector<std::vector<float>> out(ranks, std::vector<float>(rows * w * tp));
  for (int64_t r = 0; r < ranks; ++r) {
    const std::vector<int64_t> group = GroupRanks(r, tp);
    for (int64_t p = 0; p < rows; ++p) {
      for (int64_t j = 0; j < tp; ++j) {
        for (int64_t c = 0; c < w; ++c) {
          out[r][p * w * tp + j * w + c] = inp[group[j]][p * w + c];
        }
      }
    }
  }
  std::vector<HostArray> outputs;
  outputs.push_back(PerRankOutput(io, "out", out));
  return outputs;
}

}  // namespace nkigraph::kernels
