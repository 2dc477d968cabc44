// ProgramState's checked reads (ExecContext::ReadFloat, ReadInt, ReadRaw):
// every element read is checked initialised and for races before its
// value is handed to the op, converted from its dtype, in a buffer in
// operand order. Operands read where they lie are in
// program_state_in_place.cc and program_state_blocks.cc.
#include <cstring>

#include "interp/program_state.h"
#include "interp/program_state_walk.h"
#include "interp/strided_copy.h"
#include "ops/access_pattern.h"
#include "util/dtype.h"
#include "util/status_macros.h"

namespace nkigraph::interp {

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
  NKI_RETURN_IF_ERROR(
      ReadWalk(i,
               [&](const proto::Tensor& t, Region& region,
                   const Run& run) -> absl::Status {
                 for (int64_t k = 0; k < run.count; ++k) {
                   out[run.position + k] = LoadAsInt(
                       t.dtype(), &region.data[run.byte + k * run.byte_stride]);
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

absl::Status ProgramState::CheckReadable(int i) {
  return ReadWalk(i, [](const proto::Tensor&, Region&, const Run&) {
    return absl::OkStatus();
  });
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

}  // namespace nkigraph::interp
