#ifndef NKIGRAPH_OPS_VECTOR_EXP_H_
#define NKIGRAPH_OPS_VECTOR_EXP_H_

#include <cstdint>

#include "ops/cpu_features.h"

namespace nkigraph::ops {

// The interpreter's exp of a float: every activation that exponentiates
// reads it, so an element gives the same bits whether its row goes through
// ExpRow or ApplyActFunc, on any machine and with any C library.
//
// x is clamped to [-104, 89] (exp is 0 below, inf above, once rounded),
// reduced as x = k ln2 + r with k = rint(x / ln2) and |r| <= ln2 / 2 (ln2
// in two parts, the first exact times any k in range), exp(r) taken as
// 1 + r (c1 + r (c2 + ... + r c6)) by fused multiply-adds (coefficients
// fitted for the least relative error on that interval), and the result
// scaled by 2^k in two exact power-of-two factors, so that a subnormal
// result is rounded once. NaN gives the same NaN, quieted. Against the
// exact exp, the error is at most 1.06 ulp over all 2^32 inputs (131 of
// them above 1 ulp; a one-off exhaustive check on the development
// machine; tests/row_kernels_test.cc checks a sample against a
// double-precision exp). glibc's expf is closer (about 0.5 ulp) but takes
// 2.5 times as long in vector form, and its results are the C library's.
float ExpOf(float x);

// out[j] = ExpOf(x[j]) for j < n, bit for bit on every SimdPath: sixteen at
// a time on the AVX-512 path, eight on AVX2 and FMA (the same operations on
// every lane).
// `out` may be `x`.
void ExpRow(const float* x, float* out, int64_t n,
            SimdPath path = BestSimdPath());

// out[j] = ExpOf(x[j] * scale + bias) for j < n, the product and the sum
// each rounded to float (no fused multiply-add), in the same pass. A NaN
// among x, scale and bias gives that NaN, quieted; where two meet, which
// one is machine-dependent (ApplyActFuncRow takes those rows element by
// element). `out` may be `x`.
void ExpAffineRow(const float* x, float scale, float bias, float* out,
                  int64_t n, SimdPath path = BestSimdPath());

}  // namespace nkigraph::ops

#endif  // NKIGRAPH_OPS_VECTOR_EXP_H_
