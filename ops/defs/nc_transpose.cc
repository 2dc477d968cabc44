// nc_transpose: dst[F, P] = data[P, F]^T, bit-exact. The tensor engine
// takes up to 128 x 128 from SBUF into PSUM (a matmul against identity);
// the vector engine up to 32 x 32 in SBUF or PSUM.
#include <cstring>

#include "ops/block_copy.h"
#include "ops/exec_context.h"
#include "ops/op_def.h"
#include "ops/op_util.h"
#include "util/dtype.h"
#include "util/status_macros.h"

namespace nkigraph::ops {
namespace {

// Both engines' spaces; Check enforces each engine's own.
constexpr OperandRole kRoles[] = {{"dst", Access::kWrite, kOnChip},
                                  {"data", Access::kRead, kOnChip}};
constexpr int kDst = RoleOf(kRoles, "dst");
constexpr int kData = RoleOf(kRoles, "data");

constexpr absl::string_view kEngines[] = {EngineName(Engine::kTensor),
                                          EngineName(Engine::kVector)};
constexpr AttrSpec kAttrs[] = {EngineSpec(Engine::kTensor, kEngines)};
constexpr const AttrSpec& kEngine = AttrOf(kAttrs, "engine");

absl::Status Check(const InstrView& v) {
  const OperandInfo& dst = v.operand(kDst);
  const OperandInfo& data = v.operand(kData);
  const bool tensor_engine = v.Str(kEngine) == EngineName(Engine::kTensor);
  const int64_t p = data.partitions();
  const int64_t f = data.free_size();
  if (tensor_engine) {
    if (data.space() != proto::SBUF || dst.space() != proto::PSUM) {
      return v.Error(
          "on the tensor engine 'data' must be in sbuf and 'dst' in psum, ",
          "not ", SpaceName(data.space()), " and ", SpaceName(dst.space()));
    }
    if (p > v.profile().num_partitions || f > v.profile().num_partitions) {
      return v.Error("on the tensor engine 'data' is [", p, ", ", f,
                     "]; at most [", v.profile().num_partitions, ", ",
                     v.profile().num_partitions, "] allowed");
    }
    NKI_RETURN_IF_ERROR(CheckPartitionStart(v, kData));
  } else if (p > 32 || f > 32) {
    return v.Error("on the vector engine 'data' is [", p, ", ", f,
                   "]; at most [32, 32] allowed");
  }
  if (dst.partitions() != f || dst.free_size() != p) {
    return v.Error("'dst' must be [", f, ", ", p,
                   "] ('data' transposed), not [", dst.partitions(), ", ",
                   dst.free_size(), "]");
  }
  if (dst.dtype() != data.dtype()) {
    return v.Error("'dst' is ", DTypeName(dst.dtype()), " but 'data' is ",
                   DTypeName(data.dtype()), "; they must match");
  }
  return absl::OkStatus();
}

absl::Status Execute(ExecContext& ctx) {
  const InstrView& v = ctx.view();
  const OperandInfo& data = v.operand(kData);
  const int64_t p = data.partitions();
  const int64_t f = data.free_size();
  const int64_t size = DTypeSize(data.dtype());
  // dst[j, i] = data[i, j]: data as a p x f block, dst's f x p block seen
  // with its strides swapped; tile by tile (ops::CopyBlock) rather than an
  // element at a time through a buffer.
  if (!MayOverlap(v.operand(kDst), data)) {
    NKI_ASSIGN_OR_RETURN(ConstBlock in, ctx.ReadBlock(kData));
    if (in.data != nullptr) {
      absl::Span<uint8_t> dense;
      if (!ReshapeToCols(in, f)) {  // gathered in element order first
        dense = ScratchBytes(ctx, 0, p * f * size);
        CopyBlock({dense.data(), in.rows, in.cols, in.cols * size, size}, in,
                  size);
        in = {dense.data(), p, f, f * size, size};
      }
      const MutableBlock out = ctx.WriteBlockInPlace(kDst, p);
      if (out.data != nullptr) {
        CopyBlock({out.data, p, f, out.col_stride, out.row_stride}, in, size);
        return absl::OkStatus();
      }
      absl::Span<uint8_t> transposed = ScratchBytes(ctx, 1, p * f * size);
      CopyBlock({transposed.data(), p, f, size, p * size}, in, size);
      return ctx.WriteRaw(kDst, transposed);
    }
  }
  NKI_ASSIGN_OR_RETURN(absl::Span<const uint8_t> in, ctx.ReadRaw(kData));
  absl::Span<uint8_t> out = ScratchBytes(ctx, 0, p * f * size);
  for (int64_t i = 0; i < p; ++i) {
    for (int64_t j = 0; j < f; ++j) {
      std::memcpy(&out[(j * p + i) * size], &in[(i * f + j) * size], size);
    }
  }
  return ctx.WriteRaw(kDst, out);
}

}  // namespace

template <>
OpDef DefineOp<proto::NC_TRANSPOSE>() {
  return {.engine = Engine::kTensor,
          .roles = kRoles,
          .attrs = kAttrs,
          .check = Check,
          .execute = Execute};
}

}  // namespace nkigraph::ops
