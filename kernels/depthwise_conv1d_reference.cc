// The oracle of depthwise_conv1d, straight from the contract in double:
//   out[n,c,0,q] = sum_s filter[c,0,0,s] * img[n,c,0,q*stride + s - pad_left],
// img outside [0, W) being zero.
#include <cstdint>
#include <utility>
#include <vector>

#include "kernels/conv_common.h"
#include "kernels/depthwise_conv1d.h"
#include "util/status_macros.h"

namespace nkigraph::kernels {

HostOutputs DepthwiseConv1dReference(const DepthwiseConv1dParams& params,
                                     const HostArrays& inputs) {
  NKI_ASSIGN_OR_RETURN(const HostIo io,
                       DepthwiseConv1dSpec().Host(params, inputs));
  const HostArray& img = io.In("img");
  const HostArray& filter = io.In("filter");
  const int64_t batch = params.batch, channels = params.channels,
                width = params.width, taps = params.kernel_size,
                q_out = params.q_out();
  HostArray out = io.Zeros("out");
  for (int64_t n = 0; n < batch; ++n) {
    for (int64_t c = 0; c < channels; ++c) {
      const float* row = &img.f32[(n * channels + c) * width];
      const float* f = &filter.f32[c * taps];
      for (int64_t q = 0; q < q_out; ++q) {
        double acc = 0.0;
        for (int64_t s = 0; s < taps; ++s) {
          const int64_t pos = q * params.stride + s - params.pad_left;
          if (pos >= 0 && pos < width)
            acc += static_cast<double>(f[s]) * row[pos];
        }
        out.f32[(n * channels + c) * q_out + q] = static_cast<float>(acc);
      }
    }
  }
  std::vector<HostArray> outputs;
  outputs.push_back(std::move(out));
  return outputs;
}

}  // namespace nkigraph::kernels
