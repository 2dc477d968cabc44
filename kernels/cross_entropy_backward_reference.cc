// The oracle of cross_entropy_backward, in double, from the given
// lse_state: grad[i, j] = s · (exp(logits[i, j] − lse[i]) − [j == t_i]).
#include <cmath>
#include <cstdint>
#include <utility>
#include <vector>

#include "kernels/cross_entropy_backward.h"
#include "util/status_macros.h"

namespace nkigraph::kernels {

HostOutputs CrossEntropyBackwardReference(
    const CrossEntropyBackwardParams& params, const HostArrays& inputs) {
  NKI_ASSIGN_OR_RETURN(const HostIo io,
                       CrossEntropyBackwardSpec().Host(params, inputs));
  const HostArray& logits = io.In("logits");
  const HostArray& targets = io.In("targets");
  const HostArray& lse_state = io.In("lse_state");
  const int64_t p = params.num_positions, v = params.vocab_size;

  std::vector<bool> ignored(p);
  int64_t counted = 0;
  for (int64_t i = 0; i < p; ++i) {
    NKI_ASSIGN_OR_RETURN(const bool skip, ReferenceIgnored(params, targets, i));
    ignored[i] = skip;
    counted += skip ? 0 : 1;
  }
  double s = 1.0;
  if (params.reduction == CrossEntropyReduction::kMean) {
    s = 1.0 / static_cast<double>(counted > 0 ? counted : 1);
  }

  HostArray grad = io.Zeros("grad_logits");
  for (int64_t i = 0; i < p; ++i) {
    if (ignored[i]) continue;
    const double lse = lse_state.f32[i];
    const int64_t target = targets.i32[i];
    for (int64_t j = 0; j < v; ++j) {
      const double softmax = std::exp(logits.f32[i * v + j] - lse);
      grad.f32[i * v + j] =
          static_cast<float>(s * (softmax - (j == target ? 1.0 : 0.0)));
    }
  }
  std::vector<HostArray> outputs;
  outputs.push_back(std::move(grad));
  return outputs;
}

}  // namespace nkigraph::kernels
