// tensor_copy_predicated: on the vector engine, copies src into dst where
// the predicate is true (its element's bits are not all zero; reverse_pred
// flips that) and leaves dst unchanged elsewhere. src is a tile shaped like
// dst, of dst's dtype, copied bit for bit, or an immediate rounded to dst's
// dtype. The data-dependent select of the ISA: nl.where(c, x, y) is a copy
// of y into dst, then this with src x and predicate c.
#include <cstdint>
#include <cstring>

#include "ops/exec_context.h"
#include "ops/op_def.h"
#include "ops/op_util.h"
#include "util/dtype.h"
#include "util/status_macros.h"

namespace nkigraph::ops {
namespace {

// dst is read as well as written: where the predicate is false it keeps
// its contents.
constexpr OperandRole kRoles[] = {
    {"dst", Access::kReadWrite, kOnChip},
    {"src", Access::kRead, kOnChip, /*optional=*/true},
    {"predicate", Access::kRead, kOnChip}};
constexpr int kDst = RoleOf(kRoles, "dst");
constexpr int kSrc = RoleOf(kRoles, "src");
constexpr int kPredicate = RoleOf(kRoles, "predicate");

constexpr AttrSpec kAttrs[] = {
    FloatSpec("src", 0.0, "the immediate copied, without a 'src' tile"),
    FlagSpec("reverse_pred", "1: copy where the predicate is false"),
};
constexpr const AttrSpec& kSrcImm = AttrOf(kAttrs, "src");
constexpr const AttrSpec& kReversePred = AttrOf(kAttrs, "reverse_pred");

absl::Status Check(const InstrView& v) {
  NKI_RETURN_IF_ERROR(CheckPartitions(v, kDst));
  NKI_RETURN_IF_ERROR(CheckSameTile(v, kPredicate, kDst));
  const OperandInfo& predicate = v.operand(kPredicate);
  const proto::DType pd = predicate.dtype();
  if (pd != proto::UINT8 && pd != proto::UINT16 && pd != proto::UINT32) {
    return v.Error("'predicate' is ", DTypeName(pd),
                   "; uint8, uint16 or uint32 required");
  }
  const OperandInfo& src = v.operand(kSrc);
  if (!src.present()) return absl::OkStatus();
  NKI_RETURN_IF_ERROR(CheckSameTile(v, kSrc, kDst));
  if (src.dtype() != v.operand(kDst).dtype()) {
    return v.Error("'src' is ", DTypeName(src.dtype()), " but 'dst' is ",
                   DTypeName(v.operand(kDst).dtype()), "; they must match");
  }
  if (src.space() == proto::PSUM && predicate.space() == proto::PSUM) {
    return v.Error("'src' and 'predicate' cannot both be in psum");
  }
  return absl::OkStatus();
}

absl::Status Execute(ExecContext& ctx) {
  const InstrView& v = ctx.view();
  const OperandInfo& dst = v.operand(kDst);
  const int64_t n = dst.elements();
  const int64_t size = DTypeSize(dst.dtype());
  const bool reverse = v.Int(kReversePred) != 0;
  NKI_ASSIGN_OR_RETURN(absl::Span<const int64_t> predicate,
                       ctx.ReadInt(kPredicate));
  bool keeps = false;  // some element of dst stays as it is
  for (int64_t k = 0; k < n && !keeps; ++k) {
    keeps = (predicate[k] != 0) == reverse;
  }
  absl::Span<uint8_t> out = ScratchBytes(ctx, 0, n * size);
  if (keeps) {
    // Read only then, so a full copy into a fresh tile reads nothing
    // uninitialised.
    NKI_ASSIGN_OR_RETURN(absl::Span<const uint8_t> old, ctx.ReadRaw(kDst));
    std::memcpy(out.data(), old.data(), out.size());
  }
  absl::Span<const uint8_t> src;
  uint8_t immediate[8] = {};
  if (v.operand(kSrc).present()) {
    NKI_ASSIGN_OR_RETURN(src, ctx.ReadRaw(kSrc));
  } else {
    StoreFromFloat(dst.dtype(), static_cast<float>(v.Float(kSrcImm)), immediate,
                   v.profile().fp8_e4m3_max);
  }
  for (int64_t k = 0; k < n; ++k) {
    if ((predicate[k] != 0) == reverse) continue;
    std::memcpy(&out[k * size], src.empty() ? immediate : &src[k * size], size);
  }
  return ctx.WriteRaw(kDst, out);
}

}  // namespace

template <>
OpDef DefineOp<proto::TENSOR_COPY_PREDICATED>() {
  return {.engine = Engine::kVector,
          .roles = kRoles,
          .attrs = kAttrs,
          .check = Check,
          .execute = Execute};
}

}  // namespace nkigraph::ops
