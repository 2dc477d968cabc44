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
#include "util/host_array.h"

namespace nkigraph::kernels {

// Per-partition SBUF bytes the convolution kernels plan their buffers
// against: below the smallest device's partition (trn1, 192 KiB), leaving
// room for the tracer's alignment.
inline constexpr int64_t kConvSbufBudgetBytes = 160 * 1024;

// (length + pad_left + pad_right - dilation * (kernel_size - 1) - 1)
// / stride + 1, floored; below 1 when the receptive field does not fit.
int64_t ConvOutputLength(int64_t length, int64_t kernel_size, int64_t stride,
                         int64_t pad_left, int64_t pad_right, int64_t dilation);

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
