#ifndef NKIGRAPH_OPS_MATMUL_KERNEL_H_
#define NKIGRAPH_OPS_MATMUL_KERNEL_H_

// nc_matmul's product, on its operands where they lie:
//   c[i][j] = acc            (accumulate = false)
//   c[i][j] = c[i][j] + acc  (accumulate = true)
// with, for each element on its own,
//   acc = +0; for p = 0 .. k-1 in order: acc = fma(st[p][i], mv[p][j], acc)
// (one rounding per step, then one onto the old value). That order is the
// interpreter's definition of the tensor engine's fp32 accumulation, so a
// result is the same bits on every machine, for every thread count and on
// every code path below (AVX-512, AVX2+FMA, plain C++). It is also what
// OpenBLAS's sgemm computed for these shapes on the development machine
// (tests/matmul_kernel_test.cc checks it where the BLAS agrees).
//
// Row p of each operand is its partition p: the stationary operand's
// st[p][0..m), the moving one's mv[p][0..n), each contiguous. Rows a
// partition apart lie hundreds of KiB apart, at the same offset in the
// caches' set index, so a register block cannot keep them cached between
// row blocks where they lie (a 128-row panel maps to one L1 set and two L2
// sets; a kernel reading them there took four times as long). So the
// stationary operand is widened to float32 once per call into blocks of
// the register block's rows (64 KiB at most), and the moving operand is
// read a panel of columns at a time: the first row block of a panel reads
// it where it lies (AVX-512: float32, bfloat16 and float16, widened in
// registers; other dtypes are widened into the panel first) and leaves it
// in a panel buffer, from which the other row blocks read it in the L1
// cache, while each of them fetches a share of the next panel's rows.

#include <cstdint>

#include "ops/cpu_features.h"
#include "proto/nkigraph.pb.h"

namespace nkigraph::ops {

// An operand as it lies: element j of row p is at
// data + p * stride + j * DTypeSize(dtype), of any floating dtype; the
// rows need no alignment.
struct MatmulOperand {
  const uint8_t* data = nullptr;
  int64_t stride = 0;  // bytes
  proto::DType dtype = proto::FLOAT32;
};

// The destination: c[i][j] = data[i * ld + j].
struct MatmulOut {
  float* data = nullptr;
  int64_t ld = 0;  // floats
};

// The product above for a [k, m] stationary and a [k, n] moving operand
// into an [m, n] destination that overlaps neither. `threads` (at least 1)
// may split the columns among threads: each element is still summed by
// one thread in the order above.
void MatmulTile(int64_t k, int64_t m, int64_t n, const MatmulOperand& st,
                const MatmulOperand& mv, const MatmulOut& c, bool accumulate,
                int threads = 1, SimdPath path = BestSimdPath());

}  // namespace nkigraph::ops

#endif  // NKIGRAPH_OPS_MATMUL_KERNEL_H_
