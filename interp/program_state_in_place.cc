// ProgramState's fast paths for operands that lie in rows
// (ExecContext::ReadRows, ElementwiseInPlace, MatmulInPlace,
// WriteFloatInPlace): the op works on device memory itself, with no
// buffer in operand order; the checks a read would make are made first,
// and a destination is marked written. Strided blocks are in
// program_state_blocks.cc.
#include "interp/program_state.h"
#include "ops/access_pattern.h"
#include "ops/op_util.h"
#include "util/status_macros.h"

namespace nkigraph::interp {

bool ProgramState::LayoutAsRows(int i, RowLayout* layout) const {
  const ops::OperandInfo& op = view_.operand(i);
  // Bound from a decoded stream or by BindInstrView: the facts are known.
  const ops::OperandFacts& f = op.facts;
  if (any_skipped_ || !f.as_rows) return false;
  const int64_t partition_bytes =
      memory_.RegionFor(*op.tensor, rank_, core_).partition_bytes;
  *layout = {f.rows,
             f.cols,
             f.FirstByte(partition_bytes),
             f.RowStride(partition_bytes),
             f.flat,
             f.flat_stride};
  return true;
}

absl::Status ProgramState::CheckRowsReadable(const ops::OperandInfo& op,
                                             const Region& region,
                                             int64_t first, int64_t stride) {
  const ops::OperandFacts& f = op.facts;
  const proto::Tensor& t = *op.tensor;
  const int64_t bytes = f.cols * f.esize;
  const bool race_checked = RaceChecked(t);
  for (int64_t r = 0; r < f.rows; ++r) {
    const int64_t byte = first + r * stride;
    // A row initialised in full passes CheckInitialized's first test;
    // only a row that does not is walked for the element to name.
    if (region.shadow.All(byte, bytes, kInitialized) && !race_checked) {
      continue;
    }
    const Run run{r * f.cols, f.cols, f.flat + r * f.flat_stride,
                  1,          byte,   f.esize};
    NKI_RETURN_IF_ERROR(CheckInitialized(t, region, run, f.esize));
    NKI_RETURN_IF_ERROR(CheckRace(t, run, /*write=*/false));
  }
  return absl::OkStatus();
}

absl::StatusOr<ops::ExecContext::Rows> ProgramState::ReadRows(int i) {
  const ops::OperandInfo& op = view_.operand(i);
  // Bound from a decoded stream or by BindInstrView: the facts are known.
  const ops::OperandFacts& f = op.facts;
  if (any_skipped_ || !f.as_rows) return Rows{};
  Region& region = memory_.RegionFor(*op.tensor, rank_, core_);
  const int64_t first = f.FirstByte(region.partition_bytes);
  const int64_t stride = f.RowStride(region.partition_bytes);
  NKI_RETURN_IF_ERROR(CheckRowsReadable(op, region, first, stride));
  return Rows{&region.data[first], f.rows, f.cols, stride};
}

absl::Status ProgramState::ElementwiseInPlace(int dst,
                                              std::initializer_list<int> srcs,
                                              ElementwiseRows* rows) {
  *rows = {};
  if (any_skipped_ || static_cast<int>(srcs.size()) > kMaxElementwiseSources) {
    return absl::OkStatus();
  }
  // Where each operand's first float lies and its row stride in floats,
  // when it lies in float32 rows aligned to floats; decided for every
  // operand before anything is checked or marked.
  struct Placed {
    Region* region;
    int64_t first;
    int64_t stride;
  };
  auto place = [&](const ops::OperandInfo& op, Placed* p) {
    const ops::OperandFacts& f = op.facts;
    if (!f.as_rows || op.tensor->dtype() != proto::FLOAT32) return false;
    p->region = &memory_.RegionFor(*op.tensor, rank_, core_);
    p->first = f.FirstByte(p->region->partition_bytes);
    p->stride = f.RowStride(p->region->partition_bytes);
    return p->first % 4 == 0 && p->stride % 4 == 0;
  };
  const ops::OperandInfo& d = view_.operand(dst);
  Placed to;
  if (!d.facts.on_chip || !place(d, &to)) return absl::OkStatus();
  Placed from[kMaxElementwiseSources];
  int n = 0;
  for (const int s : srcs) {
    const ops::OperandInfo& op = view_.operand(s);
    if (op.facts.rows != d.facts.rows || op.facts.cols != d.facts.cols ||
        !place(op, &from[n]) || !ops::InPlaceSafe(d, op)) {
      return absl::OkStatus();
    }
    ++n;
  }
  // Checked in order, as the op's reads would be, then marked written.
  n = 0;
  for (const int s : srcs) {
    const Placed& p = from[n++];
    NKI_RETURN_IF_ERROR(
        CheckRowsReadable(view_.operand(s), *p.region, p.first, p.stride));
  }
  for (int64_t r = 0; r < d.facts.rows; ++r) {
    to.region->shadow.Set(to.first + r * to.stride, d.facts.cols * 4,
                          kInitialized);
  }
  for (int k = 0; k < n; ++k) {
    rows->src[k] =
        reinterpret_cast<const float*>(&from[k].region->data[from[k].first]);
    rows->src_stride[k] = from[k].stride / 4;
  }
  rows->dst = {reinterpret_cast<float*>(&to.region->data[to.first]),
               d.facts.rows, d.facts.cols, to.stride / 4};
  return absl::OkStatus();
}

ops::ExecContext::MatmulRows ProgramState::MatmulInPlace(int i,
                                                         bool accumulate) {
  RowLayout layout;
  const proto::Tensor& t = *view_.operand(i).tensor;
  if (t.dtype() != proto::FLOAT32 || !LayoutAsRows(i, &layout) ||
      layout.byte % 4 != 0 || layout.stride % 4 != 0) {
    return {};
  }
  Region& region = memory_.RegionFor(t, rank_, core_);
  const int64_t bytes = layout.cols * 4;
  if (accumulate) {
    for (int64_t r = 0; r < layout.rows; ++r) {
      if (!region.shadow.All(layout.byte + r * layout.stride, bytes,
                             kMatmulGroup)) {
        return {};
      }
    }
  }
  for (int64_t r = 0; r < layout.rows; ++r) {
    region.shadow.Set(layout.byte + r * layout.stride, bytes,
                      kInitialized | kMatmulGroup);
  }
  return {reinterpret_cast<float*>(&region.data[layout.byte]), layout.rows,
          layout.cols, layout.stride / 4};
}

ops::ExecContext::MutableRows ProgramState::WriteFloatInPlace(int i) {
  const ops::OperandInfo& op = view_.operand(i);
  const ops::OperandFacts& f = op.facts;
  if (any_skipped_ || !f.as_rows || !f.on_chip ||
      op.tensor->dtype() != proto::FLOAT32) {
    return {};
  }
  Region& region = memory_.RegionFor(*op.tensor, rank_, core_);
  const int64_t first = f.FirstByte(region.partition_bytes);
  const int64_t stride = f.RowStride(region.partition_bytes);
  if (first % 4 != 0 || stride % 4 != 0) return {};
  for (int64_t r = 0; r < f.rows; ++r) {
    region.shadow.Set(first + r * stride, f.cols * 4, kInitialized);
  }
  return {reinterpret_cast<float*>(&region.data[first]), f.rows, f.cols,
          stride / 4};
}

}  // namespace nkigraph::interp
