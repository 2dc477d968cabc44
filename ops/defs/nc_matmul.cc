// nc_matmul: dst[M, N] (+)= stationary[K, M]^T @ moving[K, N] on the tensor
// engine, SBUF inputs, fp32 accumulation in PSUM.
#include <cstdint>
#include <vector>

#include "ops/blas_threads.h"
#include "ops/exec_context.h"
#include "ops/matmul_kernel.h"
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

// Operand `i` where it lies, one row per partition, read (and widened) by
// the kernel; as a float32 copy when its rows are split in runs.
absl::StatusOr<ops::MatmulOperand> ReadOperand(ExecContext& ctx, int i) {
  const OperandInfo& info = ctx.view().operand(i);
  const int64_t cols = info.free_size();
  NKI_ASSIGN_OR_RETURN(const ExecContext::Rows rows, ctx.ReadRows(i));
  if (rows.data != nullptr && rows.cols == cols) {
    return ops::MatmulOperand{rows.data, rows.stride, info.dtype()};
  }
  if (rows.data != nullptr && rows.rows == 1) {  // all rows contiguous
    return ops::MatmulOperand{rows.data, cols * DTypeSize(info.dtype()),
                              info.dtype()};
  }
  NKI_ASSIGN_OR_RETURN(absl::Span<const float> values, ctx.ReadFloat(i));
  return ops::MatmulOperand{reinterpret_cast<const uint8_t*>(values.data()),
                            cols * 4, proto::FLOAT32};
}

// The product in the order ops/matmul_kernel.h defines, into PSUM in place
// where it lies in rows (adding onto the old value there is the same single
// rounding as MatmulWrite's), else into a scratch buffer MatmulWrite then
// checks and stores. The threads the run lends to BLAS (ops/blas_threads.h)
// split the columns.
absl::Status Execute(ExecContext& ctx) {
  const InstrView& v = ctx.view();
  const int64_t k = v.operand(kStationary).partitions();
  const int64_t m = v.operand(kStationary).free_size();
  const int64_t n = v.operand(kMoving).free_size();
  const bool accumulate = v.Int(kAccumulate) != 0;
  NKI_ASSIGN_OR_RETURN(const ops::MatmulOperand st,
                       ReadOperand(ctx, kStationary));
  NKI_ASSIGN_OR_RETURN(const ops::MatmulOperand mv, ReadOperand(ctx, kMoving));
  const int threads = LentThreads();
  const ExecContext::MatmulRows dst = ctx.MatmulInPlace(kDst, accumulate);
  if (dst.data != nullptr) {
    ops::MatmulTile(k, m, n, st, mv,
                    {dst.data, dst.rows == 1 ? dst.cols : dst.stride},
                    accumulate, threads);
    return absl::OkStatus();
  }
  std::vector<float>& out = ctx.ScratchFloat(0);
  out.resize(m * n);
  ops::MatmulTile(k, m, n, st, mv, {out.data(), n}, /*accumulate=*/false,
                  threads);
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
