#ifndef NKIGRAPH_INTERP_PROGRAM_STATE_WALK_H_
#define NKIGRAPH_INTERP_PROGRAM_STATE_WALK_H_

// How ProgramState walks an operand's elements: in runs in operand order
// (Walk, which resolves dynamic offsets and their bounds), and in runs in
// stride order for shadow work (ForEachSortedRun). Templates over what is
// done with each run, shared by the files that read and write operands.
// Not a public header.

#include <algorithm>
#include <cstdint>
#include <string>

#include "absl/strings/str_cat.h"
#include "interp/program_state.h"
#include "ops/access_pattern.h"
#include "ops/dynamic_bounds.h"
#include "util/diagnostic.h"
#include "util/dtype.h"
#include "util/status_macros.h"

namespace nkigraph::interp {

// An error executing the bound instruction that is about tensor `t`; the
// scheduler adds where it happened.
absl::Status TensorError(DiagnosticKind kind, const proto::Tensor& t,
                         std::string message);

template <typename RunFn>
absl::Status ProgramState::Walk(int i, RunFn&& fn) {
  const ops::OperandInfo& op = view_.operand(i);
  const proto::Tensor& t = *op.tensor;
  const proto::AccessPattern& ap = *op.ap;
  Region& region = memory_.RegionFor(t, rank_, core_);
  const int64_t esize = op.facts.esize;
  constexpr int kMaxWalkDims = ops::kMaxDims + 1;
  int64_t stride[kMaxWalkDims];
  int64_t count[kMaxWalkDims];
  int nd = ops::NumDims(ap);
  for (int d = 0; d < nd; ++d) {
    stride[d] = ops::Stride(ap, d);
    count[d] = ops::Count(ap, d);
  }
  if (nd ==
      1) {  // a single dim walks as outer x 1 so the loop below is uniform
    stride[1] = 1;
    count[1] = 1;
    nd = 2;
  }
  int64_t base = ap.offset();

  const proto::DynamicOffset& dyn = ap.dynamic();
  const bool has_dynamic = dyn.kind() != proto::DynamicOffset::KIND_UNSPECIFIED;
  const bool vector = dyn.kind() == proto::DynamicOffset::VECTOR;
  const bool skip_oob = dyn.oob_mode() == proto::DynamicOffset::OOB_SKIP;
  ops::DynamicBounds bounds;
  if (has_dynamic) bounds = ops::DynamicBoundsOf(ap, t);
  const int64_t total = ops::ApElements(ap);
  if (has_dynamic && !vector) {
    NKI_ASSIGN_OR_RETURN(const int64_t v,
                         ReadIndex(dyn.tensor_id(), dyn.offset_element()));
    if (!ops::InBounds(bounds, v, base)) {
      if (skip_oob) {
        MarkSkipped(0, total);
        return absl::OkStatus();
      }
      return TensorError(
          DiagnosticKind::kDevice, t,
          absl::StrCat("out-of-bounds dynamic offset: index ", v, " along dim ",
                       dyn.indirect_dim(), " of '", t.name(), "' (size ",
                       bounds.dim_size, ")"));
    }
    base += v * bounds.dim_stride;
    RecordReach(i, base + bounds.lo, base + bounds.hi);
  }

  int64_t idx[kMaxWalkDims] = {0};
  const int64_t inner_count = count[nd - 1];
  const int64_t inner_stride = stride[nd - 1];
  const int64_t outer = total / inner_count;
  int64_t row_delta = 0;
  int64_t current_row = -1;
  bool row_skipped = false;
  int64_t position = 0;
  for (int64_t o = 0; o < outer; ++o) {
    if (vector && idx[0] != current_row) {
      current_row = idx[0];
      NKI_ASSIGN_OR_RETURN(
          const int64_t v,
          ReadIndex(dyn.tensor_id(),
                    dyn.offset_element() + current_row * dyn.offset_stride()));
      const int64_t row_base = base + current_row * stride[0];
      row_skipped = !ops::InBounds(bounds, v, row_base);
      if (row_skipped && !skip_oob) {
        return TensorError(
            DiagnosticKind::kDevice, t,
            absl::StrCat("out-of-bounds dynamic offset: row ", current_row,
                         " has index ", v, " along dim ", dyn.indirect_dim(),
                         " of '", t.name(), "' (size ", bounds.dim_size, ")"));
      }
      row_delta = v * bounds.dim_stride;
      if (!row_skipped) {
        RecordReach(i, row_base + row_delta + bounds.lo,
                    row_base + row_delta + bounds.hi);
      }
    }
    if (row_skipped) {
      MarkSkipped(position, inner_count);
    } else {
      int64_t flat = base + row_delta;
      for (int d = 0; d < nd - 1; ++d) flat += idx[d] * stride[d];
      const Run run{position,
                    inner_count,
                    flat,
                    inner_stride,
                    DeviceMemory::ByteOffset(t, flat, region.partition_bytes),
                    inner_stride * esize};
      NKI_RETURN_IF_ERROR(fn(t, region, run));
    }
    position += inner_count;
    for (int d = nd - 2; d >= 0; --d) {
      if (++idx[d] < count[d]) break;
      idx[d] = 0;
    }
  }
  return absl::OkStatus();
}

template <typename Fn>
bool ProgramState::ForEachSortedRun(int i, Fn&& fn) const {
  const ops::OperandInfo& op = view_.operand(i);
  const proto::Tensor& t = *op.tensor;
  const proto::AccessPattern& ap = *op.ap;
  if (ap.dynamic().kind() != proto::DynamicOffset::KIND_UNSPECIFIED) {
    return false;
  }
  // Dims by decreasing |stride|, negative strides walked from their low
  // end (the same elements); count-1 dims dropped. On chip dim 0 (the
  // partitions) stays outermost: its stride spans whole rows.
  struct Dim {
    int64_t stride;
    int64_t count;
  };
  Dim dims[ops::kMaxDims + 1];
  int nd = 0;
  int64_t base = ap.offset();
  for (int d = 0; d < ops::NumDims(ap); ++d) {
    int64_t stride = ops::Stride(ap, d);
    const int64_t count = ops::Count(ap, d);
    if (count == 1) continue;
    if (stride < 0) {
      base += stride * (count - 1);
      stride = -stride;
    }
    dims[nd++] = {stride, count};
  }
  const bool on_chip = ops::IsOnChip(t.space());
  const int first = on_chip && nd > 0 && ops::Count(ap, 0) > 1 ? 1 : 0;
  std::stable_sort(dims + first, dims + nd, [](const Dim& a, const Dim& b) {
    return a.stride > b.stride;
  });
  // Merge contiguous inner dims into the run.
  int64_t run = 1;
  while (nd > first && dims[nd - 1].stride == run) {
    run *= dims[nd - 1].count;
    --nd;
  }
  const int64_t esize = DTypeSize(t.dtype());
  const Region& region = memory_.RegionFor(t, rank_, core_);
  int64_t idx[ops::kMaxDims + 1] = {0};
  while (true) {
    int64_t flat = base;
    for (int d = 0; d < nd; ++d) flat += idx[d] * dims[d].stride;
    fn(DeviceMemory::ByteOffset(t, flat, region.partition_bytes), run * esize);
    int d = nd - 1;
    for (; d >= 0; --d) {
      if (++idx[d] < dims[d].count) break;
      idx[d] = 0;
    }
    if (d < 0) break;
  }
  return true;
}

}  // namespace nkigraph::interp

#endif  // NKIGRAPH_INTERP_PROGRAM_STATE_WALK_H_
