#include "interp/tensor_snapshot.h"

#include <algorithm>
#include <cstring>

#include "ops/access_pattern.h"
#include "util/dtype.h"

namespace nkigraph::interp {

TensorSnapshot TensorSnapshot::Take(DeviceMemory& memory,
                                    const proto::Tensor& tensor, int rank,
                                    int core) {
  TensorSnapshot snapshot;
  snapshot.tensor_ = &tensor;
  snapshot.rank_ = rank;
  snapshot.core_ = core;
  Region& region = memory.RegionFor(tensor, rank, core);
  int64_t elements = 1;
  for (int64_t d : tensor.shape()) elements *= std::max<int64_t>(0, d);
  const int64_t esize = DTypeSize(tensor.dtype());
  const int64_t row = ops::IsOnChip(tensor.space())
                          ? std::max<int64_t>(1, ops::RowElements(tensor))
                          : std::max<int64_t>(1, elements);
  for (int64_t e0 = 0; e0 < elements; e0 += row) {
    Span span;
    span.byte = DeviceMemory::ByteOffset(tensor, e0, region.partition_bytes);
    const int64_t bytes = std::min(row, elements - e0) * esize;
    span.data.assign(&region.data[span.byte], &region.data[span.byte] + bytes);
    span.shadow.resize(bytes);
    for (int64_t b = 0; b < bytes; ++b) {
      span.shadow[b] = region.shadow.Get(span.byte + b);
    }
    snapshot.spans_.push_back(std::move(span));
  }
  return snapshot;
}

void TensorSnapshot::Restore(DeviceMemory& memory) const {
  if (tensor_ == nullptr) return;
  Region& region = memory.RegionFor(*tensor_, rank_, core_);
  for (const Span& span : spans_) {
    if (span.data.empty()) continue;
    std::memcpy(&region.data[span.byte], span.data.data(), span.data.size());
    // Runs of one state at a time: the shadow stores them per block.
    const int64_t n = static_cast<int64_t>(span.shadow.size());
    for (int64_t b = 0; b < n;) {
      int64_t end = b + 1;
      while (end < n && span.shadow[end] == span.shadow[b]) ++end;
      region.shadow.Set(span.byte + b, end - b, span.shadow[b]);
      b = end;
    }
  }
}

}  // namespace nkigraph::interp
