// The oracle of cross_entropy_forward: a two-pass log-sum-exp per row in
// double (max, then the shifted sum), independent of the kernel's chunked
// recurrence.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <utility>
#include <vector>

#include "kernels/cross_entropy_forward.h"
#include "util/status_macros.h"

namespace nkigraph::kernels {

HostOutputs CrossEntropyForwardReference(const CrossEntropyParams& params,
                                         const HostArrays& inputs) {
  NKI_ASSIGN_OR_RETURN(const HostIo io,
                       CrossEntropyForwardSpec().Host(params, inputs));
  const HostArray& logits = io.In("logits");
  const HostArray& targets = io.In("targets");
  const int64_t p = params.num_positions, v = params.vocab_size;
  HostArray loss = io.Zeros("loss");
  HostArray lse_state = io.Zeros("lse_state");
  for (int64_t i = 0; i < p; ++i) {
    const float* row = &logits.f32[i * v];
    const double m = *std::max_element(row, row + v);
    double sum = 0.0;
    for (int64_t j = 0; j < v; ++j) sum += std::exp(row[j] - m);
    const double lse = m + std::log(sum);
    NKI_ASSIGN_OR_RETURN(const bool ignored,
                         ReferenceIgnored(params, targets, i));
    lse_state.f32[i] = static_cast<float>(lse);
    loss.f32[i] =
        ignored ? 0.0f : static_cast<float>(lse - row[targets.i32[i]]);
  }
  std::vector<HostArray> outputs;
  outputs.push_back(std::move(loss));
  outputs.push_back(std::move(lse_state));
  return outputs;
}

}  // namespace nkigraph::kernels
