#include "ops/dynamic_bounds.h"

#include "ops/access_pattern.h"

namespace nkigraph::ops {

DynamicBounds DynamicBoundsOf(const proto::AccessPattern& ap,
                              const proto::Tensor& t) {
  const int dim = static_cast<int>(ap.dynamic().indirect_dim());
  DynamicBounds b;
  b.dim_stride = DimStride(t, dim);
  b.dim_size = t.shape(dim);
  b.numel = 1;
  for (int64_t d : t.shape()) b.numel *= d;
  const bool vector = ap.dynamic().kind() == proto::DynamicOffset::VECTOR;
  for (int d = vector ? 1 : 0; d < NumDims(ap); ++d) {
    const int64_t reach = Stride(ap, d) * (Count(ap, d) - 1);
    (reach < 0 ? b.lo : b.hi) += reach;
  }
  return b;
}

}  // namespace nkigraph::ops
