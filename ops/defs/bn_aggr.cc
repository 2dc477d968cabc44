// bn_aggr: combines the (count, mean, variance * count) triples of each
// partition of data (bn_stats results, its free size a multiple of 3) into
// that partition's mean and (population) variance, dst [P, 2]. In fp32,
// triples in element order, those of count 0 skipped:
//   n = sum(count), mean = sum(count * mean_k) / n,
//   variance = sum(M2_k + count_k * (mean_k - mean)^2) / n;
// a partition whose counts are all 0 gives mean 0, variance 0.
#include <cstdint>

#include "ops/exec_context.h"
#include "ops/op_def.h"
#include "ops/op_util.h"
#include "util/status_macros.h"

namespace nkigraph::ops {
namespace {

constexpr OperandRole kRoles[] = {{"dst", Access::kWrite, kOnChip},
                                  {"data", Access::kRead, kOnChip}};
constexpr int kDst = RoleOf(kRoles, "dst");
constexpr int kData = RoleOf(kRoles, "data");

absl::Status Check(const InstrView& v) {
  NKI_RETURN_IF_ERROR(CheckPartitions(v, kData));
  const OperandInfo& data = v.operand(kData);
  const OperandInfo& dst = v.operand(kDst);
  if (data.free_size() % 3 != 0) {
    return v.Error("'data' has ", data.free_size(),
                   " elements per partition; bn_aggr reads (count, mean, "
                   "variance * count) triples, so a multiple of 3");
  }
  if (dst.partitions() != data.partitions() || dst.free_size() != 2) {
    return v.Error("'dst' must be [", data.partitions(), ", 2], not [",
                   dst.partitions(), ", ", dst.free_size(), "]");
  }
  return absl::OkStatus();
}

absl::Status Execute(ExecContext& ctx) {
  const InstrView& v = ctx.view();
  const int64_t p = v.operand(kData).partitions();
  const int64_t f = v.operand(kData).free_size();
  NKI_ASSIGN_OR_RETURN(absl::Span<const float> data, ctx.ReadFloat(kData));
  std::vector<float>& out = ctx.ScratchFloat(0);
  out.resize(p * 2);
  for (int64_t i = 0; i < p; ++i) {
    const float* t = &data[i * f];
    float n = 0.0f, weighted = 0.0f;
    for (int64_t k = 0; k < f; k += 3) {
      if (t[k] == 0.0f) continue;
      n += t[k];
      weighted += t[k] * t[k + 1];
    }
    float mean = 0.0f, variance = 0.0f;
    if (n != 0.0f) {
      mean = weighted / n;
      float m2 = 0.0f;
      for (int64_t k = 0; k < f; k += 3) {
        if (t[k] == 0.0f) continue;
        const float d = t[k + 1] - mean;
        m2 += t[k + 2] + t[k] * d * d;
      }
      variance = m2 / n;
    }
    out[i * 2] = mean;
    out[i * 2 + 1] = variance;
  }
  return ctx.WriteFloat(kDst, out);
}

}  // namespace

template <>
OpDef DefineOp<proto::BN_AGGR>() {
  return {.engine = Engine::kVector,
          .roles = kRoles,
          .check = Check,
          .execute = Execute};
}

}  // namespace nkigraph::ops
