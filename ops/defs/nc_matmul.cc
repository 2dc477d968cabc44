// nc_matmul: dst[M, N] (+)= stationary[K, M]^T @ moving[K, N] on the tensor
// engine, SBUF inputs, fp32 accumulation in PSUM.
#include <cblas.h>

#include <algorithm>
#include <cstdint>
#include <vector>

#include "ops/exec_context.h"
#include "ops/op_def.h"
#include "ops/op_util.h"
#include "util/dtype.h"
#include "util/status_macros.h"

namespace nkigraph::ops {
namespace {

constexpr OperandRole kRoles[] = {{.name = "dst",
                                   .access = Access::kWrite,
                                   .spaces = kPsum,
                                   .also_read_if = "accumulate"},
                                  {"stationary", Access::kRead, kSbuf},
                                  {"moving", Access::kRead, kSbuf}};
constexpr int kDst = RoleOf(kRoles, "dst");
constexpr int kStationary = RoleOf(kRoles, "stationary");
constexpr int kMoving = RoleOf(kRoles, "moving");

constexpr AttrSpec kAttrs[] = {
    FlagSpec("accumulate", "add into the accumulation group a matmul opened"),
};
constexpr const AttrSpec& kAccumulate = AttrOf(kAttrs, "accumulate");

absl::Status Check(const InstrView& v) {
  const OperandInfo& dst = v.operand(kDst);
  const OperandInfo& st = v.operand(kStationary);
  const OperandInfo& mv = v.operand(kMoving);
  const DeviceProfile& profile = v.profile();
  const int64_t k = st.partitions();
  if (mv.partitions() != k) {
    return v.Error(
        "stationary and moving must share the contraction "
        "(partition) dim: ",
        k, " vs ", mv.partitions());
  }
  if (k > profile.num_partitions) {
    return v.Error("contraction dim ", k, " exceeds ", profile.num_partitions);
  }
  if (st.free_size() > profile.matmul_stationary_fmax) {
    return v.Error("stationary free size ", st.free_size(), " exceeds ",
                   profile.matmul_stationary_fmax);
  }
  if (mv.free_size() > profile.matmul_moving_fmax) {
    return v.Error("moving free size ", mv.free_size(), " exceeds ",
                   profile.matmul_moving_fmax, " on ", profile.name);
  }
  if (dst.partitions() != st.free_size() || dst.free_size() != mv.free_size()) {
    return v.Error("dst must be [", st.free_size(), ", ", mv.free_size(),
                   "] (stationary free x moving free), not [", dst.partitions(),
                   ", ", dst.free_size(), "]");
  }
  const bool bf16_dst_ok = profile.target == proto::TARGET_TRN3;
  if (dst.dtype() != proto::FLOAT32 &&
      !(bf16_dst_ok && dst.dtype() == proto::BFLOAT16)) {
    return v.Error("dst must be float32 in psum, not ", DTypeName(dst.dtype()));
  }
  if (!IsFloatDType(st.dtype()) || !IsFloatDType(mv.dtype())) {
    return v.Error("inputs must be floating point, not ", DTypeName(st.dtype()),
                   " and ", DTypeName(mv.dtype()));
  }
  if ((st.dtype() == proto::FLOAT32) != (mv.dtype() == proto::FLOAT32)) {
    return v.Error("if one input is float32 the other must be too (",
                   DTypeName(st.dtype()), " x ", DTypeName(mv.dtype()), ")");
  }
  NKI_RETURN_IF_ERROR(CheckPartitionStart(v, kStationary));
  NKI_RETURN_IF_ERROR(CheckPartitionStart(v, kMoving));
  return absl::OkStatus();
}

// A float32 matrix operand as BLAS takes it (other dtypes are widened to
// float32 in a copy).
struct Matrix {
  const float* data;
  int64_t ld;  // floats between rows
};

// `rows` (of `dtype` elements) as dense float32 rows in `dense`, widened
// where they are narrower. The next rows are prefetched while one is
// copied: rows a partition apart are tens of KiB apart, where the hardware
// prefetcher starts afresh on every row, and the moving tile of a tiled
// kernel (loaded once, used by many matmuls) is rarely still cached.
void GatherRows(const ExecContext::Rows& rows, proto::DType dtype,
                std::vector<float>& dense) {
  constexpr int64_t kRowsAhead = 4;
  constexpr int64_t kLine = 64;
  const int64_t row_bytes = rows.cols * DTypeSize(dtype);
  dense.resize(rows.rows * rows.cols);
  for (int64_t r = 0; r < rows.rows; ++r) {
    if (r + kRowsAhead < rows.rows) {
      const uint8_t* ahead = rows.data + (r + kRowsAhead) * rows.stride;
      for (int64_t b = 0; b < row_bytes; b += kLine) {
        __builtin_prefetch(ahead + b);
      }
    }
    LoadRowAsFloat(dtype, rows.data + r * rows.stride, rows.cols,
                   &dense[r * rows.cols]);
  }
}

// Float32 rows are read in place, except the moving operand's when they
// are a partition apart: those are first gathered into one dense buffer.
// BLAS packs that operand by walking down its columns, a cache line from
// every row in turn, and with rows tens of KiB apart each of those lines
// is a miss the prefetcher does not foresee (packing took half as long as
// the products themselves in a 2048^3 tiled matmul, and float32 ran slower
// than bfloat16, whose widened copy is dense); a gather row by row
// streams. The stationary tile, just loaded, is packed in place. Narrower
// dtypes are widened the same way, from where they lie when they lie in
// rows.
absl::StatusOr<Matrix> ReadMatrix(ExecContext& ctx, int i, bool moving) {
  const proto::DType dtype = ctx.view().operand(i).dtype();
  NKI_ASSIGN_OR_RETURN(const ExecContext::Rows rows, ctx.ReadRows(i));
  if (rows.data != nullptr && dtype == proto::FLOAT32 &&
      reinterpret_cast<uintptr_t>(rows.data) % alignof(float) == 0 &&
      rows.stride % 4 == 0) {
    if (rows.rows == 1 || rows.stride == rows.cols * 4) {
      return Matrix{reinterpret_cast<const float*>(rows.data), rows.cols};
    }
    if (!moving) {
      return Matrix{reinterpret_cast<const float*>(rows.data), rows.stride / 4};
    }
  }
  if (rows.data != nullptr) {
    std::vector<float>& dense = ctx.ScratchFloat(moving ? 1 : 2);
    GatherRows(rows, dtype, dense);
    return Matrix{dense.data(), rows.cols};
  }
  NKI_ASSIGN_OR_RETURN(absl::Span<const float> values, ctx.ReadFloat(i));
  return Matrix{values.data(), ctx.view().operand(i).free_size()};
}

absl::Status Execute(ExecContext& ctx) {
  const InstrView& v = ctx.view();
  const int64_t k = v.operand(kStationary).partitions();
  const int64_t m = v.operand(kStationary).free_size();
  const int64_t n = v.operand(kMoving).free_size();
  const bool accumulate = v.Int(kAccumulate) != 0;
  NKI_ASSIGN_OR_RETURN(const Matrix st,
                       ReadMatrix(ctx, kStationary, /*moving=*/false));
  NKI_ASSIGN_OR_RETURN(const Matrix mv,
                       ReadMatrix(ctx, kMoving, /*moving=*/true));
  auto sgemm = [&](float beta, float* c, int64_t ldc) {
    cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, static_cast<int>(m),
                static_cast<int>(n), static_cast<int>(k), 1.0f, st.data,
                static_cast<int>(std::max<int64_t>(st.ld, 1)), mv.data,
                static_cast<int>(std::max<int64_t>(mv.ld, 1)), beta, c,
                static_cast<int>(std::max<int64_t>(ldc, 1)));
  };
  // Into PSUM directly: BLAS adds its product to C (beta 1) exactly as
  // adding a separately computed product would (one rounding of the
  // finished dot product onto the old value), and with beta 0 zeroes C
  // first as it does a scratch buffer.
  const ExecContext::MatmulRows dst = ctx.MatmulInPlace(kDst, accumulate);
  if (dst.data != nullptr) {
    sgemm(accumulate ? 1.0f : 0.0f, dst.data,
          dst.rows == 1 ? dst.cols : dst.stride);
    return absl::OkStatus();
  }
  std::vector<float>& out = ctx.ScratchFloat(0);
  out.resize(m * n);
  sgemm(0.0f, out.data(), n);
  return ctx.MatmulWrite(kDst, out, accumulate);
}

}  // namespace

template <>
OpDef DefineOp<proto::NC_MATMUL>() {
  return {.engine = Engine::kTensor,
          .roles = kRoles,
          .attrs = kAttrs,
          .check = Check,
          .execute = Execute,
          .label = [](const proto::Instruction& i) {
            return AccumulateLabel(i, kAccumulate);
          }};
}

}  // namespace nkigraph::ops
