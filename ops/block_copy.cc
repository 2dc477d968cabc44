#include "ops/block_copy.h"

#include <immintrin.h>

#include <algorithm>
#include <cstring>

#include "ops/cpu_features.h"

namespace nkigraph::ops {
namespace {

#define NKIGRAPH_AVX2 __attribute__((target("avx2")))
#define NKIGRAPH_AVX512 __attribute__((target("avx512f")))

// ---- Transposes: out[j][i] = in[i][j], rows contiguous on both sides ----
//
// A matrix whose rows are contiguous (`ld` bytes apart, which may be
// negative), and its transpose's. Square blocks are transposed in
// registers by shuffles, which move bits and never round; the strips past
// the last whole block go element by element.
struct Transpose {
  const uint8_t* in;
  int64_t in_ld;
  int64_t rows;  // of `in`
  int64_t cols;
  uint8_t* out;
  int64_t out_ld;
};

template <typename T>
void TransposeElements(const Transpose& t, int64_t i0, int64_t i1, int64_t j0,
                       int64_t j1) {
  for (int64_t i = i0; i < i1; ++i) {
    for (int64_t j = j0; j < j1; ++j) {
      std::memcpy(t.out + j * t.out_ld + i * sizeof(T),
                  t.in + i * t.in_ld + j * sizeof(T), sizeof(T));
    }
  }
}

// Blocks of `B` x `B` elements of T by `block(in, in_ld, out, out_ld)`,
// then the strips. The blocks go a cache line of each side at a time
// (tiles of 64 bytes' worth of elements a side), the tiles along the rows
// of `out`, so that its lines are written whole and in order, which is
// what the memory's write path (that fetches a line before it is written)
// follows best: writing along the rows of `in` took half as long again.
template <typename T, int64_t B, typename BlockFn>
void TransposeByBlocks(const Transpose& t, BlockFn block) {
  constexpr int64_t kSize = sizeof(T);
  constexpr int64_t kLine = std::max<int64_t>(B, 64 / kSize);
  const int64_t rows = t.rows - t.rows % B;
  const int64_t cols = t.cols - t.cols % B;
  for (int64_t j0 = 0; j0 < cols; j0 += kLine) {
    const int64_t j1 = std::min(cols, j0 + kLine);
    for (int64_t i0 = 0; i0 < rows; i0 += kLine) {
      const int64_t i1 = std::min(rows, i0 + kLine);
      for (int64_t j = j0; j < j1; j += B) {
        for (int64_t i = i0; i < i1; i += B) {
          block(t.in + i * t.in_ld + j * kSize, t.in_ld,
                t.out + j * t.out_ld + i * kSize, t.out_ld);
        }
      }
    }
  }
  TransposeElements<T>(t, 0, rows, cols, t.cols);
  TransposeElements<T>(t, rows, t.rows, 0, t.cols);
}

// The zero-masked shuffles keeping every lane: GCC 12 warns of the
// unmasked ones' undefined pass-through operand; they are the same
// instructions.
template <int kImm>
NKIGRAPH_AVX512 __m512i Lanes(__m512i a, __m512i b) {
  return _mm512_maskz_shuffle_i32x4(0xffff, a, b, kImm);
}

// 16 x 16 four-byte elements, one zmm register a row.
NKIGRAPH_AVX512 void Block16x16x4(const uint8_t* in, int64_t in_ld,
                                  uint8_t* out, int64_t out_ld) {
  __m512i r[16], a[16];
  for (int i = 0; i < 16; ++i) r[i] = _mm512_loadu_si512(in + i * in_ld);
  // Pairs of rows interleaved within each 128-bit lane...
  for (int i = 0; i < 16; i += 2) {
    a[i] = _mm512_maskz_unpacklo_epi32(0xffff, r[i], r[i + 1]);
    a[i + 1] = _mm512_maskz_unpackhi_epi32(0xffff, r[i], r[i + 1]);
  }
  // ... then fours: b[4 g + x] holds, in lane L, column 4 L + x of rows
  // 4 g .. 4 g + 3.
  for (int g = 0; g < 16; g += 4) {
    r[g] = _mm512_maskz_unpacklo_epi64(0xff, a[g], a[g + 2]);
    r[g + 1] = _mm512_maskz_unpackhi_epi64(0xff, a[g], a[g + 2]);
    r[g + 2] = _mm512_maskz_unpacklo_epi64(0xff, a[g + 1], a[g + 3]);
    r[g + 3] = _mm512_maskz_unpackhi_epi64(0xff, a[g + 1], a[g + 3]);
  }
  // Then the lanes: column 4 L + x gathers lane L of b[x], b[4 + x],
  // b[8 + x], b[12 + x].
  for (int x = 0; x < 4; ++x) {
    const __m512i c0 = Lanes<0x88>(r[x], r[4 + x]);
    const __m512i c1 = Lanes<0xdd>(r[x], r[4 + x]);
    const __m512i d0 = Lanes<0x88>(r[8 + x], r[12 + x]);
    const __m512i d1 = Lanes<0xdd>(r[8 + x], r[12 + x]);
    _mm512_storeu_si512(out + x * out_ld, Lanes<0x88>(c0, d0));
    _mm512_storeu_si512(out + (4 + x) * out_ld, Lanes<0x88>(c1, d1));
    _mm512_storeu_si512(out + (8 + x) * out_ld, Lanes<0xdd>(c0, d0));
    _mm512_storeu_si512(out + (12 + x) * out_ld, Lanes<0xdd>(c1, d1));
  }
}

// 8 x 8 four-byte elements, one ymm register a row.
NKIGRAPH_AVX2 void Block8x8x4(const uint8_t* in, int64_t in_ld, uint8_t* out,
                              int64_t out_ld) {
  __m256 r[8], a[8];
  for (int i = 0; i < 8; ++i) {
    r[i] = _mm256_castsi256_ps(
        _mm256_loadu_si256(reinterpret_cast<const __m256i*>(in + i * in_ld)));
  }
  for (int i = 0; i < 8; i += 2) {
    a[i] = _mm256_unpacklo_ps(r[i], r[i + 1]);
    a[i + 1] = _mm256_unpackhi_ps(r[i], r[i + 1]);
  }
  // r[4 g + x] holds, in lane L, column 4 L + x of rows 4 g .. 4 g + 3.
  for (int g = 0; g < 8; g += 4) {
    r[g] = _mm256_shuffle_ps(a[g], a[g + 2], 0x44);
    r[g + 1] = _mm256_shuffle_ps(a[g], a[g + 2], 0xee);
    r[g + 2] = _mm256_shuffle_ps(a[g + 1], a[g + 3], 0x44);
    r[g + 3] = _mm256_shuffle_ps(a[g + 1], a[g + 3], 0xee);
  }
  for (int x = 0; x < 4; ++x) {
    _mm256_storeu_si256(
        reinterpret_cast<__m256i*>(out + x * out_ld),
        _mm256_castps_si256(_mm256_permute2f128_ps(r[x], r[4 + x], 0x20)));
    _mm256_storeu_si256(
        reinterpret_cast<__m256i*>(out + (4 + x) * out_ld),
        _mm256_castps_si256(_mm256_permute2f128_ps(r[x], r[4 + x], 0x31)));
  }
}

// 8 x 8 two-byte elements, one xmm register a row (SSE2, which every
// x86-64 processor has).
void Block8x8x2(const uint8_t* in, int64_t in_ld, uint8_t* out,
                int64_t out_ld) {
  __m128i r[8], a[8];
  for (int i = 0; i < 8; ++i) {
    r[i] = _mm_loadu_si128(reinterpret_cast<const __m128i*>(in + i * in_ld));
  }
  for (int i = 0; i < 8; i += 2) {
    a[i] = _mm_unpacklo_epi16(r[i], r[i + 1]);
    a[i + 1] = _mm_unpackhi_epi16(r[i], r[i + 1]);
  }
  // r[4 g + x]: columns 2 x and 2 x + 1 of rows 4 g .. 4 g + 3.
  for (int g = 0; g < 8; g += 4) {
    r[g] = _mm_unpacklo_epi32(a[g], a[g + 2]);
    r[g + 1] = _mm_unpackhi_epi32(a[g], a[g + 2]);
    r[g + 2] = _mm_unpacklo_epi32(a[g + 1], a[g + 3]);
    r[g + 3] = _mm_unpackhi_epi32(a[g + 1], a[g + 3]);
  }
  for (int x = 0; x < 4; ++x) {
    _mm_storeu_si128(reinterpret_cast<__m128i*>(out + 2 * x * out_ld),
                     _mm_unpacklo_epi64(r[x], r[4 + x]));
    _mm_storeu_si128(reinterpret_cast<__m128i*>(out + (2 * x + 1) * out_ld),
                     _mm_unpackhi_epi64(r[x], r[4 + x]));
  }
}

// False: no vector path for this element size (the caller tiles).
bool TransposeRows(const Transpose& t, int64_t esize, SimdPath path) {
  if (esize == 4) {
    switch (path) {
      case SimdPath::kAvx512:
        TransposeByBlocks<uint32_t, 16>(t, Block16x16x4);
        return true;
      case SimdPath::kAvx2:
        TransposeByBlocks<uint32_t, 8>(t, Block8x8x4);
        return true;
      case SimdPath::kScalar:
        return false;
    }
  }
  if (esize == 2 && path != SimdPath::kScalar) {
    TransposeByBlocks<uint16_t, 8>(t, Block8x8x2);
    return true;
  }
  return false;
}

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

void CopyBlock(const MutableBlock& dst, const ConstBlock& src, int64_t esize,
               SimdPath path) {
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
  // A transposition: dst's rows contiguous and src's columns, or the other
  // way round.
  if (dst.col_stride == esize && src.row_stride == esize &&
      TransposeRows({src.data, src.col_stride, src.cols, src.rows, dst.data,
                     dst.row_stride},
                    esize, path)) {
    return;
  }
  if (dst.row_stride == esize && src.col_stride == esize &&
      TransposeRows({src.data, src.row_stride, src.rows, src.cols, dst.data,
                     dst.col_stride},
                    esize, path)) {
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
