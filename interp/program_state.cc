#include "interp/program_state.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <optional>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "ops/access_pattern.h"
#include "ops/dynamic_bounds.h"
#include "ops/op_util.h"
#include "util/diagnostic.h"
#include "util/dtype.h"
#include "util/status_macros.h"

namespace nkigraph::interp {
namespace {

int64_t LoadInt(proto::DType dtype, const uint8_t* src) {
  switch (dtype) {
    case proto::INT32: {
      int32_t v;
      std::memcpy(&v, src, 4);
      return v;
    }
    case proto::UINT32: {
      uint32_t v;
      std::memcpy(&v, src, 4);
      return v;
    }
    case proto::INT16: {
      int16_t v;
      std::memcpy(&v, src, 2);
      return v;
    }
    case proto::UINT16: {
      uint16_t v;
      std::memcpy(&v, src, 2);
      return v;
    }
    case proto::INT8:
      return static_cast<int8_t>(*src);
    case proto::UINT8:
      return *src;
    default: {
      const float f = LoadAsFloat(dtype, src);
      return std::isfinite(f) ? static_cast<int64_t>(std::nearbyint(f)) : 0;
    }
  }
}

template <typename T>
void StoreClamped(int64_t v, uint8_t* dst) {
  const int64_t lo = std::numeric_limits<T>::min();
  const int64_t hi = static_cast<int64_t>(std::numeric_limits<T>::max());
  const T t = static_cast<T>(v < lo ? lo : (v > hi ? hi : v));
  std::memcpy(dst, &t, sizeof(T));
}

void StoreInt(proto::DType dtype, int64_t v, uint8_t* dst, float fp8_max) {
  switch (dtype) {
    case proto::INT32:
      return StoreClamped<int32_t>(v, dst);
    case proto::UINT32:
      return StoreClamped<uint32_t>(v, dst);
    case proto::INT16:
      return StoreClamped<int16_t>(v, dst);
    case proto::UINT16:
      return StoreClamped<uint16_t>(v, dst);
    case proto::INT8:
      return StoreClamped<int8_t>(v, dst);
    case proto::UINT8:
      return StoreClamped<uint8_t>(v, dst);
    default:
      StoreFromFloat(dtype, static_cast<float>(v), dst, fp8_max);
  }
}

// Copies `count` elements of `esize` bytes from src (every src_stride
// bytes) to dst (every dst_stride bytes): fixed-size moves, not a memcpy
// call per element.
template <typename T>
void CopyStridedAs(uint8_t* dst, int64_t dst_stride, const uint8_t* src,
                   int64_t src_stride, int64_t count) {
  for (int64_t k = 0; k < count; ++k) {
    T v;
    std::memcpy(&v, src + k * src_stride, sizeof(T));
    std::memcpy(dst + k * dst_stride, &v, sizeof(T));
  }
}

void CopyStrided(uint8_t* dst, int64_t dst_stride, const uint8_t* src,
                 int64_t src_stride, int64_t count, int64_t esize) {
  switch (esize) {
    case 4:
      return CopyStridedAs<uint32_t>(dst, dst_stride, src, src_stride, count);
    case 2:
      return CopyStridedAs<uint16_t>(dst, dst_stride, src, src_stride, count);
    case 1:
      return CopyStridedAs<uint8_t>(dst, dst_stride, src, src_stride, count);
    default:
      for (int64_t k = 0; k < count; ++k) {
        std::memcpy(dst + k * dst_stride, src + k * src_stride, esize);
      }
  }
}

std::string ElementString(const proto::Tensor& t, int64_t flat) {
  std::vector<int64_t> index(t.shape_size());
  for (int d = t.shape_size() - 1; d >= 0; --d) {
    index[d] = flat % t.shape(d);
    flat /= t.shape(d);
  }
  return absl::StrCat("[", absl::StrJoin(index, ", "), "]");
}

// An error executing the bound instruction that is about tensor `t`; the
// scheduler adds where it happened.
absl::Status TensorError(DiagnosticKind kind, const proto::Tensor& t,
                         std::string message) {
  return DiagnosticError(
      absl::StatusCode::kAborted,
      MakeTensorDiagnostic(kind, t.id(), t.name(), std::move(message)));
}

}  // namespace

ProgramState::ProgramState(const proto::Graph& graph,
                           const ops::DecodedStream& decoded,
                           DeviceMemory& memory, RaceDetector& race,
                           const std::vector<RaceScope>& race_scopes, int rank,
                           int core)
    : graph_(graph),
      stream_(&graph.streams(core)),
      decoded_(decoded),
      memory_(memory),
      race_(race),
      race_scopes_(race_scopes),
      rank_(rank),
      core_(core),
      fp8_max_(ops::ProfileFor(graph.world().target()).fp8_e4m3_max) {}

absl::Status ProgramState::BindOther(const proto::Instruction& instr) {
  return ops::BindInstrView(instr, graph_.tensors(), graph_.world(), &view_);
}

absl::Status ProgramState::AccessError(absl::string_view what,
                                       const proto::Tensor& t,
                                       int64_t flat) const {
  return TensorError(
      DiagnosticKind::kDevice, t,
      absl::StrCat(what, " ", ops::SpaceName(t.space()), " tensor '", t.name(),
                   "' element ", ElementString(t, flat)));
}

void ProgramState::MarkSkipped(int64_t position, int64_t count) {
  const int64_t needed = position + count;
  if (static_cast<int64_t>(skipped_.size()) < needed) skipped_.resize(needed);
  if (!any_skipped_) std::fill(skipped_.begin(), skipped_.end(), 0);
  any_skipped_ = true;
  std::fill(skipped_.begin() + position, skipped_.begin() + needed, 1);
}

absl::StatusOr<int64_t> ProgramState::ReadIndex(uint32_t tensor_id,
                                                int64_t flat) {
  const proto::Tensor& t = graph_.tensors(static_cast<int>(tensor_id) - 1);
  Region& region = memory_.RegionFor(t, rank_, core_);
  const int64_t byte =
      DeviceMemory::ByteOffset(t, flat, region.partition_bytes);
  const int64_t esize = DTypeSize(t.dtype());
  if (!region.shadow.All(byte, esize, kInitialized)) {
    return AccessError("dynamic offset reads never-written", t, flat);
  }
  const Run run{0, 1, flat, 1, byte, esize};
  NKI_RETURN_IF_ERROR(CheckRace(t, run, /*write=*/false));
  return LoadInt(t.dtype(), &region.data[byte]);
}

absl::Status ProgramState::CheckInitialized(const proto::Tensor& t,
                                            const Region& region,
                                            const Run& run, int64_t esize) {
  if (skip_init_checks_) return absl::OkStatus();
  if (!any_skipped_) {
    // The bytes from the run's first to its last element: when all of them
    // are initialised so is every element (a stride-1 run is exactly its
    // hull). Not for runs spread thinly over a large span, where looking
    // at each element is cheaper.
    const int64_t span = std::abs(run.byte_stride) * (run.count - 1);
    if (span <= 4 * run.count * esize) {
      const int64_t lo = run.byte_stride < 0 ? run.byte - span : run.byte;
      if (region.shadow.All(lo, span + esize, kInitialized)) {
        return absl::OkStatus();
      }
    }
  }
  for (int64_t k = 0; k < run.count; ++k) {
    if (Skipped(run.position + k)) continue;
    if (!region.shadow.All(run.byte + k * run.byte_stride, esize,
                           kInitialized)) {
      return AccessError("reads never-written", t,
                         run.flat + k * run.flat_stride);
    }
  }
  return absl::OkStatus();
}

absl::Status ProgramState::CheckRace(const proto::Tensor& t, const Run& run,
                                     bool write) {
  if (!RaceChecked(t)) return absl::OkStatus();
  switch (race_scopes_[t.id() - 1]) {
    case RaceScope::kTracked:
      break;
    case RaceScope::kReadOnly:
      // The static pass trusted the op's operand roles; a write here would
      // mean reads of this tensor went unrecorded.
      if (write) {
        return absl::InternalError(
            absl::StrCat("writes shared_hbm tensor '", t.name(),
                         "' through an operand whose role is read-only"));
      }
      return absl::OkStatus();
    default:
      return absl::OkStatus();
  }
  const int64_t esize = DTypeSize(t.dtype());
  const bool contiguous = run.byte_stride == esize;
  const int64_t pieces = contiguous ? 1 : run.count;
  const int64_t length = contiguous ? run.count * esize : esize;
  const uint32_t instr = view_.instr().id();
  // One call for the run's pieces (a strided run's elements): one lock.
  int64_t piece = 0;
  if (std::optional<RaceDetector::Conflict> conflict =
          race_.AccessStrided(rank_, core_, run.byte, pieces, run.byte_stride,
                              length, write, instr, &piece)) {
    int64_t other_pos = -1;
    const proto::Stream& other = graph_.streams(conflict->other_core);
    for (int p = 0; p < other.instructions_size(); ++p) {
      if (other.instructions(p).id() == conflict->other_instr) other_pos = p;
    }
    std::string other_desc =
        other_pos >= 0 ? absl::StrCat("instruction #", conflict->other_instr)
                       : "an earlier instruction";
    if (other_pos >= 0) {
      const proto::Instruction& o = other.instructions(other_pos);
      if (o.file() < static_cast<uint32_t>(graph_.files_size())) {
        absl::StrAppend(&other_desc, " at ", graph_.files(o.file()), ":",
                        o.line());
      }
    }
    // The element holding the lowest racing byte.
    const int64_t element =
        contiguous ? (conflict->offset - run.byte) / esize : piece;
    return TensorError(
        DiagnosticKind::kRace, t,
        absl::StrCat("data race on shared_hbm tensor '", t.name(), "' element ",
                     ElementString(t, run.flat + element * run.flat_stride),
                     ": this ", write ? "write" : "read", " on core ", core_,
                     " and a ", conflict->other_was_write ? "write" : "read",
                     " on core ", conflict->other_core, " by ", other_desc,
                     " are not ordered by any core_barrier, sendrecv or "
                     "collective"));
  }
  NKI_RETURN_IF_ERROR(race_.ChargeGrowth(rank_, core_));
  return absl::OkStatus();
}

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

void ProgramState::RecordReach(int i, int64_t lo, int64_t hi) {
  if (resolved_ == nullptr) return;
  const auto [it, inserted] =
      resolved_->try_emplace({current().id(), i}, graph::ResolvedRange{lo, hi});
  if (!inserted) {
    it->second.lo = std::min(it->second.lo, lo);
    it->second.hi = std::max(it->second.hi, hi);
  }
}

template <typename RunFn>
absl::Status ProgramState::ReadWalk(int i, RunFn&& fn) {
  const int64_t esize = view_.operand(i).facts.esize;
  skip_init_checks_ = StridedAndInitialized(i);
  const absl::Status walked =
      Walk(i,
           [&](const proto::Tensor& t, Region& region,
               const Run& run) -> absl::Status {
             NKI_RETURN_IF_ERROR(CheckInitialized(t, region, run, esize));
             NKI_RETURN_IF_ERROR(CheckRace(t, run, /*write=*/false));
             return fn(t, region, run);
           });
  skip_init_checks_ = false;
  return walked;
}

absl::StatusOr<absl::Span<const uint8_t>> ProgramState::ReadRaw(int i) {
  const ops::OperandInfo& op = view_.operand(i);
  const int64_t esize = op.facts.esize;
  std::vector<uint8_t>& out = raws_[i];
  out.assign(op.elements() * esize, 0);
  NKI_RETURN_IF_ERROR(
      ReadWalk(i,
               [&](const proto::Tensor&, Region& region,
                   const Run& run) -> absl::Status {
                 uint8_t* dst = &out[run.position * esize];
                 if (run.byte_stride == esize) {
                   std::memcpy(dst, &region.data[run.byte], run.count * esize);
                 } else {
                   CopyStrided(dst, esize, &region.data[run.byte],
                               run.byte_stride, run.count, esize);
                 }
                 return absl::OkStatus();
               }));
  if (any_skipped_) {
    for (int64_t p = 0; p < op.elements(); ++p) {
      if (Skipped(p)) std::memset(&out[p * esize], 0, esize);
    }
  }
  return absl::MakeConstSpan(out);
}

absl::StatusOr<absl::Span<const float>> ProgramState::ReadFloat(int i) {
  const ops::OperandInfo& op = view_.operand(i);
  const int64_t esize = op.facts.esize;
  std::vector<float>& out = floats_[i];
  out.resize(op.elements());
  NKI_RETURN_IF_ERROR(ReadWalk(
      i,
      [&](const proto::Tensor& t, Region& region,
          const Run& run) -> absl::Status {
        float* dst = &out[run.position];
        if (run.byte_stride == esize) {
          LoadRowAsFloat(t.dtype(), &region.data[run.byte], run.count, dst);
        } else {
          for (int64_t k = 0; k < run.count; ++k) {
            dst[k] = LoadAsFloat(t.dtype(),
                                 &region.data[run.byte + k * run.byte_stride]);
          }
        }
        return absl::OkStatus();
      }));
  if (any_skipped_) {
    for (int64_t p = 0; p < op.elements(); ++p) {
      if (Skipped(p)) out[p] = 0.0f;
    }
  }
  return absl::MakeConstSpan(out);
}

absl::StatusOr<absl::Span<const int64_t>> ProgramState::ReadInt(int i) {
  const ops::OperandInfo& op = view_.operand(i);
  std::vector<int64_t>& out = ints_[i];
  out.assign(op.elements(), 0);
  NKI_RETURN_IF_ERROR(ReadWalk(
      i,
      [&](const proto::Tensor& t, Region& region,
          const Run& run) -> absl::Status {
        for (int64_t k = 0; k < run.count; ++k) {
          out[run.position + k] =
              LoadInt(t.dtype(), &region.data[run.byte + k * run.byte_stride]);
        }
        return absl::OkStatus();
      }));
  if (any_skipped_) {
    for (int64_t p = 0; p < op.elements(); ++p) {
      if (Skipped(p)) out[p] = 0;
    }
  }
  return absl::MakeConstSpan(out);
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

bool ProgramState::StridedAndInitialized(int i) const {
  const ops::OperandInfo& op = view_.operand(i);
  const proto::AccessPattern& ap = *op.ap;
  const int nd = ops::NumDims(ap);
  if (any_skipped_ || nd == 0 || ops::Stride(ap, nd - 1) == 1 ||
      ops::Count(ap, nd - 1) == 1) {
    return false;
  }
  const Region& region = memory_.RegionFor(*op.tensor, rank_, core_);
  bool all = true;
  const bool walked = ForEachSortedRun(i, [&](int64_t byte, int64_t length) {
    all = all && region.shadow.All(byte, length, kInitialized);
  });
  return walked && all;
}

bool ProgramState::WriteCannotFail(int i) const {
  const ops::OperandInfo& op = view_.operand(i);
  if (op.ap->dynamic().kind() != proto::DynamicOffset::KIND_UNSPECIFIED) {
    return false;
  }
  const proto::Tensor& t = *op.tensor;
  if (!race_.enabled() || t.space() != proto::SHARED_HBM) return true;
  const RaceScope scope = race_scopes_[t.id() - 1];
  return scope == RaceScope::kNone || scope == RaceScope::kOneCore;
}

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

template <typename StoreRun, typename StoreOne>
absl::Status ProgramState::WriteWalk(int i, StoreRun&& store_run,
                                     StoreOne&& store_one) {
  // A strided operand whose write cannot fail part way is marked after the
  // walk, run by run in stride order, instead of element by element.
  const ops::OperandInfo& op = view_.operand(i);
  const int nd = ops::NumDims(*op.ap);
  const bool strided = nd > 0 && ops::Stride(*op.ap, nd - 1) != 1 &&
                       ops::Count(*op.ap, nd - 1) > 1;
  const bool defer = strided && !any_skipped_ && WriteCannotFail(i);
  NKI_RETURN_IF_ERROR(Walk(
      i,
      [&](const proto::Tensor& t, Region& region,
          const Run& run) -> absl::Status {
        NKI_RETURN_IF_ERROR(CheckRace(t, run, /*write=*/true));
        const int64_t esize = op.facts.esize;
        if (run.byte_stride == esize && !any_skipped_) {
          store_run(t.dtype(), &region.data[run.byte], run.position, run.count);
          region.shadow.Set(run.byte, run.count * esize, kInitialized);
          return absl::OkStatus();
        }
        for (int64_t k = 0; k < run.count; ++k) {
          const int64_t position = run.position + k;
          if (Skipped(position)) continue;
          const int64_t byte = run.byte + k * run.byte_stride;
          store_one(t.dtype(), &region.data[byte], position);
          if (!defer) region.shadow.Set(byte, esize, kInitialized);
        }
        return absl::OkStatus();
      }));
  if (defer) {
    Region& region = memory_.RegionFor(*op.tensor, rank_, core_);
    ForEachSortedRun(i, [&](int64_t byte, int64_t length) {
      region.shadow.Set(byte, length, kInitialized);
    });
  }
  return absl::OkStatus();
}

absl::Status ProgramState::WriteFloat(int i, absl::Span<const float> values) {
  if (static_cast<int64_t>(values.size()) != view_.operand(i).elements()) {
    return absl::InternalError("WriteFloat: wrong element count");
  }
  return WriteWalk(
      i,
      [&](proto::DType dtype, uint8_t* dst, int64_t position, int64_t n) {
        StoreRowFromFloat(dtype, &values[position], n, dst, fp8_max_);
      },
      [&](proto::DType dtype, uint8_t* dst, int64_t position) {
        StoreFromFloat(dtype, values[position], dst, fp8_max_);
      });
}

absl::Status ProgramState::WriteInt(int i, absl::Span<const int64_t> values) {
  if (static_cast<int64_t>(values.size()) != view_.operand(i).elements()) {
    return absl::InternalError("WriteInt: wrong element count");
  }
  return WriteWalk(
      i,
      [&](proto::DType dtype, uint8_t* dst, int64_t position, int64_t n) {
        const int64_t esize = DTypeSize(dtype);
        for (int64_t k = 0; k < n; ++k) {
          StoreInt(dtype, values[position + k], dst + k * esize, fp8_max_);
        }
      },
      [&](proto::DType dtype, uint8_t* dst, int64_t position) {
        StoreInt(dtype, values[position], dst, fp8_max_);
      });
}

absl::Status ProgramState::WriteRaw(int i, absl::Span<const uint8_t> bytes) {
  const int64_t esize = view_.operand(i).facts.esize;
  if (static_cast<int64_t>(bytes.size()) !=
      view_.operand(i).elements() * esize) {
    return absl::InternalError("WriteRaw: wrong byte count");
  }
  return WriteWalk(
      i,
      [&](proto::DType, uint8_t* dst, int64_t position, int64_t n) {
        std::memcpy(dst, &bytes[position * esize], n * esize);
      },
      [&](proto::DType, uint8_t* dst, int64_t position) {
        CopyStrided(dst, esize, &bytes[position * esize], esize, 1, esize);
      });
}

absl::Status ProgramState::WriteRawRows(int i, const Rows& rows) {
  const int64_t esize = view_.operand(i).facts.esize;
  if (rows.rows * rows.cols != view_.operand(i).elements()) {
    return absl::InternalError("WriteRawRows: wrong element count");
  }
  // Where source element `position` is; walked in order, so kept as a
  // cursor rather than divided out per element.
  int64_t at = 0, row = 0, col = 0;
  auto seek = [&](int64_t position) -> const uint8_t* {
    if (position != at) {
      row = position / rows.cols;
      col = position % rows.cols;
      at = position;
    }
    return rows.data + row * rows.stride + col * esize;
  };
  auto advance = [&](int64_t n) {
    at += n;
    col += n;
    while (col >= rows.cols) {
      col -= rows.cols;
      ++row;
    }
  };
  return WriteWalk(
      i,
      [&](proto::DType, uint8_t* dst, int64_t position, int64_t n) {
        // A destination run may span several source rows.
        while (n > 0) {
          const uint8_t* src = seek(position);
          const int64_t take = std::min(n, rows.cols - col);
          std::memcpy(dst, src, take * esize);
          advance(take);
          dst += take * esize;
          position += take;
          n -= take;
        }
      },
      [&](proto::DType, uint8_t* dst, int64_t position) {
        CopyStrided(dst, esize, seek(position), esize, 1, esize);
        advance(1);
      });
}

absl::Status ProgramState::MatmulWrite(int i, absl::Span<const float> values,
                                       bool accumulate) {
  if (static_cast<int64_t>(values.size()) != view_.operand(i).elements()) {
    return absl::InternalError("MatmulWrite: wrong element count");
  }
  return Walk(
      i,
      [&](const proto::Tensor& t, Region& region,
          const Run& run) -> absl::Status {
        const int64_t esize = DTypeSize(t.dtype());
        // Every element of the run must belong to an open accumulation group.
        const bool contiguous = run.byte_stride == esize;
        if (accumulate &&
            !(contiguous &&
              region.shadow.All(run.byte, run.count * esize, kMatmulGroup))) {
          for (int64_t k = 0; k < run.count; ++k) {
            if (!(region.shadow.Get(run.byte + k * run.byte_stride) &
                  kMatmulGroup)) {
              return AccessError(
                  "accumulates (accumulate=true) into psum that no matmul "
                  "started:",
                  t, run.flat + k * run.flat_stride);
            }
          }
        }
        const float* src = &values[run.position];
        if (t.dtype() == proto::FLOAT32 && run.byte_stride == 4) {
          // The common case: a contiguous fp32 PSUM row.
          float* dst = reinterpret_cast<float*>(&region.data[run.byte]);
          if (accumulate) {
            for (int64_t k = 0; k < run.count; ++k) dst[k] += src[k];
          } else {
            std::memcpy(dst, src, run.count * 4);
          }
          region.shadow.Set(run.byte, run.count * 4,
                            kInitialized | kMatmulGroup);
          return absl::OkStatus();
        }
        for (int64_t k = 0; k < run.count; ++k) {
          const int64_t byte = run.byte + k * run.byte_stride;
          uint8_t* dst = &region.data[byte];
          float value = src[k];
          if (accumulate) value += LoadAsFloat(t.dtype(), dst);
          StoreFromFloat(t.dtype(), value, dst, fp8_max_);
          region.shadow.Set(byte, esize, kInitialized | kMatmulGroup);
        }
        return absl::OkStatus();
      });
}

absl::Span<float> ProgramState::ReduceRegisters(ops::Engine engine) {
  return absl::MakeSpan(reduce_registers_[static_cast<int>(engine)]);
}

std::vector<float>& ProgramState::ScratchFloat(int slot) {
  return scratch_float_[slot];
}

std::vector<int64_t>& ProgramState::ScratchInt(int slot) {
  return scratch_int_[slot];
}

absl::Status ProgramState::CheckReadable(int i) {
  return ReadWalk(i, [](const proto::Tensor&, Region&, const Run&) {
    return absl::OkStatus();
  });
}

void ProgramState::MarkWritten(int i) {
  Region& region = memory_.RegionFor(*view_.operand(i).tensor, rank_, core_);
  ForEachSortedRun(i, [&](int64_t byte, int64_t length) {
    region.shadow.Set(byte, length, kInitialized);
  });
}

}  // namespace nkigraph::interp
