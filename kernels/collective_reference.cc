#include "kernels/collective_reference.h"

#include <utility>

#include "kernels/device.h"
#include "util/status_macros.h"

namespace nkigraph::kernels {
std::vector<std::vector<float>> PerRankInput(const HostIo& io,
                                             const std::string& name,
                                             proto::DType dtype) {
  const HostArray& array = io.In(name);
  const int64_t num_ranks = io.num_ranks();
  const int64_t per_rank = array.num_elements() / num_ranks;
  std::vector<std::vector<float>> ranks(num_ranks);
  for (int64_t r = 0; r < num_ranks; ++r) {
    ranks[r].reserve(per_rank);
    for (int64_t e = 0; e < per_rank; ++e) {
      ranks[r].push_back(RoundLikeDevice(dtype, array.f32[r * per_rank + e]));
    }
  }
  return ranks;
}

HostArray PerRankOutput(const HostIo& io, const std::string& name,
                        const std::vector<std::vector<float>>& per_rank) {
  HostArray out = io.Zeros(name);
  out.f32.clear();
  for (const std::vector<float>& values : per_rank) {
    out.f32.insert(out.f32.end(), values.begin(), values.end());
  }
  return out;
}

std::vector<int64_t> GroupRanks(int64_t rank, int64_t tp_degree) {
  const int64_t first = rank / tp_degree * tp_degree;
  std::vector<int64_t> ranks;
  for (int64_t j = 0; j < tp_degree; ++j) ranks.push_back(first + j);
  return ranks;
}

}  // namespace nkigraph::kernels
