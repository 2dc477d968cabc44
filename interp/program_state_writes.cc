// ProgramState's checked writes (ExecContext::WriteFloat, WriteInt,
// WriteRaw, WriteRawRows, MatmulWrite): each value converted to its
// tensor's dtype and stored, checked for races, its bytes marked
// initialised (and for a matmul, in an open accumulation group).
#include <algorithm>
#include <cstring>

#include "interp/program_state.h"
#include "interp/program_state_walk.h"
#include "interp/strided_copy.h"
#include "ops/access_pattern.h"
#include "util/dtype.h"
#include "util/status_macros.h"

namespace nkigraph::interp {

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
          StoreFromInt(dtype, values[position + k], dst + k * esize, fp8_max_);
        }
      },
      [&](proto::DType dtype, uint8_t* dst, int64_t position) {
        StoreFromInt(dtype, values[position], dst, fp8_max_);
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

void ProgramState::MarkWritten(int i) {
  Region& region = memory_.RegionFor(*view_.operand(i).tensor, rank_, core_);
  ForEachSortedRun(i, [&](int64_t byte, int64_t length) {
    region.shadow.Set(byte, length, kInitialized);
  });
}

}  // namespace nkigraph::interp
