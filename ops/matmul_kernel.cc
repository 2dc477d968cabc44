#include "ops/matmul_kernel.h"

#include <immintrin.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

#include "ops/cpu_features.h"
#include "ops/split_work.h"
#include "util/dtype.h"

namespace nkigraph::ops {
namespace {

// ---- The copies every path reads ----

// The stationary operand widened to float32 in blocks of `rows` of its
// columns (the register block's rows of c): block b holds, for each p in
// turn, st[p][b * rows + r] for its r, so a block's broadcasts read one
// stream. With rows 1 that is st transposed.
//
// Meanwhile the first `fetch_bytes` of each row of `fetch` (the moving
// operand's first panel) are fetched into the cache, a row with each row
// of st: asked for all at once, before the packing, the prefetches queued
// behind each other and held the thread up.
void PackStationary(int64_t k, int64_t m, int rows, const MatmulOperand& st,
                    const MatmulOperand& fetch, int64_t fetch_bytes,
                    std::vector<float>& row, std::vector<float>& out) {
  // Rows a partition apart: fetch a few ahead (see PackPanels).
  constexpr int64_t kRowsAhead = 8;
  constexpr int64_t kFloat = sizeof(float);
  const int64_t row_bytes = m * DTypeSize(st.dtype);
  if (st.dtype != proto::FLOAT32) row.resize(m);
  out.resize(k * m);
  const int64_t full = m - m % rows;  // columns in whole blocks
  for (int64_t p = 0; p < k; ++p) {
    if (p + kRowsAhead < k) {
      const uint8_t* ahead = st.data + (p + kRowsAhead) * st.stride;
      for (int64_t b = 0; b < row_bytes; b += 64) __builtin_prefetch(ahead + b);
    }
    const uint8_t* moving = fetch.data + p * fetch.stride;
    for (int64_t b = 0; b < fetch_bytes; b += 64) {
      __builtin_prefetch(moving + b);
    }
    // float32 rows are read where they lie; others widened first.
    const uint8_t* from = st.data + p * st.stride;
    if (st.dtype != proto::FLOAT32) {
      LoadRowAsFloat(st.dtype, from, m, row.data());
      from = reinterpret_cast<const uint8_t*>(row.data());
    }
    float* block = out.data() + p * rows;
    // Whole blocks, each `rows` floats per p: a fixed-size copy for the
    // AVX-512 path's 6 (the compiler moves it in two).
    if (rows == 6) {
      for (int64_t i0 = 0; i0 < full; i0 += 6, block += 6 * k) {
        std::memcpy(block, from + i0 * kFloat, 6 * kFloat);
      }
    } else {
      for (int64_t i0 = 0; i0 < full; i0 += rows, block += rows * k) {
        std::memcpy(block, from + i0 * kFloat, rows * kFloat);
      }
    }
    // The last, narrower block.
    if (full < m) {
      std::memcpy(out.data() + full * k + p * (m - full), from + full * kFloat,
                  (m - full) * kFloat);
    }
  }
}

// Columns [j0, j1) of the moving operand widened to float32 in panels of
// `width` columns: panel q holds, for each p in turn, `width` floats from
// column j0 + q * width (zero past j1). Rows are read in order, each from
// end to end, which the hardware prefetcher follows (read a panel at a
// time, rows a partition apart, the packing took a quarter of the time of
// the products); all of a 128 x 512 tile's panels (256 KiB) stay in L2.
void PackPanels(int64_t k, int64_t j0, int64_t j1, int64_t width,
                const MatmulOperand& mv, std::vector<float>& row,
                float* panels) {
  const int64_t w = j1 - j0;
  const int64_t count = (w + width - 1) / width;
  row.assign(count * width, 0.0f);
  const int64_t size = DTypeSize(mv.dtype);
  for (int64_t p = 0; p < k; ++p) {
    LoadRowAsFloat(mv.dtype, mv.data + p * mv.stride + j0 * size, w,
                   row.data());
    for (int64_t q = 0; q < count; ++q) {
      std::memcpy(panels + (q * k + p) * width, row.data() + q * width,
                  width * sizeof(float));
    }
  }
}

// Buffers of the thread that makes (a part of) a product, kept from one
// call to the next.
struct Scratch {
  std::vector<float> stationary;
  std::vector<float> row;
  std::vector<float> panels;
  // `floats` of `panels` from a cache line's start, so that no vector load
  // of a panel row straddles two lines.
  float* Panels(int64_t floats) {
    panels.resize(floats + 16);
    const uintptr_t at = reinterpret_cast<uintptr_t>(panels.data());
    return panels.data() + ((64 - at % 64) % 64) / sizeof(float);
  }
};
Scratch& ThreadScratch() {
  thread_local Scratch scratch;
  return scratch;
}

// ---- Plain C++: the definition, and the fallback ----

// Columns [j0, j1) of c from the stationary operand packed in blocks of 1
// row (st transposed), a panel of 64 columns at a time.
void ScalarColumns(int64_t k, int64_t m, int64_t j0, int64_t j1,
                   const float* st, const MatmulOperand& mv, const MatmulOut& c,
                   bool accumulate) {
  constexpr int64_t kWidth = 64;
  Scratch& scratch = ThreadScratch();
  float* const panels =
      scratch.Panels(k * ((j1 - j0 + kWidth - 1) / kWidth) * kWidth);
  PackPanels(k, j0, j1, kWidth, mv, scratch.row, panels);
  float acc[kWidth];
  for (int64_t j = j0; j < j1; j += kWidth) {
    const int64_t w = std::min(kWidth, j1 - j);
    const float* panel = panels + (j - j0) * k;
    for (int64_t i = 0; i < m; ++i) {
      const float* s = st + i * k;
      std::fill(acc, acc + w, 0.0f);
      for (int64_t p = 0; p < k; ++p) {
        const float* b = panel + p * kWidth;
        for (int64_t q = 0; q < w; ++q) acc[q] = std::fma(s[p], b[q], acc[q]);
      }
      float* out = c.data + i * c.ld + j;
      for (int64_t q = 0; q < w; ++q) {
        out[q] = accumulate ? out[q] + acc[q] : acc[q];
      }
    }
  }
}

// ---- AVX2 + FMA: blocks of up to 6 rows x 16 columns (12 accumulators) ----

#define NKIGRAPH_AVX2 __attribute__((target("avx2,fma")))

constexpr int kAvx2Rows = 6;
constexpr int64_t kAvx2Width = 16;

// Rows [i0, i0 + R) and columns [j, j + w) of c (w <= 8 V) from the
// stationary block `s` (R floats per p) and the panel (16 floats per p).
template <int R, int V>
NKIGRAPH_AVX2 void Avx2Block(int64_t k, const float* s, const float* panel,
                             float* out, int64_t ld, int64_t w,
                             bool accumulate) {
  __m256 acc[R][V];
#pragma GCC unroll 8
  for (int r = 0; r < R; ++r) {
#pragma GCC unroll 4
    for (int v = 0; v < V; ++v) acc[r][v] = _mm256_setzero_ps();
  }
  for (int64_t p = 0; p < k; ++p, s += R, panel += kAvx2Width) {
    __m256 b[V];
#pragma GCC unroll 4
    for (int v = 0; v < V; ++v) b[v] = _mm256_loadu_ps(panel + 8 * v);
#pragma GCC unroll 8
    for (int r = 0; r < R; ++r) {
      const __m256 a = _mm256_broadcast_ss(s + r);
#pragma GCC unroll 4
      for (int v = 0; v < V; ++v) {
        acc[r][v] = _mm256_fmadd_ps(a, b[v], acc[r][v]);
      }
    }
  }
  // Lanes below `w` in each vector, as maskload and maskstore take them.
  __m256i masks[V];
#pragma GCC unroll 4
  for (int v = 0; v < V; ++v) {
    masks[v] =
        _mm256_cmpgt_epi32(_mm256_set1_epi32(static_cast<int>(w - 8 * v)),
                           _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
  }
#pragma GCC unroll 8
  for (int r = 0; r < R; ++r) {
#pragma GCC unroll 4
    for (int v = 0; v < V; ++v) {
      float* o = out + r * ld + 8 * v;
      __m256 x = acc[r][v];
      if (accumulate) x = _mm256_add_ps(_mm256_maskload_ps(o, masks[v]), x);
      _mm256_maskstore_ps(o, masks[v], x);
    }
  }
}

template <int V>
NKIGRAPH_AVX2 void Avx2Rows(int64_t k, int64_t m, const float* st,
                            const float* panel, float* out, int64_t ld,
                            int64_t w, bool accumulate) {
  int64_t i = 0;
  for (; i + kAvx2Rows <= m; i += kAvx2Rows) {
    Avx2Block<kAvx2Rows, V>(k, st + i * k, panel, out + i * ld, ld, w,
                            accumulate);
  }
  const float* s = st + i * k;
  out += i * ld;
  switch (m - i) {
    case 5:
      return Avx2Block<5, V>(k, s, panel, out, ld, w, accumulate);
    case 4:
      return Avx2Block<4, V>(k, s, panel, out, ld, w, accumulate);
    case 3:
      return Avx2Block<3, V>(k, s, panel, out, ld, w, accumulate);
    case 2:
      return Avx2Block<2, V>(k, s, panel, out, ld, w, accumulate);
    case 1:
      return Avx2Block<1, V>(k, s, panel, out, ld, w, accumulate);
    default:
      return;
  }
}

void Avx2Columns(int64_t k, int64_t m, int64_t j0, int64_t j1, const float* st,
                 const MatmulOperand& mv, const MatmulOut& c, bool accumulate) {
  Scratch& scratch = ThreadScratch();
  float* const panels = scratch.Panels(
      k * ((j1 - j0 + kAvx2Width - 1) / kAvx2Width) * kAvx2Width);
  PackPanels(k, j0, j1, kAvx2Width, mv, scratch.row, panels);
  for (int64_t j = j0; j < j1; j += kAvx2Width) {
    const int64_t w = std::min(kAvx2Width, j1 - j);
    const float* panel = panels + (j - j0) * k;
    if (w > 8) {
      Avx2Rows<2>(k, m, st, panel, c.data + j, c.ld, w, accumulate);
    } else {
      Avx2Rows<1>(k, m, st, panel, c.data + j, c.ld, w, accumulate);
    }
  }
}

// ---- AVX-512: blocks of up to 6 rows x 64 columns (24 accumulators) ----

#define NKIGRAPH_AVX512 __attribute__((target("avx512f,avx512bw,avx512vl")))

constexpr int kAvx512Rows = 6;
constexpr int kAvx512Vectors = 4;
constexpr int64_t kAvx512Width = 16 * kAvx512Vectors;

// The lanes below `bits` of a 16-lane vector.
__mmask16 Mask16(int64_t bits) {
  if (bits <= 0) return 0;
  return static_cast<__mmask16>(bits >= 16 ? 0xffff : (1u << bits) - 1);
}

// Where a row block reads its 64 columns of row p of the moving operand.
// The first row block of a panel reads them where they lie, widening them
// and keeping them in the panel buffer as it goes, so that fetching them
// (from L3, rows a partition apart) overlaps its multiply-adds; the other
// row blocks read the buffer from the L1 cache.
struct PanelRows {
  const float* panel;
  // Rows of the next panel where they lie, fetched into the cache meanwhile
  // (`rows` of them from `next`, `bytes` of each; none when 0), one in each
  // of this block's first steps: the first row block of the next panel
  // then finds them there rather than in L3 or memory (where, unfetched, it
  // waited on them for about a quarter of the kernel's time). Each row
  // block after the first fetches its share of the rows: fetched all by
  // one row block, they were asked for faster than the memory gave them.
  const uint8_t* next = nullptr;
  int64_t stride = 0;
  int64_t bytes = 0;
  int64_t rows = 0;
  NKIGRAPH_AVX512 void Prefetch(int64_t p) const {
    if (p >= rows) return;
    const char* row = reinterpret_cast<const char*>(next + p * stride);
    for (int64_t b = 0; b < bytes; b += 64) _mm_prefetch(row + b, _MM_HINT_T0);
  }
  NKIGRAPH_AVX512 __m512 Load(int64_t p, int v) const {
    return _mm512_loadu_ps(panel + p * kAvx512Width + 16 * v);
  }
};

// 16 columns from `src` widened to float32, of which `mask` says which are
// there (zero in the others). float16 NaNs become the one quiet NaN
// LoadRowAsFloat gives for them all (the conversion keeps their payloads).
// The zero-masked conversions: GCC 12 warns of the unmasked ones' undefined
// pass-through operand; with every lane kept they are the same
// instructions.
template <proto::DType kDType>
NKIGRAPH_AVX512 __m512 Widen16(const uint8_t* src, __mmask16 mask) {
  if constexpr (kDType == proto::FLOAT32) {
    return _mm512_maskz_loadu_ps(mask, src);
  } else if constexpr (kDType == proto::BFLOAT16) {
    const __m512i wide = _mm512_maskz_cvtepu16_epi32(
        0xffff, _mm256_maskz_loadu_epi16(mask, src));
    return _mm512_castsi512_ps(_mm512_maskz_slli_epi32(0xffff, wide, 16));
  } else {
    static_assert(kDType == proto::FLOAT16);
    const __m512 x =
        _mm512_maskz_cvtph_ps(0xffff, _mm256_maskz_loadu_epi16(mask, src));
    const __mmask16 is_nan = _mm512_cmp_ps_mask(x, x, _CMP_UNORD_Q);
    return _mm512_mask_mov_ps(
        x, is_nan, _mm512_set1_ps(std::numeric_limits<float>::quiet_NaN()));
  }
}

template <proto::DType kDType>
struct SourceRows {
  static constexpr int kSize = kDType == proto::FLOAT32 ? 4 : 2;
  // Rows a partition apart defeat the hardware prefetcher, which starts
  // afresh on every row: ask for rows this far ahead (the first panel of a
  // product; the others were fetched by PanelRows).
  static constexpr int64_t kRowsAhead = 24;
  const uint8_t* src;  // column j of row 0
  int64_t stride;
  int64_t k;
  __mmask16 masks[kAvx512Vectors];
  float* panel;
  NKIGRAPH_AVX512 void Prefetch(int64_t p) const {
    if (p + kRowsAhead < k) {
      const char* ahead =
          reinterpret_cast<const char*>(src + (p + kRowsAhead) * stride);
      for (int b = 0; b < kAvx512Width * kSize; b += 64) {
        _mm_prefetch(ahead + b, _MM_HINT_T0);
      }
    }
  }
  NKIGRAPH_AVX512 __m512 Load(int64_t p, int v) const {
    const __m512 x =
        Widen16<kDType>(src + p * stride + 16 * v * kSize, masks[v]);
    _mm512_storeu_ps(panel + p * kAvx512Width + 16 * v, x);
    return x;
  }
};

// Rows [i0, i0 + R) and the columns of `masks` of c from the stationary
// block `s` (R floats per p) and the moving rows `b`.
template <int R, int V, class B>
NKIGRAPH_AVX512 void Avx512Block(int64_t k, const float* s, const B& b,
                                 float* out, int64_t ld,
                                 const __mmask16 (&masks)[kAvx512Vectors],
                                 bool accumulate) {
  __m512 acc[R][V];
#pragma GCC unroll 8
  for (int r = 0; r < R; ++r) {
#pragma GCC unroll 4
    for (int v = 0; v < V; ++v) acc[r][v] = _mm512_setzero_ps();
  }
  for (int64_t p = 0; p < k; ++p, s += R) {
    b.Prefetch(p);
    __m512 row[V];
#pragma GCC unroll 4
    for (int v = 0; v < V; ++v) row[v] = b.Load(p, v);
#pragma GCC unroll 8
    for (int r = 0; r < R; ++r) {
      const __m512 a = _mm512_set1_ps(s[r]);
#pragma GCC unroll 4
      for (int v = 0; v < V; ++v) {
        acc[r][v] = _mm512_fmadd_ps(a, row[v], acc[r][v]);
      }
    }
  }
#pragma GCC unroll 8
  for (int r = 0; r < R; ++r) {
#pragma GCC unroll 4
    for (int v = 0; v < V; ++v) {
      float* o = out + r * ld + 16 * v;
      __m512 x = acc[r][v];
      if (accumulate) x = _mm512_add_ps(_mm512_maskz_loadu_ps(masks[v], o), x);
      _mm512_mask_storeu_ps(o, masks[v], x);
    }
  }
}

// Rows [i, i + min(8, m - i)) of c.
template <int V, class B>
NKIGRAPH_AVX512 void Avx512RowBlock(int64_t k, int64_t m, int64_t i,
                                    const float* st, const B& b, float* out,
                                    int64_t ld,
                                    const __mmask16 (&masks)[kAvx512Vectors],
                                    bool accumulate) {
  const float* s = st + i * k;
  out += i * ld;
  switch (std::min<int64_t>(kAvx512Rows, m - i)) {
    case 6:
      return Avx512Block<6, V>(k, s, b, out, ld, masks, accumulate);
    case 5:
      return Avx512Block<5, V>(k, s, b, out, ld, masks, accumulate);
    case 4:
      return Avx512Block<4, V>(k, s, b, out, ld, masks, accumulate);
    case 3:
      return Avx512Block<3, V>(k, s, b, out, ld, masks, accumulate);
    case 2:
      return Avx512Block<2, V>(k, s, b, out, ld, masks, accumulate);
    case 1:
      return Avx512Block<1, V>(k, s, b, out, ld, masks, accumulate);
    default:
      return;
  }
}

// Every row block of one panel: the first reads the moving rows where
// they lie (for the dtypes SourceRows widens; others are packed first),
// the rest the panel it leaves.
// Whether SourceRows reads `dtype` where it lies.
bool SourceReadable(proto::DType dtype) {
  return dtype == proto::FLOAT32 || dtype == proto::BFLOAT16 ||
         dtype == proto::FLOAT16;
}

// `next_w`: the columns of the panel after this one (0: none).
template <int V>
NKIGRAPH_AVX512 void Avx512Panel(int64_t k, int64_t m, int64_t j, int64_t w,
                                 int64_t next_w, const float* st,
                                 const MatmulOperand& mv, float* panel,
                                 float* out, int64_t ld,
                                 const __mmask16 (&masks)[kAvx512Vectors],
                                 bool accumulate, std::vector<float>& row) {
  const int64_t size = DTypeSize(mv.dtype);
  auto first = [&](auto source) NKIGRAPH_AVX512 {
    source.src = mv.data + j * size;
    source.stride = mv.stride;
    source.k = k;
    std::copy_n(masks, kAvx512Vectors, source.masks);
    source.panel = panel;
    Avx512RowBlock<V>(k, m, 0, st, source, out, ld, masks, accumulate);
  };
  int64_t i0 = kAvx512Rows;
  switch (mv.dtype) {
    case proto::FLOAT32:
      first(SourceRows<proto::FLOAT32>{});
      break;
    case proto::BFLOAT16:
      first(SourceRows<proto::BFLOAT16>{});
      break;
    case proto::FLOAT16:
      first(SourceRows<proto::FLOAT16>{});
      break;
    default:
      PackPanels(k, j, j + w, kAvx512Width, mv, row, panel);
      i0 = 0;
      break;
  }
  // The row blocks after the first share the next panel's rows out.
  const int64_t blocks = (m + kAvx512Rows - 1) / kAvx512Rows;
  const bool fetch = next_w > 0 && SourceReadable(mv.dtype) && blocks > 1;
  const int64_t share = fetch ? (k + blocks - 2) / (blocks - 1) : 0;
  for (int64_t i = i0; i < m; i += kAvx512Rows) {
    PanelRows rows{panel};
    const int64_t first = (i / kAvx512Rows - 1) * share;
    if (fetch && i > 0 && first < k) {
      rows.next = mv.data + first * mv.stride + (j + kAvx512Width) * size;
      rows.stride = mv.stride;
      rows.bytes = next_w * size;
      rows.rows = std::min(share, k - first);
    }
    Avx512RowBlock<V>(k, m, i, st, rows, out, ld, masks, accumulate);
  }
}

// Columns [j0, j1), a 64-column panel at a time: the panel (32 KiB at
// K 128) stays in the L1 cache while every row block reads it.
NKIGRAPH_AVX512 void Avx512Columns(int64_t k, int64_t m, int64_t j0, int64_t j1,
                                   const float* st, const MatmulOperand& mv,
                                   const MatmulOut& c, bool accumulate) {
  Scratch& scratch = ThreadScratch();
  float* const panel = scratch.Panels(k * kAvx512Width);
  for (int64_t j = j0; j < j1; j += kAvx512Width) {
    const int64_t w = std::min(kAvx512Width, j1 - j);
    const int64_t next_w =
        std::clamp<int64_t>(j1 - j - kAvx512Width, 0, kAvx512Width);
    __mmask16 masks[kAvx512Vectors];
    for (int v = 0; v < kAvx512Vectors; ++v) masks[v] = Mask16(w - 16 * v);
    switch ((w + 15) / 16) {
      case 4:
        Avx512Panel<4>(k, m, j, w, next_w, st, mv, panel, c.data + j, c.ld,
                       masks, accumulate, scratch.row);
        break;
      case 3:
        Avx512Panel<3>(k, m, j, w, next_w, st, mv, panel, c.data + j, c.ld,
                       masks, accumulate, scratch.row);
        break;
      case 2:
        Avx512Panel<2>(k, m, j, w, next_w, st, mv, panel, c.data + j, c.ld,
                       masks, accumulate, scratch.row);
        break;
      default:
        Avx512Panel<1>(k, m, j, w, next_w, st, mv, panel, c.data + j, c.ld,
                       masks, accumulate, scratch.row);
        break;
    }
  }
}

// ---- Dispatch ----

int BlockRows(SimdPath path) {
  switch (path) {
    case SimdPath::kAvx512:
      return kAvx512Rows;
    case SimdPath::kAvx2:
      return kAvx2Rows;
    case SimdPath::kScalar:
      return 1;
  }
  return 1;
}

void Columns(SimdPath path, int64_t k, int64_t m, int64_t j0, int64_t j1,
             const float* st, const MatmulOperand& mv, const MatmulOut& c,
             bool accumulate) {
  switch (path) {
    case SimdPath::kAvx512:
      return Avx512Columns(k, m, j0, j1, st, mv, c, accumulate);
    case SimdPath::kAvx2:
      return Avx2Columns(k, m, j0, j1, st, mv, c, accumulate);
    case SimdPath::kScalar:
      return ScalarColumns(k, m, j0, j1, st, mv, c, accumulate);
  }
}

// Below this many multiply-adds a second thread's wake-up costs more than
// it saves.
constexpr int64_t kMinSplitWork = 1 << 20;

// The most tasks a split product is cut into.
constexpr int64_t kMaxTasks = 16;

}  // namespace

void MatmulTile(int64_t k, int64_t m, int64_t n, const MatmulOperand& st,
                const MatmulOperand& mv, const MatmulOut& c, bool accumulate,
                int threads, SimdPath path) {
  if (m <= 0 || n <= 0) return;
  // The first panel's moving rows are fetched while the stationary operand
  // is packed (the later panels' are fetched during the products).
  const int64_t first_bytes =
      std::min<int64_t>(n, kAvx512Width) * DTypeSize(mv.dtype);
  Scratch& scratch = ThreadScratch();
  PackStationary(k, m, BlockRows(path), st, mv, first_bytes, scratch.row,
                 scratch.stationary);
  const float* packed = scratch.stationary.data();
  // Tasks of whole 64-column panels (up to kMaxTasks), which the threads
  // take in turn (ops/split_work.h's pool): a helper that wakes late finds
  // fewer left rather than holding the caller up, which matters on a
  // loaded machine. Which thread sums an element never changes its order.
  const int64_t panels = (n + kAvx512Width - 1) / kAvx512Width;
  const int64_t work_threads = std::min<int64_t>(
      std::max(1, threads), k * m * n >= kMinSplitWork ? panels : 1);
  if (work_threads > 1) {
    const int tasks = static_cast<int>(std::min<int64_t>(panels, kMaxTasks));
    RunSplit(threads, tasks, [&](int task) {
      const int64_t j0 = std::min(n, panels * task / tasks * kAvx512Width);
      const int64_t j1 =
          std::min(n, panels * (task + 1) / tasks * kAvx512Width);
      Columns(path, k, m, j0, j1, packed, mv, c, accumulate);
    });
    return;
  }
  Columns(path, k, m, 0, n, packed, mv, c, accumulate);
}

}  // namespace nkigraph::ops
