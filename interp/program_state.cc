// ProgramState's own state and the checks every operand access makes:
// construction and binding, dynamic-offset indices, skipped positions,
// reach records, initialisation and race checks, and the errors they
// report. Reading operands is in program_state_reads.cc, writing them in
// program_state_writes.cc, the in-place fast paths in
// program_state_in_place.cc and program_state_blocks.cc.
#include "interp/program_state.h"

#include <algorithm>
#include <cstdlib>
#include <optional>
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "interp/program_state_walk.h"
#include "ops/op_util.h"
#include "util/diagnostic.h"
#include "util/dtype.h"
#include "util/status_macros.h"

namespace nkigraph::interp {
namespace {

std::string ElementString(const proto::Tensor& t, int64_t flat) {
  std::vector<int64_t> index(t.shape_size());
  for (int d = t.shape_size() - 1; d >= 0; --d) {
    index[d] = flat % t.shape(d);
    flat /= t.shape(d);
  }
  return absl::StrCat("[", absl::StrJoin(index, ", "), "]");
}

}  // namespace

absl::Status TensorError(DiagnosticKind kind, const proto::Tensor& t,
                         std::string message) {
  return DiagnosticError(
      absl::StatusCode::kAborted,
      MakeTensorDiagnostic(kind, t.id(), t.name(), std::move(message)));
}

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
  return LoadAsInt(t.dtype(), &region.data[byte]);
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

absl::Span<float> ProgramState::ReduceRegisters(ops::Engine engine) {
  return absl::MakeSpan(reduce_registers_[static_cast<int>(engine)]);
}

std::vector<float>& ProgramState::ScratchFloat(int slot) {
  return scratch_float_[slot];
}

std::vector<int64_t>& ProgramState::ScratchInt(int slot) {
  return scratch_int_[slot];
}

}  // namespace nkigraph::interp
