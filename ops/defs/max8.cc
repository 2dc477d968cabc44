// max8: per partition, the 8 largest values of src in descending order, on
// the vector engine. NaN ranks above every number.
#include <cmath>

#include "ops/exec_context.h"
#include "ops/op_def.h"
#include "ops/op_util.h"
#include "util/status_macros.h"

namespace nkigraph::ops {
namespace {

constexpr OperandRole kRoles[] = {{"dst", Access::kWrite, kSbuf},
                                  {"src", Access::kRead, kSbuf}};
constexpr int kDst = RoleOf(kRoles, "dst");
constexpr int kSrc = RoleOf(kRoles, "src");

constexpr int64_t kTop = 8;
constexpr int64_t kMaxFree = 16384;

// A strict total order on floats: NaN above everything, then by value.
bool Greater(float a, float b) {
  if (std::isnan(a)) return !std::isnan(b);
  if (std::isnan(b)) return false;
  return a > b;
}

absl::Status Check(const InstrView& v) {
  const OperandInfo& dst = v.operand(kDst);
  const OperandInfo& src = v.operand(kSrc);
  NKI_RETURN_IF_ERROR(CheckPartitions(v, kSrc));
  if (src.free_size() < kTop || src.free_size() > kMaxFree) {
    return v.Error("'src' has ", src.free_size(), " elements per partition; ",
                   kTop, " to ", kMaxFree, " allowed");
  }
  if (dst.partitions() != src.partitions() || dst.free_size() != kTop) {
    return v.Error("'dst' must be [", src.partitions(), ", ", kTop, "], not [",
                   dst.partitions(), ", ", dst.free_size(), "]");
  }
  return absl::OkStatus();
}

absl::Status Execute(ExecContext& ctx) {
  const InstrView& v = ctx.view();
  const int64_t p = v.operand(kSrc).partitions();
  const int64_t f = v.operand(kSrc).free_size();
  NKI_ASSIGN_OR_RETURN(absl::Span<const float> src, ctx.ReadFloat(kSrc));
  std::vector<float>& out = ctx.ScratchFloat(0);
  out.resize(p * kTop);
  for (int64_t i = 0; i < p; ++i) {
    // top[0..filled) holds the largest values so far, descending.
    float* top = &out[i * kTop];
    int64_t filled = 0;
    for (int64_t j = 0; j < f; ++j) {
      const float x = src[i * f + j];
      if (filled == kTop && !Greater(x, top[kTop - 1])) continue;
      int64_t pos = filled < kTop ? filled++ : kTop - 1;
      while (pos > 0 && Greater(x, top[pos - 1])) {
        top[pos] = top[pos - 1];
        --pos;
      }
      top[pos] = x;
    }
  }
  return ctx.WriteFloat(kDst, out);
}

}  // namespace

template <>
OpDef DefineOp<proto::MAX8>() {
  return {.engine = Engine::kVector,
          .roles = kRoles,
          .check = Check,
          .execute = Execute};
}

}  // namespace nkigraph::ops
