#ifndef NKIGRAPH_OPS_ROW_OPS_H_
#define NKIGRAPH_OPS_ROW_OPS_H_

// The ALU operations and activation functions on whole rows: bit for bit
// what ApplyAlu / ApplyActFunc give element by element, in loops the
// compiler vectorises, the operation chosen once per row rather than per
// element. What the op definitions execute with.

#include <cstdint>

#include "ops/activation_functions.h"
#include "ops/alu.h"

namespace nkigraph::ops {

// Whether any of x[0..n) is a NaN (rows holding one go element by element
// where two NaNs could meet), eight at a time where there is AVX2.
bool RowHasNan(const float* x, int64_t n);

//   out[j] = ApplyAlu(op, a[j], b[j]) for j < n; `out` may be `a` or `b`.
void ApplyAluRow(Alu op, const float* a, const float* b, float* out, int64_t n);
//   out[j] = ApplyAlu(op, a[j], s), or ApplyAlu(op, s, a[j]) if `reverse`.
void ApplyAluRowScalar(Alu op, const float* a, float s, bool reverse,
                       float* out, int64_t n);
// Reduces `rows` rows of `cols` elements (row r at data + r * stride) in
// element order: out[r] = ApplyAlu(op, ... ApplyAlu(op, init, x[0]) ...,
// x[cols - 1]). Several rows advance together, so the reductions' latency
// overlaps without changing any row's order of operations.
void ReduceRows(Alu op, float init, const float* data, int64_t rows,
                int64_t cols, int64_t stride, float* out);

// out[j] = ApplyActFunc(func, x[j] * scale + bias) for j < n (the product
// and the sum each rounded to float, as element by element), exp
// vectorised (ExpRow). `out` may be `x`.
void ApplyActFuncRow(ActFunc func, const float* x, float scale, float bias,
                     float* out, int64_t n);

}  // namespace nkigraph::ops

#endif  // NKIGRAPH_OPS_ROW_OPS_H_
