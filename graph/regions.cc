#include "graph/regions.h"

#include <algorithm>

#include "absl/container/inlined_vector.h"
#include "ops/access_pattern.h"
#include "ops/instr_facts.h"
#include "util/dtype.h"

namespace nkigraph::graph {
namespace {

struct Box {
  int64_t row_lo, row_hi, elem_lo, elem_hi;  // half-open; elems in a row
};

// A tensor as an operand sees it: rows (dim 0), elements per row and bytes
// per element. A bitcast view has the tensor's rows and bytes, counted in
// elements of its view dtype.
struct Layout {
  int64_t rows;
  int64_t row;
  int64_t esize;
};

Layout DeclaredLayout(const GraphIndex& index, uint32_t id) {
  const proto::Tensor& tensor = index.tensor(id);
  const int esize = std::max(DTypeSize(tensor.dtype()), 1);
  // A rank-1 tensor is one row of elements, not a column of one-element
  // rows: a bitcast view rescales the last dim, which must be the row for
  // the view's boxes to land on the same bytes (bf16 [8] as int32 [4]).
  if (tensor.shape_size() == 1) return Layout{1, tensor.shape(0), esize};
  return Layout{tensor.shape(0), index.row_elements(id), esize};
}

Layout OperandLayout(const GraphIndex& index, const proto::AccessPattern& ap) {
  Layout layout = DeclaredLayout(index, ap.tensor_id());
  if (ap.view_dtype() == proto::DTYPE_UNSPECIFIED) return layout;
  const int view_size = DTypeSize(ap.view_dtype());
  if (view_size > 0) {
    // (The validator has checked that the bytes divide.)
    layout.row = std::max<int64_t>(layout.row * layout.esize / view_size, 1);
    layout.esize = view_size;
  }
  return layout;
}

// The whole tensor.
Box WholeBox(const Layout& layout) {
  return Box{0, layout.rows, 0, layout.row};
}

// Rows and in-row elements spanned by the flat elements [lo, hi].
Box FlatBox(const Layout& layout, int64_t lo, int64_t hi) {
  const int64_t row = layout.row;
  if (lo / row == hi / row)
    return Box{lo / row, lo / row + 1, lo % row, hi % row + 1};
  return Box{lo / row, hi / row + 1, 0, row};
}

// The static part of `ap` as a box. Pattern dims whose stride is a whole
// number of rows move along rows; the others move inside a row, as long as
// they stay inside it; otherwise the box is the flat extent's rows.
// (Overflow-checked: a hostile pattern's box is the whole tensor.)
Box StaticBox(const Layout& layout, const proto::AccessPattern& ap) {
  const int64_t row = layout.row;
  int64_t total = 0;
  if (__builtin_mul_overflow(layout.rows, row, &total)) return WholeBox(layout);
  int64_t row_min = 0, row_max = 0, in_min = 0, in_max = 0;
  int64_t flat_min = ap.offset(), flat_max = ap.offset();
  bool separable = true;
  const int dims = ops::NumDims(ap);
  for (int d = 0; d < dims; ++d) {
    const int64_t stride = ops::Stride(ap, d);
    int64_t span = 0;
    if (__builtin_mul_overflow(stride, ops::Count(ap, d) - 1, &span) ||
        __builtin_add_overflow(span < 0 ? flat_min : flat_max, span,
                               span < 0 ? &flat_min : &flat_max)) {
      return WholeBox(layout);
    }
    if (span == 0) continue;
    if (stride % row == 0) {
      (span < 0 ? row_min : row_max) += span / row;
    } else if (stride > -row && stride < row) {
      (span < 0 ? in_min : in_max) += span;
    } else {
      separable = false;
    }
  }
  if (flat_min < 0 || flat_max >= total) return WholeBox(layout);
  // Inside the tensor, every partial sum above is bounded by its size.
  const int64_t offset = ap.offset();
  const int64_t base_row = offset / row;
  const int64_t base_in = offset % row;
  if (separable && base_in + in_min >= 0 && base_in + in_max < row) {
    return Box{base_row + row_min, base_row + row_max + 1, base_in + in_min,
               base_in + in_max + 1};
  }
  return FlatBox(layout, flat_min, flat_max);
}

// Clamps `box` into the tensor; a box entirely outside (a malformed
// graph) becomes the whole tensor.
Box Clamp(const Layout& layout, Box box) {
  const Box whole = WholeBox(layout);
  box.row_lo = std::clamp(box.row_lo, whole.row_lo, whole.row_hi);
  box.row_hi = std::clamp(box.row_hi, whole.row_lo, whole.row_hi);
  box.elem_lo = std::clamp(box.elem_lo, whole.elem_lo, whole.elem_hi);
  box.elem_hi = std::clamp(box.elem_hi, whole.elem_lo, whole.elem_hi);
  if (box.row_lo >= box.row_hi || box.elem_lo >= box.elem_hi) return whole;
  return box;
}

uint64_t SpaceKey(uint32_t core, proto::MemorySpace space, uint32_t tensor) {
  return (uint64_t{core} << 40) |
         (uint64_t{static_cast<uint32_t>(space) & 0xff} << 32) | tensor;
}

// The read of `box` of tensor `id` as a touch of its address space.
Touch TouchOf(const GraphIndex& index, uint32_t core, uint32_t id,
              const Layout& layout, Box box) {
  const proto::Tensor& tensor = index.tensor(id);
  box = Clamp(layout, box);
  const int64_t size = layout.esize;
  Touch touch;
  touch.tensor = id;
  if (ops::IsOnChip(tensor.space())) {
    // One address space per program and on-chip memory; rows are absolute
    // partitions, bytes absolute offsets inside a partition. (A hostile
    // address is clamped; it cannot reach real on-chip sizes anyway.)
    const int64_t address =
        std::clamp<int64_t>(tensor.address(), 0, int64_t{1} << 50);
    touch.space_key = SpaceKey(core, tensor.space(), 0);
    touch.row_lo = tensor.partition_offset() + box.row_lo;
    touch.row_hi = tensor.partition_offset() + box.row_hi;
    touch.byte_lo = address + box.elem_lo * size;
    touch.byte_hi = address + box.elem_hi * size;
  } else {
    touch.space_key = SpaceKey(core, tensor.space(), id);
    touch.row_lo = box.row_lo;
    touch.row_hi = box.row_hi;
    touch.byte_lo = box.elem_lo * size;
    touch.byte_hi = box.elem_hi * size;
  }
  return touch;
}

// The index entries a dynamic offset reads.
void AppendIndexRead(const GraphIndex& index, uint32_t core,
                     const proto::AccessPattern& ap, std::vector<Touch>* out) {
  const proto::DynamicOffset& dyn = ap.dynamic();
  if (dyn.tensor_id() == 0) return;
  __int128 lo = dyn.offset_element();
  __int128 hi = lo;
  if (dyn.kind() == proto::DynamicOffset::VECTOR && ops::NumDims(ap) > 0) {
    // One entry per index of the pattern's first dim.
    const __int128 span =
        static_cast<__int128>(dyn.offset_stride()) * (ops::Count(ap, 0) - 1);
    (span < 0 ? lo : hi) += span;
  }
  const uint32_t id = dyn.tensor_id();
  const Layout layout = DeclaredLayout(index, id);
  const __int128 last = static_cast<__int128>(layout.rows) * layout.row - 1;
  lo = std::clamp<__int128>(lo, 0, last);
  hi = std::clamp<__int128>(hi, 0, last);
  out->push_back(TouchOf(
      index, core, id, layout,
      FlatBox(layout, static_cast<int64_t>(lo), static_cast<int64_t>(hi))));
}

}  // namespace

void AppendTouches(const GraphIndex& index, int i, std::vector<Touch>* out,
                   const ResolvedOffsets* resolved) {
  const InstrInfo& info = index.info(i);
  const proto::Instruction& instr = *info.instr;
  // One walk over the operands: reads (and index reads) go out in operand
  // order as they come, writes are held and follow them.
  absl::InlinedVector<Touch, 4> writes;
  const int operands = instr.operands_size();
  for (int o = 0; o < operands; ++o) {
    const proto::AccessPattern& ap = instr.operands(o);
    if (ap.tensor_id() == 0) continue;
    const bool reads = info.Reads(o);
    const bool written = info.Writes(o);
    const bool dynamic =
        ap.dynamic().kind() != proto::DynamicOffset::KIND_UNSPECIFIED;
    if (dynamic) AppendIndexRead(index, info.core, ap, out);
    if (!reads && !written) continue;
    const ResolvedRange* reached = nullptr;
    if (dynamic && resolved != nullptr) {
      const auto it = resolved->find({instr.id(), o});
      if (it != resolved->end()) reached = &it->second;
    }
    const Layout layout = OperandLayout(index, ap);
    const Box box = !dynamic ? StaticBox(layout, ap)
                    : reached != nullptr
                        ? FlatBox(layout, reached->lo, reached->hi)
                        : WholeBox(layout);
    const Touch touch = TouchOf(index, info.core, ap.tensor_id(), layout, box);
    if (reads) out->push_back(touch);
    if (written) {
      writes.push_back(touch);
      writes.back().write = true;
    }
  }
  out->insert(out->end(), writes.begin(), writes.end());
}

}  // namespace nkigraph::graph
