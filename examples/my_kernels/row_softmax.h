#ifndef MY_KERNELS_ROW_SOFTMAX_H_
#define MY_KERNELS_ROW_SOFTMAX_H_

// row_softmax: out[r, :] = softmax(x[r, :]), for any number of rows and
// columns: rows in tiles of 128 partitions, columns streamed through SBUF
// in chunks of `chunk` columns, two passes over each row tile.
//
// Params: rows (256), cols (1000), chunk (512), dtype ∈ {float32,
// bfloat16} (bfloat16).
// Input: x [rows, cols]. Output: out [rows, cols].

#include <cstdint>

#include "builder/tensor.h"
#include "kernels/kernel_spec.h"
#include "proto/nkigraph.pb.h"
#include "util/host_array.h"

namespace my_kernels {

struct RowSoftmaxParams {
  int64_t rows = 256;
  int64_t cols = 1000;
  int64_t chunk = 512;
  nkigraph::proto::DType dtype = nkigraph::proto::BFLOAT16;
};

// The registered kernel.
const nkigraph::kernels::KernelSpec<RowSoftmaxParams>& RowSoftmaxSpec();

// The device kernel, for use inside a trace: x and out [rows, cols] of
// params.dtype in HBM.
void RowSoftmax(const nkigraph::builder::Tensor& x,
                const nkigraph::builder::Tensor& out,
                const RowSoftmaxParams& params);

// The oracle, in plain C++: each row's softmax computed in double from the
// inputs as the device holds them.
nkigraph::HostOutputs RowSoftmaxReference(const RowSoftmaxParams& params,
                                          const nkigraph::HostArrays& inputs);

}  // namespace my_kernels

#endif  // MY_KERNELS_ROW_SOFTMAX_H_
