#ifndef NKIGRAPH_OPS_VECTOR_EXP_H_
#define NKIGRAPH_OPS_VECTOR_EXP_H_

#include <cstdint>

namespace nkigraph::ops {

// out[j] = std::exp(x[j]) for j < n, bit for bit what the C library's
// expf returns, eight at a time where the processor has AVX-512 (or AVX2
// and FMA).
// glibc's expf (since 2.27) evaluates, in double, a 32-entry table of
// 2^(i/32) times a cubic in the remainder and rounds once to float; the
// vector form is the same arithmetic, operation for operation, and agrees
// with it on all 2^32 inputs (each form checked exhaustively on the
// development machine; tests/row_kernels_test.cc checks a sample). Arguments
// outside |x| < 88 (and NaN) go to expf itself. `out` may be `x`.
void ExpRow(const float* x, float* out, int64_t n);

}  // namespace nkigraph::ops

#endif  // NKIGRAPH_OPS_VECTOR_EXP_H_
