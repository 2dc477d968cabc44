#ifndef NKIGRAPH_BENCH_TUTORIAL_MATMUL_H_
#define NKIGRAPH_BENCH_TUTORIAL_MATMUL_H_

// The NKI matrix-multiplication tutorial's four kernels, written against
// nkigraph's builder to the published structure, for the cost model's
// calibration (bench/cost_calibration.cc): result[M, N] = lhsT[K, M]^T @
// rhs[K, N] in 128 (M) x 128 (K) x 512 (N) tiles.
//
//   kTiled       every (m, n) output tile accumulates K / 128 matmuls, each
//                after loading its lhsT and rhs tiles ("Original Tiled",
//                the guide's first tiled version)
//   kHoisted     the lhsT tiles of an m row loaded once per m, the rhs
//                tiles of an n column once per (m, n) ("Optimization 1")
//   kBlockFree   the free dims blocked 2 x 2 tiles ("Optimization 2")
//   kBlockAll    blocks of 16 (M) x 2 (N) x 8 (K) tiles, partial sums
//                accumulated into SBUF by the vector engine, results
//                packed before their store ("Optimization 3")
//
// Where the published kernel allocates a tile inside a loop body, the
// compiler gives the loop several buffers to rotate through so loads
// overlap compute; the number is not published. Here each such tile gets
// two buffers when two fit the target's SBUF, else one (an ASSUMPTION,
// stated where the calibration table is).

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "builder/isa.h"
#include "builder/tracer.h"
#include "ops/device_profile.h"
#include "util/dtype.h"

namespace nkigraph::bench {

enum class TutorialMatmul { kTiled, kHoisted, kBlockFree, kBlockAll };

struct TutorialMatmulShape {
  int64_t m = 4096;
  int64_t k = 8192;
  int64_t n = 8192;
  proto::DType dtype = proto::BFLOAT16;
  proto::Target target = proto::TARGET_TRN1;
};

namespace tutorial_matmul_internal {

using builder::Buffer;
using builder::Tensor;
namespace isa = builder::isa;

constexpr int64_t kTileM = 128, kTileK = 128, kTileN = 512;

// `count` buffers of `shape` when they fit in `budget` bytes, else one.
struct Ring {
  std::vector<Tensor> buffers;
  int64_t next = 0;
  const Tensor& Take() { return buffers[next++ % buffers.size()]; }
};

inline Ring Buffers(const std::vector<int64_t>& shape, proto::DType dtype,
                    Buffer buffer, const std::string& name, int64_t count) {
  Ring ring;
  for (int64_t b = 0; b < count; ++b) {
    ring.buffers.push_back(
        builder::ndarray(shape, dtype, buffer, absl::StrCat(name, b)));
  }
  return ring;
}

inline int64_t Bytes(const std::vector<int64_t>& shape, proto::DType dtype) {
  int64_t n = DTypeSize(dtype);
  for (int64_t d : shape) n *= d;
  return n;
}

// Two rotating buffers of each of the loop tiles when both sets fit in
// the SBUF beside `fixed` bytes, else one: `sizes` are one buffer's bytes
// of each tile.
inline int64_t BufferCount(const std::vector<int64_t>& sizes,
                           proto::Target target, int64_t fixed = 0) {
  const ops::DeviceProfile& profile = ops::ProfileFor(target);
  int64_t total = 0;
  for (int64_t s : sizes) total += s;
  const int64_t sbuf = profile.sbuf_partition_bytes * profile.num_partitions;
  return fixed + 2 * total <= sbuf ? 2 : 1;
}

// PSUM -> SBUF in the result dtype, then SBUF -> HBM.
inline void Evacuate(const Tensor& result, int64_t m0, int64_t n0,
                     const Tensor& psum, Ring& out_tiles) {
  const Tensor& res_sb = out_tiles.Take();
  isa::tensor_copy(res_sb, psum);
  isa::dma_copy(result.Slice(0, m0, kTileM).Slice(1, n0, kTileN), res_sb);
}

inline void Tiled(const Tensor& lhs_t, const Tensor& rhs, const Tensor& result,
                  const TutorialMatmulShape& s) {
  const int64_t count = BufferCount(
      {Bytes({kTileK, kTileM}, s.dtype), Bytes({kTileK, kTileN}, s.dtype),
       Bytes({kTileM, kTileN}, s.dtype)},
      s.target);
  Ring lhs_tiles =
      Buffers({kTileK, kTileM}, s.dtype, Buffer::kSbuf, "lhsT_tile", count);
  Ring rhs_tiles =
      Buffers({kTileK, kTileN}, s.dtype, Buffer::kSbuf, "rhs_tile", count);
  Ring psums =
      Buffers({kTileM, kTileN}, proto::FLOAT32, Buffer::kPsum, "res_psum", 2);
  Ring out_tiles =
      Buffers({kTileM, kTileN}, s.dtype, Buffer::kSbuf, "res_sb", count);
  for (int64_t m = 0; m < s.m / kTileM; ++m) {
    for (int64_t n = 0; n < s.n / kTileN; ++n) {
      builder::Scope scope("mn_tile");
      const Tensor& psum = psums.Take();
      for (int64_t k = 0; k < s.k / kTileK; ++k) {
        const Tensor& lt = lhs_tiles.Take();
        const Tensor& rt = rhs_tiles.Take();
        isa::dma_copy(
            lt,
            lhs_t.Slice(0, k * kTileK, kTileK).Slice(1, m * kTileM, kTileM));
        isa::dma_copy(
            rt, rhs.Slice(0, k * kTileK, kTileK).Slice(1, n * kTileN, kTileN));
        isa::nc_matmul(psum, lt, rt, /*accumulate=*/k > 0);
      }
      Evacuate(result, m * kTileM, n * kTileN, psum, out_tiles);
    }
  }
}

// Hoisted loads and free-dim blocking: `bm` x `bn` output tiles per block
// (1 x 1: Optimization 1; 2 x 2: Optimization 2).
inline void Blocked(const Tensor& lhs_t, const Tensor& rhs,
                    const Tensor& result, const TutorialMatmulShape& s,
                    int64_t bm, int64_t bn) {
  const int64_t kt = s.k / kTileK;
  const std::vector<int64_t> lhs_shape = {kTileK, bm * kt, kTileM};
  const std::vector<int64_t> rhs_shape = {kTileK, bn * kt, kTileN};
  const int64_t count = BufferCount(
      {Bytes(lhs_shape, s.dtype), Bytes(rhs_shape, s.dtype)}, s.target);
  Ring lhs_blocks =
      Buffers(lhs_shape, s.dtype, Buffer::kSbuf, "lhsT_tiles", count);
  Ring rhs_blocks =
      Buffers(rhs_shape, s.dtype, Buffer::kSbuf, "rhs_tiles", count);
  Ring psums =
      Buffers({kTileM, kTileN}, proto::FLOAT32, Buffer::kPsum, "res_psum", 2);
  Ring out_tiles =
      Buffers({kTileM, kTileN}, s.dtype, Buffer::kSbuf, "res_sb", 2);
  for (int64_t m = 0; m < s.m / (bm * kTileM); ++m) {
    builder::Scope m_scope("m_block");
    const Tensor& lhs_block = lhs_blocks.Take();
    for (int64_t i = 0; i < bm; ++i) {
      for (int64_t k = 0; k < kt; ++k) {
        isa::dma_copy(lhs_block.Select(1, i * kt + k),
                      lhs_t.Slice(0, k * kTileK, kTileK)
                          .Slice(1, (m * bm + i) * kTileM, kTileM));
      }
    }
    for (int64_t n = 0; n < s.n / (bn * kTileN); ++n) {
      builder::Scope n_scope("n_block");
      const Tensor& rhs_block = rhs_blocks.Take();
      for (int64_t j = 0; j < bn; ++j) {
        for (int64_t k = 0; k < kt; ++k) {
          isa::dma_copy(rhs_block.Select(1, j * kt + k),
                        rhs.Slice(0, k * kTileK, kTileK)
                            .Slice(1, (n * bn + j) * kTileN, kTileN));
        }
      }
      for (int64_t i = 0; i < bm; ++i) {
        for (int64_t j = 0; j < bn; ++j) {
          const Tensor& psum = psums.Take();
          for (int64_t k = 0; k < kt; ++k) {
            isa::nc_matmul(psum, lhs_block.Select(1, i * kt + k),
                           rhs_block.Select(1, j * kt + k),
                           /*accumulate=*/k > 0);
          }
          Evacuate(result, (m * bm + i) * kTileM, (n * bn + j) * kTileN, psum,
                   out_tiles);
        }
      }
    }
  }
}

inline void BlockAll(const Tensor& lhs_t, const Tensor& rhs,
                     const Tensor& result, const TutorialMatmulShape& s) {
  constexpr int64_t kBm = 16, kBn = 2, kBk = 8;
  const int64_t block_m = kBm * kTileM, block_n = kBn * kTileN,
                block_k = kBk * kTileK;
  const int64_t num_m = s.m / block_m, num_n = s.n / block_n,
                num_k = s.k / block_k;
  // result_tiles[m][bm][bn] in SBUF, in the input dtype.
  const std::vector<int64_t> acc_shape = {kTileM, num_m * kBm * kBn, kTileN};
  const std::vector<int64_t> rhs_shape = {kTileK, kBk, block_n};
  const std::vector<int64_t> lhs_shape = {kTileK, kBk, block_m};
  const int64_t count =
      BufferCount({Bytes(rhs_shape, s.dtype), Bytes(lhs_shape, s.dtype)},
                  s.target, Bytes(acc_shape, s.dtype));
  Tensor acc =
      builder::ndarray(acc_shape, s.dtype, Buffer::kSbuf, "result_tiles");
  Ring rhs_blocks =
      Buffers(rhs_shape, s.dtype, Buffer::kSbuf, "rhs_tiles", count);
  Ring lhs_blocks =
      Buffers(lhs_shape, s.dtype, Buffer::kSbuf, "lhsT_tiles", count);
  Ring psums =
      Buffers({kTileM, kTileN}, proto::FLOAT32, Buffer::kPsum, "res_tile", 2);
  Ring packed =
      Buffers({kTileM, block_n}, s.dtype, Buffer::kSbuf, "result_packed", 2);
  auto acc_tile = [&](int64_t m, int64_t i, int64_t j) {
    return acc.Select(1, (m * kBm + i) * kBn + j);
  };
  for (int64_t n = 0; n < num_n; ++n) {
    builder::Scope n_scope("n_block");
    for (int64_t t = 0; t < num_m * kBm * kBn; ++t) {
      isa::memset(acc.Select(1, t), 0.0f);
    }
    for (int64_t k = 0; k < num_k; ++k) {
      builder::Scope k_scope("k_block");
      const Tensor& rhs_block = rhs_blocks.Take();
      for (int64_t b = 0; b < kBk; ++b) {
        isa::dma_copy(rhs_block.Select(1, b),
                      rhs.Slice(0, (k * kBk + b) * kTileK, kTileK)
                          .Slice(1, n * block_n, block_n));
      }
      for (int64_t m = 0; m < num_m; ++m) {
        builder::Scope m_scope("m_block");
        const Tensor& lhs_block = lhs_blocks.Take();
        for (int64_t b = 0; b < kBk; ++b) {
          isa::dma_copy(lhs_block.Select(1, b),
                        lhs_t.Slice(0, (k * kBk + b) * kTileK, kTileK)
                            .Slice(1, m * block_m, block_m));
        }
        for (int64_t j = 0; j < kBn; ++j) {
          for (int64_t i = 0; i < kBm; ++i) {
            const Tensor& psum = psums.Take();
            for (int64_t b = 0; b < kBk; ++b) {
              isa::nc_matmul(
                  psum, lhs_block.Select(1, b).Slice(1, i * kTileM, kTileM),
                  rhs_block.Select(1, b).Slice(1, j * kTileN, kTileN),
                  /*accumulate=*/b > 0);
            }
            const Tensor tile = acc_tile(m, i, j);
            isa::tensor_tensor(tile, tile, psum, isa::Alu::kAdd);
          }
        }
      }
    }
    for (int64_t m = 0; m < num_m; ++m) {
      for (int64_t i = 0; i < kBm; ++i) {
        const Tensor& out = packed.Take();
        for (int64_t j = 0; j < kBn; ++j) {
          isa::tensor_copy(out.Slice(1, j * kTileN, kTileN), acc_tile(m, i, j));
        }
        isa::dma_copy(result.Slice(0, (m * kBm + i) * kTileM, kTileM)
                          .Slice(1, n * block_n, block_n),
                      out);
      }
    }
  }
}

}  // namespace tutorial_matmul_internal

// The kernel's graph on one core of the shape's target.
inline absl::StatusOr<proto::Graph> TraceTutorialMatmul(
    TutorialMatmul variant, const TutorialMatmulShape& s) {
  namespace in = tutorial_matmul_internal;
  builder::WorldConfig world;
  world.target = s.target;
  builder::Tracer tracer(builder::TraceConfig{"tutorial_matmul", {}, world});
  return tracer.Trace([&](builder::Tracer& t) {
    builder::Tensor lhs_t = t.Input("lhsT", {s.k, s.m}, s.dtype);
    builder::Tensor rhs = t.Input("rhs", {s.k, s.n}, s.dtype);
    builder::Tensor result =
        t.Allocate({s.m, s.n}, s.dtype, builder::Buffer::kHbm, "result");
    switch (variant) {
      case TutorialMatmul::kTiled:
        in::Tiled(lhs_t, rhs, result, s);
        break;
      case TutorialMatmul::kHoisted:
        in::Blocked(lhs_t, rhs, result, s, 1, 1);
        break;
      case TutorialMatmul::kBlockFree:
        in::Blocked(lhs_t, rhs, result, s, 2, 2);
        break;
      case TutorialMatmul::kBlockAll:
        in::BlockAll(lhs_t, rhs, result, s);
        break;
    }
    t.Output("result", result);
  });
}

}  // namespace nkigraph::bench

#endif  // NKIGRAPH_BENCH_TUTORIAL_MATMUL_H_
