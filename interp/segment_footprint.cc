#include "interp/segment_footprint.h"

#include <algorithm>

#include "ops/access_pattern.h"
#include "ops/op_def.h"
#include "util/dtype.h"

namespace nkigraph::interp {
namespace {

using Blocks = std::vector<std::pair<int64_t, int64_t>>;

bool InHbm(const proto::Tensor& t) {
  return t.space() == proto::HBM || t.space() == proto::SHARED_HBM;
}

int64_t TensorBytes(const proto::Tensor& t) {
  int64_t bytes = DTypeSize(t.dtype());
  for (int64_t d : t.shape()) bytes *= d;
  return bytes;
}

// The bytes [lo, hi) as blocks.
void AddBytes(int64_t lo, int64_t hi, Blocks* out) {
  if (hi <= lo) return;
  out->emplace_back(lo / kFootprintBlockBytes,
                    (hi + kFootprintBlockBytes - 1) / kFootprintBlockBytes);
}

void AddWholeTensor(const proto::Tensor& t, Blocks* out) {
  AddBytes(static_cast<int64_t>(t.address()),
           static_cast<int64_t>(t.address()) + TensorBytes(t), out);
}

// The bytes an operand's pattern can reach, as one bounding range.
void AddOperand(const proto::Tensor& t, const proto::AccessPattern& ap,
                Blocks* out) {
  if (ap.dynamic().kind() != proto::DynamicOffset::KIND_UNSPECIFIED ||
      ap.view_dtype() != proto::DTYPE_UNSPECIFIED) {
    AddWholeTensor(t, out);
    return;
  }
  int64_t lo = ap.offset(), hi = ap.offset();
  for (int d = 0; d < ops::NumDims(ap); ++d) {
    const int64_t reach = ops::Stride(ap, d) * (ops::Count(ap, d) - 1);
    (reach < 0 ? lo : hi) += reach;
  }
  const int64_t esize = DTypeSize(t.dtype());
  AddBytes(static_cast<int64_t>(t.address()) + lo * esize,
           static_cast<int64_t>(t.address()) + (hi + 1) * esize, out);
}

}  // namespace

SegmentFootprints::SegmentFootprints(const proto::Graph& graph) {
  for (const proto::Stream& stream : graph.streams()) {
    Stream& s = streams_.emplace_back();
    s.touches.resize(stream.instructions_size());
    s.segment_of.assign(stream.instructions_size(), -1);
    bool open = false;
    for (int pc = 0; pc < stream.instructions_size(); ++pc) {
      const proto::Instruction& instr = stream.instructions(pc);
      const ops::OpDef* def = ops::FindOp(instr.opcode());
      if (def == nullptr || def->sync != ops::SyncKind::kNone) {
        open = false;
        continue;
      }
      if (!open) s.segments.emplace_back();
      open = true;
      s.segment_of[pc] = static_cast<int>(s.segments.size()) - 1;
      Touches& f = s.touches[pc];
      for (int i = 0; i < instr.operands_size(); ++i) {
        const proto::AccessPattern& ap = instr.operands(i);
        if (ap.tensor_id() != 0) {
          const proto::Tensor& t =
              graph.tensors(static_cast<int>(ap.tensor_id()) - 1);
          if (InHbm(t)) {
            const ops::OperandRole* role = ops::OperandRoleOf(*def, i);
            const ops::Access access =
                role != nullptr ? role->access : ops::Access::kReadWrite;
            if (access != ops::Access::kWrite) AddOperand(t, ap, &f.reads);
            if (access != ops::Access::kRead) AddOperand(t, ap, &f.writes);
          }
        }
        if (ap.dynamic().kind() != proto::DynamicOffset::KIND_UNSPECIFIED) {
          const proto::Tensor& index =
              graph.tensors(static_cast<int>(ap.dynamic().tensor_id()) - 1);
          if (InHbm(index)) AddWholeTensor(index, &f.reads);
        }
      }
      // Positions only grow, so the last assignment is the latest use.
      IntervalMap<LastUse>& last = s.segments.back();
      for (const auto& [first, end] : f.reads) {
        last.Update(first, end, [&](LastUse& u) { u.access = pc; });
      }
      for (const auto& [first, end] : f.writes) {
        last.Update(first, end, [&](LastUse& u) { u.access = u.write = pc; });
      }
    }
  }
}

int SegmentFootprints::LastConflict(int a, int pc_a, int b, int pc_b) const {
  const Stream& sa = streams_[a];
  if (pc_a < 0 || pc_a >= static_cast<int>(sa.segment_of.size()) ||
      sa.segment_of[pc_a] < 0) {
    return -1;
  }
  const IntervalMap<LastUse>& last = sa.segments[sa.segment_of[pc_a]];
  const Touches& mine = streams_[b].touches[pc_b];
  int wait = -1;
  for (const auto& [first, end] : mine.reads) {
    last.Visit(first, end, [&](int64_t, int64_t, const LastUse& u) {
      wait = std::max(wait, u.write);
      return false;
    });
  }
  for (const auto& [first, end] : mine.writes) {
    last.Visit(first, end, [&](int64_t, int64_t, const LastUse& u) {
      wait = std::max(wait, u.access);
      return false;
    });
  }
  return wait;
}

}  // namespace nkigraph::interp
