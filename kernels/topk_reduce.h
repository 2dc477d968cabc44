#ifndef NKIGRAPH_KERNELS_TOPK_REDUCE_H_
#define NKIGRAPH_KERNELS_TOPK_REDUCE_H_

// topk_reduce — the MoE combine (design notes §3; KERNELS.md "Family 3").
// Despite its name it selects nothing by value: every row of the sparse
// all_to_all_v buffer is one (token, expert) output carrying its global
// token index, and each token's output is the sum of its rows.
//
// Params: num_tokens T (≤ 128), top_k K (≤ 8), hidden H (even: the cores
// split it), rows R (T·K ≤ R ≤ 16384). bfloat16 only.
// Input: input [R, H + 2] bf16; columns H and H + 1 hold one int32 token
// index (low 16 bits in column H), −1 for padding; a row whose index is not
// in [0, T) is ignored. Give it as uint16 raw bits.
// Output: output [T, H] bf16: per token the sum, in row order and rounded
// to bf16 after each add, of its first K rows; zero when it has none.
//
// The graph: the index columns transposed (dma_transpose of the bf16 pair,
// read back through an int32 bitcast) and broadcast to T partitions
// (nc_stream_shuffle per quadrant), matched against an iota of the token
// ids by nc_find_index8 — eight copies of t find the first eight rows of
// token t —, then K dynamic-offset gathers of those rows summed into SBUF by
// dma_compute (add); each core gathers and writes its half of H.

#include <cstdint>

#include "builder/tensor.h"
#include "kernels/kernel_spec.h"
#include "util/host_array.h"

namespace nkigraph::kernels {

struct TopkReduceParams {
  int64_t num_tokens = 0;
  int64_t top_k = 0;
  int64_t hidden = 0;
  int64_t rows = 0;
};

// Rows whose packed index one dma_transpose moves into SBUF. The staged
// pairs are freed after each tile, so the index pipeline holds only the
// [T, R] match tile at full size.
inline constexpr int64_t kTopkReduceIndexTileRows = 512;

// The device kernel, once per core of a 2-core trace: `input` [R, H + 2]
// bf16, `output` [T, H] bf16 in shared HBM.
void TopkReduce(const builder::Tensor& input, const builder::Tensor& output,
                const TopkReduceParams& params);

// The oracle, from the input's raw bits.
HostOutputs TopkReduceReference(const TopkReduceParams& params,
                                const HostArrays& inputs);

// Valid packed inputs: K rows for most tokens, none for some, more than K
// for others, the rows in a random order among padding rows and rows
// whose index is out of range (T and beyond, negative, high 16 bits set).
HostOutputs MakeTopkReduceInputs(const TopkReduceParams& params, uint64_t seed);

const KernelSpec<TopkReduceParams>& TopkReduceSpec();

}  // namespace nkigraph::kernels

#endif  // NKIGRAPH_KERNELS_TOPK_REDUCE_H_
