#include "ops/block_copy.h"

#include <algorithm>
#include <cstring>

namespace nkigraph::ops {
namespace {

// Elements per side of a tile: 32 x 4 bytes is two cache lines, so a tile
// touches at most 64 lines of each side (8 KiB of 4-byte elements).
constexpr int64_t kTile = 32;

// One tile [r0, r1) x [c0, c1), walked along the dim that is contiguous in
// dst so its writes stream; the reads of src then hit the lines the
// tile's first pass brought in.
template <typename T>
void CopyTile(const MutableBlock& dst, const ConstBlock& src, int64_t r0,
              int64_t r1, int64_t c0, int64_t c1, bool rows_inner) {
  auto move = [&](int64_t r, int64_t c) {
    T v;
    std::memcpy(&v, src.data + r * src.row_stride + c * src.col_stride,
                sizeof(T));
    std::memcpy(dst.data + r * dst.row_stride + c * dst.col_stride, &v,
                sizeof(T));
  };
  if (rows_inner) {
    for (int64_t c = c0; c < c1; ++c) {
      for (int64_t r = r0; r < r1; ++r) move(r, c);
    }
    return;
  }
  for (int64_t r = r0; r < r1; ++r) {
    for (int64_t c = c0; c < c1; ++c) move(r, c);
  }
}

template <typename T>
void CopyTiled(const MutableBlock& dst, const ConstBlock& src) {
  constexpr int64_t kSize = sizeof(T);
  const bool rows_inner = dst.col_stride != kSize && dst.row_stride == kSize;
  for (int64_t r0 = 0; r0 < src.rows; r0 += kTile) {
    const int64_t r1 = std::min(src.rows, r0 + kTile);
    for (int64_t c0 = 0; c0 < src.cols; c0 += kTile) {
      CopyTile<T>(dst, src, r0, r1, c0, std::min(src.cols, c0 + kTile),
                  rows_inner);
    }
  }
}

}  // namespace

void CopyBlock(const MutableBlock& dst, const ConstBlock& src, int64_t esize) {
  if (src.rows <= 0 || src.cols <= 0) return;
  const int64_t row_bytes = src.cols * esize;
  if (dst.col_stride == esize && src.col_stride == esize) {
    if (dst.row_stride == row_bytes && src.row_stride == row_bytes) {
      std::memcpy(dst.data, src.data, src.rows * row_bytes);
      return;
    }
    for (int64_t r = 0; r < src.rows; ++r) {
      std::memcpy(dst.data + r * dst.row_stride, src.data + r * src.row_stride,
                  row_bytes);
    }
    return;
  }
  if (dst.row_stride == esize && src.row_stride == esize) {
    // Contiguous columns on both sides: the transpose of the case above.
    for (int64_t c = 0; c < src.cols; ++c) {
      std::memcpy(dst.data + c * dst.col_stride, src.data + c * src.col_stride,
                  src.rows * esize);
    }
    return;
  }
  switch (esize) {
    case 1:
      return CopyTiled<uint8_t>(dst, src);
    case 2:
      return CopyTiled<uint16_t>(dst, src);
    case 4:
      return CopyTiled<uint32_t>(dst, src);
    case 8:
      return CopyTiled<uint64_t>(dst, src);
    default:
      for (int64_t r = 0; r < src.rows; ++r) {
        for (int64_t c = 0; c < src.cols; ++c) {
          std::memcpy(dst.data + r * dst.row_stride + c * dst.col_stride,
                      src.data + r * src.row_stride + c * src.col_stride,
                      esize);
        }
      }
  }
}

}  // namespace nkigraph::ops
