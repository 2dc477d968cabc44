#ifndef NKIGRAPH_OPS_DYNAMIC_BOUNDS_H_
#define NKIGRAPH_OPS_DYNAMIC_BOUNDS_H_

// The rule that bounds a dynamic offset: an index entry v moves a row of
// the static pattern by v x stride(indirect_dim), and is in bounds when v
// indexes that dim and the moved row stays inside the tensor. The
// interpreter enforces it at run time; the cost model's known-value
// evaluator applies it to the offsets it resolves before the run.

#include <cstdint>

#include "proto/nkigraph.pb.h"

namespace nkigraph::ops {

struct DynamicBounds {
  int64_t dim_stride = 0;  // elements one step along the indirect dim moves
  int64_t dim_size = 0;    // entries of the indirect dim
  // The static pattern's reach below and above its base (for VECTOR: one
  // dim-0 row's).
  int64_t lo = 0;
  int64_t hi = 0;
  int64_t numel = 0;  // the tensor's elements
};

// The bounds of `ap`'s dynamic offset in `t`; its indirect dim must be one
// of t's dims.
DynamicBounds DynamicBoundsOf(const proto::AccessPattern& ap,
                              const proto::Tensor& t);

// Whether entry `v` keeps the row starting at `row_base` (the pattern's
// offset; for VECTOR plus the row's dim-0 step) inside the tensor.
inline bool InBounds(const DynamicBounds& b, int64_t v, int64_t row_base) {
  const int64_t base = row_base + v * b.dim_stride;
  return v >= 0 && v < b.dim_size && base + b.lo >= 0 && base + b.hi < b.numel;
}

}  // namespace nkigraph::ops

#endif  // NKIGRAPH_OPS_DYNAMIC_BOUNDS_H_
