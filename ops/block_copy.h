#ifndef NKIGRAPH_OPS_BLOCK_COPY_H_
#define NKIGRAPH_OPS_BLOCK_COPY_H_

// Copies between elements laid out in two strided dims: the rows of an
// on-chip tile, a block of an HBM matrix, or either seen transposed (the
// access pattern of a transposing DMA). One loop does what would otherwise
// be a walk element by element through a gather buffer.

#include <cstdint>

#include "ops/cpu_features.h"

namespace nkigraph::ops {

// `rows` x `cols` elements, element (r, c) at
// data + r * row_stride + c * col_stride bytes; strides may be negative or
// zero (a single row or column).
template <typename Byte>
struct StridedBlock {
  Byte* data = nullptr;
  int64_t rows = 0;
  int64_t cols = 0;
  int64_t row_stride = 0;
  int64_t col_stride = 0;
};
using ConstBlock = StridedBlock<const uint8_t>;
using MutableBlock = StridedBlock<uint8_t>;

// Rows [first, end) of `block`.
template <typename Byte>
StridedBlock<Byte> BlockRows(const StridedBlock<Byte>& block, int64_t first,
                             int64_t end) {
  StridedBlock<Byte> rows = block;
  rows.data += first * block.row_stride;
  rows.rows = end - first;
  return rows;
}

// The same elements, in the same row-major order, seen as rows of `cols`
// elements: possible when `cols` is the block's own, or when its rows
// follow each other evenly (row_stride = cols * col_stride, or one row)
// and `cols` divides its element count. False (block unchanged) otherwise.
template <typename Byte>
bool ReshapeToCols(StridedBlock<Byte>& block, int64_t cols) {
  if (cols == block.cols) return true;
  const int64_t elements = block.rows * block.cols;
  if (cols <= 0 || elements % cols != 0) return false;
  if (block.rows != 1 && block.row_stride != block.cols * block.col_stride) {
    return false;
  }
  block.rows = elements / cols;
  block.cols = cols;
  block.row_stride = cols * block.col_stride;
  return true;
}

// dst(r, c) = src(r, c) for every element of src's rows x cols (dst has
// the same shape), `esize` bytes each; the two must not overlap. Rows
// contiguous on both sides are memcpy'd; a transposition of contiguous
// rows into contiguous rows (a transposing DMA of a matrix) goes by
// blocks transposed in registers where `path` has them for `esize`
// (AVX-512: 4-byte elements 16 x 16; AVX2: 4-byte 8 x 8; both: 2-byte
// 8 x 8; every path moves the same bits);
// otherwise the copy goes tile by tile, so the cache lines of both sides a
// tile touches stay cached while it is copied.
void CopyBlock(const MutableBlock& dst, const ConstBlock& src, int64_t esize,
               SimdPath path = BestSimdPath());

}  // namespace nkigraph::ops

#endif  // NKIGRAPH_OPS_BLOCK_COPY_H_
