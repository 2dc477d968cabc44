// The oracle of conv1d: the definition's sums in double, straight from the
// contract:
//   out[b,o,l] = act(bias[o] + sum_i sum_k filters[k,i,o] *
//                    x[b, i, l*stride + k*dilation - pad_left]),
// x outside [0, L) being zero.
#include <cstdint>
#include <utility>
#include <vector>

#include "kernels/conv1d.h"
#include "kernels/conv_common.h"
#include "util/status_macros.h"

namespace nkigraph::kernels {

HostOutputs Conv1dReference(const Conv1dParams& params,
                            const HostArrays& inputs) {
  NKI_ASSIGN_OR_RETURN(const HostIo io, Conv1dSpec().Host(params, inputs));
  const HostArray& x = io.In("x_in");
  const HostArray& filters = io.In("filters");
  const HostArray* bias = io.Optional("bias");  // nullptr without bias
  const int64_t batch = params.batch, c_in = params.c_in, c_out = params.c_out,
                length = params.length, taps = params.kernel_size,
                l_out = params.l_out();
  HostArray out = io.Zeros("out");
  std::vector<double> acc(c_out);
  for (int64_t b = 0; b < batch; ++b) {
    for (int64_t l = 0; l < l_out; ++l) {
      for (int64_t o = 0; o < c_out; ++o) acc[o] = bias ? bias->f32[o] : 0.0;
      for (int64_t k = 0; k < taps; ++k) {
        const int64_t pos =
            l * params.stride + k * params.dilation - params.pad_left;
        if (pos < 0 || pos >= length) continue;
        for (int64_t i = 0; i < c_in; ++i) {
          const double xv = x.f32[(b * c_in + i) * length + pos];
          const float* w = &filters.f32[(k * c_in + i) * c_out];
          for (int64_t o = 0; o < c_out; ++o) acc[o] += xv * w[o];
        }
      }
      for (int64_t o = 0; o < c_out; ++o) {
        out.f32[(b * c_out + o) * l_out + l] =
            static_cast<float>(ReferenceActivation(params.activation, acc[o]));
      }
    }
  }
  std::vector<HostArray> outputs;
  outputs.push_back(std::move(out));
  return outputs;
}

}  // namespace nkigraph::kernels
