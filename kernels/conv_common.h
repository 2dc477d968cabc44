#ifndef NKIGRAPH_KERNELS_CONV_COMMON_H_
#define NKIGRAPH_KERNELS_CONV_COMMON_H_

// Pieces shared by the convolution kernels (conv1d, depthwise_conv1d):
// output length, clipping an input window against the zero padding, the
// sliding-window access pattern over an HBM row, rotating PSUM tiles, and
// input lookup for the references.

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "builder/tensor.h"
#include "kernels/device.h"
#include "kernels/kernel_spec.h"
#include "util/host_array.h"

namespace nkigraph::kernels {

// Per-partition SBUF bytes the convolution kernels plan their buffers
// against: below the smallest device's partition (trn1, 192 KiB), leaving
// room for the tracer's alignment.
inline constexpr int64_t kConvSbufBudgetBytes = 160 * 1024;

// Limits of the convolution kernels' sizes.
inline constexpr int64_t kConvMaxBatch = 65536;
inline constexpr int64_t kConvMaxChannels = 65536;
inline constexpr int64_t kConvMaxLength = int64_t{1} << 24;
inline constexpr int64_t kConvMaxKernelSize = 4096;  // also stride, padding
// A trace holds a few instructions per matmul; larger problems are refused
// rather than exhausting memory while tracing.
inline constexpr int64_t kConvMaxMatmuls = int64_t{1} << 19;

// kernel_size (required; `taps` names it in the help: K, S), stride,
// pad_left, pad_right: the fields of the ConvWindow of P, sliding along
// `axis` (length, width).
template <typename P>
std::vector<ParamField<P>> ConvWindowFields(const std::string& taps,
                                            const std::string& axis) {
  return {
      IntField<P>("kernel_size", &P::kernel_size, {1, kConvMaxKernelSize},
                  taps + ": filter taps")
          .Required()
          // conv1d stacks min(K, 4) taps; depthwise puts S on partitions.
          .Edges({2, 3, 4, 5}),
      IntField<P>("stride", &P::stride, {1, kConvMaxKernelSize},
                  "output step along the " + axis)
          .Edges({2}),
      IntField<P>("pad_left", &P::pad_left, {0, kConvMaxKernelSize},
                  "zeros before the input")
          .Edges({2}),
      IntField<P>("pad_right", &P::pad_right, {0, kConvMaxKernelSize},
                  "zeros after the input")
          .Edges({2}),
  };
}

// The sliding window of a 1-D convolution: its taps, its step along the
// input, the zero padding either side and the spacing of the taps.
struct ConvWindow {
  int64_t kernel_size = 1;
  int64_t stride = 1;
  int64_t pad_left = 0;
  int64_t pad_right = 0;
  int64_t dilation = 1;

  // The output positions over an input of `length`: (length + pad_left +
  // pad_right - dilation * (kernel_size - 1) - 1) / stride + 1, floored;
  // below 1 when the receptive field does not fit.
  int64_t OutputLength(int64_t length) const;
};

// A run of `size` input positions from `start` (possibly negative, possibly
// past the end) split against [0, length): leading zeros (padding), the
// in-range positions, trailing zeros. zeros_before + valid_size +
// zeros_after == size.
struct ClippedRun {
  int64_t zeros_before = 0;
  int64_t valid_start = 0;  // first in-range position (when valid_size > 0)
  int64_t valid_size = 0;
  int64_t zeros_after = 0;
};
ClippedRun ClipRun(int64_t start, int64_t size, int64_t length);

// The implicit-im2col view of rows of an HBM tensor: for a [G, W] view
// `rows`, the [taps, G, width] view win[s, g, j] = rows[g, start + s + j],
// so consecutive partitions s read consecutive elements (the slide). Every
// position start .. start + taps + width - 2 must lie inside the row.
builder::Tensor SlidingWindows(const builder::Tensor& rows, int64_t start,
                               int64_t taps, int64_t width,
                               builder::Loc loc = builder::Loc::current());

// `count` fp32 PSUM tiles of [partitions, columns] (each within one bank),
// handed out in turn so a matmul group can fill one tile while the previous
// one is evacuated. Allocated in the caller's scope.
class PsumRotation {
 public:
  PsumRotation(int64_t partitions, int64_t columns, int count = 2);
  // The next tile in rotation.
  const builder::Tensor& Next();

 private:
  std::vector<builder::Tensor> tiles_;
  size_t next_ = 0;
};

}  // namespace nkigraph::kernels

#endif  // NKIGRAPH_KERNELS_CONV_COMMON_H_
