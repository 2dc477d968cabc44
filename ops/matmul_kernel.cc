#include "ops/matmul_kernel.h"

#include <immintrin.h>

#include <algorithm>
#include <cmath>
#include <memory>
#include <vector>

#include "absl/synchronization/mutex.h"
#include "util/dtype.h"
#include "util/worker_pool.h"

namespace nkigraph::ops {
namespace {

// ---- The copies every path reads ----

// The stationary operand widened to float32 in blocks of `rows` of its
// columns (the register block's rows of c): block b holds, for each p in
// turn, st[p][b * rows + r] for its r, so a block's broadcasts read one
// stream. With rows 1 that is st transposed.
void PackStationary(int64_t k, int64_t m, int rows, const MatmulOperand& st,
                    std::vector<float>& row, std::vector<float>& out) {
  row.resize(m);
  out.resize(k * m);
  for (int64_t p = 0; p < k; ++p) {
    LoadRowAsFloat(st.dtype, st.data + p * st.stride, m, row.data());
    for (int64_t i0 = 0; i0 < m; i0 += rows) {
      const int64_t r_count = std::min<int64_t>(rows, m - i0);
      float* block = out.data() + i0 * k + p * r_count;
      for (int64_t r = 0; r < r_count; ++r) block[r] = row[i0 + r];
    }
  }
}

// Columns [j, j + w) of the moving operand widened to float32, `width`
// floats per p (w <= width; the columns past w are zero).
void PackPanel(int64_t k, int64_t j, int64_t w, int64_t width,
               const MatmulOperand& mv, float* panel) {
  // Rows a partition apart defeat the hardware prefetcher, which starts
  // afresh on every row: ask for a few rows ahead.
  constexpr int64_t kRowsAhead = 6;
  const int64_t size = DTypeSize(mv.dtype);
  const uint8_t* src = mv.data + j * size;
  for (int64_t p = 0; p < k; ++p, src += mv.stride, panel += width) {
    if (p + kRowsAhead < k) {
      const uint8_t* ahead = src + kRowsAhead * mv.stride;
      __builtin_prefetch(ahead);
      __builtin_prefetch(ahead + w * size - 1);
    }
    LoadRowAsFloat(mv.dtype, src, w, panel);
    std::fill(panel + w, panel + width, 0.0f);
  }
}

// Buffers of the thread that makes (a part of) a product, kept from one
// call to the next.
struct Scratch {
  std::vector<float> stationary;
  std::vector<float> row;
  std::vector<float> panel;
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
  std::vector<float>& panel = ThreadScratch().panel;
  panel.resize(k * kWidth);
  float acc[kWidth];
  for (int64_t j = j0; j < j1; j += kWidth) {
    const int64_t w = std::min(kWidth, j1 - j);
    PackPanel(k, j, w, kWidth, mv, panel.data());
    for (int64_t i = 0; i < m; ++i) {
      const float* s = st + i * k;
      std::fill(acc, acc + w, 0.0f);
      for (int64_t p = 0; p < k; ++p) {
        const float* b = panel.data() + p * kWidth;
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
#pragma GCC unroll 2
    for (int v = 0; v < V; ++v) acc[r][v] = _mm256_setzero_ps();
  }
  for (int64_t p = 0; p < k; ++p, s += R, panel += kAvx2Width) {
    __m256 b[V];
#pragma GCC unroll 2
    for (int v = 0; v < V; ++v) b[v] = _mm256_loadu_ps(panel + 8 * v);
#pragma GCC unroll 8
    for (int r = 0; r < R; ++r) {
      const __m256 a = _mm256_broadcast_ss(s + r);
#pragma GCC unroll 2
      for (int v = 0; v < V; ++v) {
        acc[r][v] = _mm256_fmadd_ps(a, b[v], acc[r][v]);
      }
    }
  }
  // Lanes below `w` in each vector, as maskload and maskstore take them.
  __m256i masks[V];
#pragma GCC unroll 2
  for (int v = 0; v < V; ++v) {
    masks[v] =
        _mm256_cmpgt_epi32(_mm256_set1_epi32(static_cast<int>(w - 8 * v)),
                           _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
  }
#pragma GCC unroll 8
  for (int r = 0; r < R; ++r) {
#pragma GCC unroll 2
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
  std::vector<float>& panel = ThreadScratch().panel;
  panel.resize(k * kAvx2Width);
  for (int64_t j = j0; j < j1; j += kAvx2Width) {
    const int64_t w = std::min(kAvx2Width, j1 - j);
    PackPanel(k, j, w, kAvx2Width, mv, panel.data());
    if (w > 8) {
      Avx2Rows<2>(k, m, st, panel.data(), c.data + j, c.ld, w, accumulate);
    } else {
      Avx2Rows<1>(k, m, st, panel.data(), c.data + j, c.ld, w, accumulate);
    }
  }
}

// ---- AVX-512: blocks of up to 8 rows x 32 columns (16 accumulators) ----

#define NKIGRAPH_AVX512 __attribute__((target("avx512f")))

constexpr int kAvx512Rows = 8;
constexpr int64_t kAvx512Width = 32;

// Rows [i0, i0 + R) and the columns of `masks` of c from the stationary
// block `s` (R floats per p) and the panel (32 floats per p).
template <int R, int V>
NKIGRAPH_AVX512 void Avx512Block(int64_t k, const float* s, const float* panel,
                                 float* out, int64_t ld,
                                 const __mmask16 (&masks)[2], bool accumulate) {
  __m512 acc[R][V];
#pragma GCC unroll 8
  for (int r = 0; r < R; ++r) {
#pragma GCC unroll 2
    for (int v = 0; v < V; ++v) acc[r][v] = _mm512_setzero_ps();
  }
  for (int64_t p = 0; p < k; ++p, s += R, panel += kAvx512Width) {
    __m512 b[V];
#pragma GCC unroll 2
    for (int v = 0; v < V; ++v) b[v] = _mm512_loadu_ps(panel + 16 * v);
#pragma GCC unroll 8
    for (int r = 0; r < R; ++r) {
      const __m512 a = _mm512_set1_ps(s[r]);
#pragma GCC unroll 2
      for (int v = 0; v < V; ++v) {
        acc[r][v] = _mm512_fmadd_ps(a, b[v], acc[r][v]);
      }
    }
  }
#pragma GCC unroll 8
  for (int r = 0; r < R; ++r) {
#pragma GCC unroll 2
    for (int v = 0; v < V; ++v) {
      float* o = out + r * ld + 16 * v;
      __m512 x = acc[r][v];
      if (accumulate) x = _mm512_add_ps(_mm512_maskz_loadu_ps(masks[v], o), x);
      _mm512_mask_storeu_ps(o, masks[v], x);
    }
  }
}

template <int V>
NKIGRAPH_AVX512 void Avx512Rows(int64_t k, int64_t m, const float* st,
                                const float* panel, float* out, int64_t ld,
                                const __mmask16 (&masks)[2], bool accumulate) {
  int64_t i = 0;
  for (; i + kAvx512Rows <= m; i += kAvx512Rows) {
    Avx512Block<kAvx512Rows, V>(k, st + i * k, panel, out + i * ld, ld, masks,
                                accumulate);
  }
  const float* s = st + i * k;
  out += i * ld;
  switch (m - i) {
    case 7:
      return Avx512Block<7, V>(k, s, panel, out, ld, masks, accumulate);
    case 6:
      return Avx512Block<6, V>(k, s, panel, out, ld, masks, accumulate);
    case 5:
      return Avx512Block<5, V>(k, s, panel, out, ld, masks, accumulate);
    case 4:
      return Avx512Block<4, V>(k, s, panel, out, ld, masks, accumulate);
    case 3:
      return Avx512Block<3, V>(k, s, panel, out, ld, masks, accumulate);
    case 2:
      return Avx512Block<2, V>(k, s, panel, out, ld, masks, accumulate);
    case 1:
      return Avx512Block<1, V>(k, s, panel, out, ld, masks, accumulate);
    default:
      return;
  }
}

// Columns [j0, j1), a 32-column panel at a time: the panel (16 KiB at
// K 128) stays in the L1 cache while every row block reads it.
void Avx512Columns(int64_t k, int64_t m, int64_t j0, int64_t j1,
                   const float* st, const MatmulOperand& mv, const MatmulOut& c,
                   bool accumulate) {
  std::vector<float>& panel = ThreadScratch().panel;
  panel.resize(k * kAvx512Width);
  auto mask = [](int64_t bits) {
    return static_cast<__mmask16>(bits >= 16 ? 0xffff : (1u << bits) - 1);
  };
  for (int64_t j = j0; j < j1; j += kAvx512Width) {
    const int64_t w = std::min(kAvx512Width, j1 - j);
    PackPanel(k, j, w, kAvx512Width, mv, panel.data());
    const __mmask16 masks[2] = {mask(w), mask(std::max<int64_t>(w - 16, 0))};
    if (w > 16) {
      Avx512Rows<2>(k, m, st, panel.data(), c.data + j, c.ld, masks,
                    accumulate);
    } else {
      Avx512Rows<1>(k, m, st, panel.data(), c.data + j, c.ld, masks,
                    accumulate);
    }
  }
}

// ---- Dispatch ----

bool HaveAvx512() {
  static const bool have = __builtin_cpu_supports("avx512f");
  return have;
}

bool HaveAvx2() {
  static const bool have =
      __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
  return have;
}

int BlockRows(MatmulPath path) {
  switch (path) {
    case MatmulPath::kAvx512:
      return kAvx512Rows;
    case MatmulPath::kAvx2:
      return kAvx2Rows;
    case MatmulPath::kScalar:
      return 1;
  }
  return 1;
}

void Columns(MatmulPath path, int64_t k, int64_t m, int64_t j0, int64_t j1,
             const float* st, const MatmulOperand& mv, const MatmulOut& c,
             bool accumulate) {
  switch (path) {
    case MatmulPath::kAvx512:
      return Avx512Columns(k, m, j0, j1, st, mv, c, accumulate);
    case MatmulPath::kAvx2:
      return Avx2Columns(k, m, j0, j1, st, mv, c, accumulate);
    case MatmulPath::kScalar:
      return ScalarColumns(k, m, j0, j1, st, mv, c, accumulate);
  }
}

// The threads that split products, started on first use. One product
// uses them at a time; another that finds them busy runs on its own
// thread (its result is the same).
struct SplitPool {
  absl::Mutex mu;
  std::unique_ptr<WorkerPool> pool;
};
SplitPool& Splitter() {
  static SplitPool* const splitter = new SplitPool;
  return *splitter;
}

// Below this many multiply-adds a second thread's wake-up costs more than
// it saves.
constexpr int64_t kMinSplitWork = 1 << 20;

}  // namespace

bool MatmulPathAvailable(MatmulPath path) {
  switch (path) {
    case MatmulPath::kAvx512:
      return HaveAvx512();
    case MatmulPath::kAvx2:
      return HaveAvx2();
    case MatmulPath::kScalar:
      return true;
  }
  return false;
}

MatmulPath BestMatmulPath() {
  if (HaveAvx512()) return MatmulPath::kAvx512;
  if (HaveAvx2()) return MatmulPath::kAvx2;
  return MatmulPath::kScalar;
}

void MatmulTile(int64_t k, int64_t m, int64_t n, const MatmulOperand& st,
                const MatmulOperand& mv, const MatmulOut& c, bool accumulate,
                int threads, MatmulPath path) {
  if (m <= 0 || n <= 0) return;
  Scratch& scratch = ThreadScratch();
  PackStationary(k, m, BlockRows(path), st, scratch.row, scratch.stationary);
  const float* packed = scratch.stationary.data();
  // Whole 32-column panels per thread.
  const int64_t panels = (n + 31) / 32;
  const int parts = static_cast<int>(std::min<int64_t>(
      std::max(1, threads), k * m * n >= kMinSplitWork ? panels : 1));
  if (parts > 1) {
    SplitPool& splitter = Splitter();
    if (splitter.mu.TryLock()) {
      if (splitter.pool == nullptr || splitter.pool->threads() < parts) {
        splitter.pool = std::make_unique<WorkerPool>(parts);
      }
      splitter.pool->Run(parts, [&](int part) {
        const int64_t j0 = std::min(n, panels * part / parts * 32);
        const int64_t j1 = std::min(n, panels * (part + 1) / parts * 32);
        Columns(path, k, m, j0, j1, packed, mv, c, accumulate);
      });
      splitter.mu.Unlock();
      return;
    }
  }
  Columns(path, k, m, 0, n, packed, mv, c, accumulate);
}

}  // namespace nkigraph::ops
