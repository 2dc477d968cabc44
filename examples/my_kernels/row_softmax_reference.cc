// The oracle of row_softmax: each row in double, max-shifted.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <utility>
#include <vector>

#include "row_softmax.h"
#include "util/status_macros.h"

namespace my_kernels {

nkigraph::HostOutputs RowSoftmaxReference(const RowSoftmaxParams& params,
                                          const nkigraph::HostArrays& inputs) {
  NKI_ASSIGN_OR_RETURN(const nkigraph::kernels::HostIo io,
                       RowSoftmaxSpec().Host(params, inputs));
  const nkigraph::HostArray& x = io.In("x");
  nkigraph::HostArray out = io.Zeros("out");
  const int64_t cols = params.cols;
  std::vector<double> e(cols);
  for (int64_t r = 0; r < params.rows; ++r) {
    const float* row = &x.f32[r * cols];
    const double max = *std::max_element(row, row + cols);
    double sum = 0;
    for (int64_t c = 0; c < cols; ++c) sum += e[c] = std::exp(row[c] - max);
    for (int64_t c = 0; c < cols; ++c) {
      out.f32[r * cols + c] = static_cast<float>(e[c] / sum);
    }
  }
  nkigraph::HostArrays outputs;
  outputs.push_back(std::move(out));
  return outputs;
}

}  // namespace my_kernels
