// nc_stream_shuffle: moves whole partitions inside each 32-partition
// quadrant on the vector engine: dst partition 32q + i takes src partition
// 32q + mask[i]; mask value 255 leaves the dst partition unchanged.
// Bit-exact for equal dtypes, cast as by tensor_copy otherwise.
#include <cstring>

#include "ops/exec_context.h"
#include "ops/op_def.h"
#include "ops/op_util.h"
#include "util/dtype.h"
#include "util/status_macros.h"

namespace nkigraph::ops {
namespace {

// dst is read as well as written: mask entries of 255 keep dst partitions.
constexpr OperandRole kRoles[] = {{"dst", Access::kReadWrite, kOnChip},
                                  {"src", Access::kRead, kOnChip}};
constexpr int kDst = RoleOf(kRoles, "dst");
constexpr int kSrc = RoleOf(kRoles, "src");

constexpr AttrSpec kAttrs[] = {
    IntsSpec("mask",
             "per quadrant partition, the src partition it takes (255: keep)")
        .Required()};
constexpr const AttrSpec& kMask = AttrOf(kAttrs, "mask");

constexpr int64_t kQuadrant = 32;
constexpr int64_t kKeep = 255;

absl::Status Check(const InstrView& v) {
  const OperandInfo& dst = v.operand(kDst);
  const OperandInfo& src = v.operand(kSrc);
  if (dst.space() == proto::PSUM && src.space() == proto::PSUM) {
    return v.Error("'dst' and 'src' cannot both be in psum");
  }
  NKI_RETURN_IF_ERROR(CheckPartitions(v, kSrc));
  NKI_RETURN_IF_ERROR(CheckSameTile(v, kDst, kSrc));
  const absl::Span<const int64_t> mask = v.Ints(kMask);
  if (static_cast<int64_t>(mask.size()) != kQuadrant) {
    return v.Error("attribute 'mask' has ", mask.size(), " entries; exactly ",
                   kQuadrant, " required");
  }
  const int64_t p = src.partitions();
  for (int64_t i = 0; i < kQuadrant; ++i) {
    const int64_t m = mask[i];
    if (m == kKeep) continue;
    if (m < 0 || m >= kQuadrant) {
      return v.Error("mask[", i, "] is ", m, "; 0 to ", kQuadrant - 1, " or ",
                     kKeep, " allowed");
    }
    if (i >= p) continue;  // no dst partition uses this entry
    // The last quadrant holding dst partition i must also hold source m.
    const int64_t base = (p - 1 - i) / kQuadrant * kQuadrant;
    if (base + m >= p) {
      return v.Error("mask[", i, "] is ", m, ", so partition ", base + i,
                     " reads partition ", base + m, ", but 'src' spans ", p,
                     " partitions");
    }
  }
  return absl::OkStatus();
}

// Shuffles rows of `row` elements from `in` into `out`, which holds dst's
// current contents wherever the mask keeps them.
template <typename T>
void Shuffle(absl::Span<const int64_t> mask, int64_t partitions, int64_t row,
             const T* in, T* out) {
  for (int64_t q = 0; q < partitions; q += kQuadrant) {
    for (int64_t i = 0; i < kQuadrant && q + i < partitions; ++i) {
      if (mask[i] == kKeep) continue;
      std::memcpy(out + (q + i) * row, in + (q + mask[i]) * row,
                  row * sizeof(T));
    }
  }
}

absl::Status Execute(ExecContext& ctx) {
  const InstrView& v = ctx.view();
  const absl::Span<const int64_t> mask = v.Ints(kMask);
  const OperandInfo& dst = v.operand(kDst);
  const OperandInfo& src = v.operand(kSrc);
  const int64_t p = src.partitions();
  const int64_t f = src.free_size();
  // dst is read only when some partition keeps its contents, so a full
  // shuffle into a fresh tile does not read uninitialised memory.
  bool keeps = false;
  for (int64_t i = 0; i < kQuadrant && i < p; ++i) keeps |= mask[i] == kKeep;

  if (dst.dtype() == src.dtype()) {
    const int64_t row = f * DTypeSize(dst.dtype());
    absl::Span<uint8_t> out = ScratchBytes(ctx, 0, p * row);
    if (keeps) {
      NKI_ASSIGN_OR_RETURN(absl::Span<const uint8_t> old, ctx.ReadRaw(kDst));
      std::memcpy(out.data(), old.data(), out.size());
    }
    NKI_ASSIGN_OR_RETURN(absl::Span<const uint8_t> in, ctx.ReadRaw(kSrc));
    Shuffle(mask, p, row, in.data(), out.data());
    return ctx.WriteRaw(kDst, out);
  }
  if (!IsFloatDType(dst.dtype()) && !IsFloatDType(src.dtype())) {
    std::vector<int64_t>& out = ctx.ScratchInt(0);
    out.assign(p * f, 0);
    if (keeps) {
      NKI_ASSIGN_OR_RETURN(absl::Span<const int64_t> old, ctx.ReadInt(kDst));
      out.assign(old.begin(), old.end());
    }
    NKI_ASSIGN_OR_RETURN(absl::Span<const int64_t> in, ctx.ReadInt(kSrc));
    Shuffle(mask, p, f, in.data(), out.data());
    return ctx.WriteInt(kDst, out);
  }
  std::vector<float>& out = ctx.ScratchFloat(0);
  out.assign(p * f, 0.0f);
  if (keeps) {
    NKI_ASSIGN_OR_RETURN(absl::Span<const float> old, ctx.ReadFloat(kDst));
    out.assign(old.begin(), old.end());
  }
  NKI_ASSIGN_OR_RETURN(absl::Span<const float> in, ctx.ReadFloat(kSrc));
  Shuffle(mask, p, f, in.data(), out.data());
  return ctx.WriteFloat(kDst, out);
}

}  // namespace

template <>
OpDef DefineOp<proto::NC_STREAM_SHUFFLE>() {
  return {.engine = Engine::kVector,
          .roles = kRoles,
          .attrs = kAttrs,
          .check = Check,
          .execute = Execute};
}

}  // namespace nkigraph::ops
