#include "kernels/collective_reference.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "util/dtype.h"
#include "util/status_macros.h"

namespace nkigraph::kernels {
namespace {

std::vector<int64_t> HostShape(int64_t num_ranks,
                               const std::vector<int64_t>& shape) {
  std::vector<int64_t> host;
  if (num_ranks > 1) host.push_back(num_ranks);
  host.insert(host.end(), shape.begin(), shape.end());
  return host;
}

int64_t Elements(const std::vector<int64_t>& shape) {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

}  // namespace

absl::StatusOr<std::vector<std::vector<float>>> PerRankInput(
    const std::vector<HostArray>& inputs, const std::string& name,
    int64_t num_ranks, const std::vector<int64_t>& shape, proto::DType dtype) {
  NKI_ASSIGN_OR_RETURN(
      const HostArray* array,
      FindHostInput(inputs, name, HostShape(num_ranks, shape)));
  const int64_t per_rank = Elements(shape);
  std::vector<std::vector<float>> ranks(num_ranks);
  for (int64_t r = 0; r < num_ranks; ++r) {
    ranks[r].reserve(per_rank);
    for (int64_t e = 0; e < per_rank; ++e) {
      ranks[r].push_back(
          RoundTo(dtype, array->f32[r * per_rank + e], /*fp8_max=*/240.0f));
    }
  }
  return ranks;
}

HostArray PerRankOutput(const std::string& name,
                        const std::vector<int64_t>& shape,
                        const std::vector<std::vector<float>>& per_rank) {
  HostArray out;
  out.name = name;
  out.dtype = proto::FLOAT32;
  out.shape = HostShape(static_cast<int64_t>(per_rank.size()), shape);
  out.f32.reserve(Elements(out.shape));
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
