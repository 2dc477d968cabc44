// bn_stats: per-partition statistics for a mean and variance on the vector
// engine, in NKI's layout: for each partition of data (at most the
// profile's bn_stats_fmax free elements), six values into dst [P, 6]:
//   count, mean, variance * count of the even elements (free index 0, 2,
//   ...), then the same of the odd elements (1, 3, ...).
// bn_aggr combines one or more such groups of three. The math is fp32:
// the mean is the elements' sum, in element order, over their count, and
// variance * count the sum of squared differences from that mean, in
// element order. A group with no element (the odd one of a single element)
// is count 0, mean 0, 0.
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

constexpr int64_t kStats = 6;  // two groups of (count, mean, M2)

absl::Status Check(const InstrView& v) {
  NKI_RETURN_IF_ERROR(CheckPartitions(v, kData));
  const OperandInfo& data = v.operand(kData);
  const OperandInfo& dst = v.operand(kDst);
  const int64_t fmax = v.profile().bn_stats_fmax;
  if (data.free_size() > fmax) {
    return v.Error("'data' has ", data.free_size(),
                   " elements per partition; bn_stats takes at most ", fmax,
                   " on ", v.profile().name);
  }
  if (dst.partitions() != data.partitions() || dst.free_size() != kStats) {
    return v.Error("'dst' must be [", data.partitions(), ", ", kStats,
                   "], not [", dst.partitions(), ", ", dst.free_size(), "]");
  }
  return absl::OkStatus();
}

// count, mean and sum of squared differences of x[first], x[first + 2], ...
// below x[n], into out[0..2].
void GroupStats(const float* x, int64_t n, int64_t first, float* out) {
  int64_t count = 0;
  float sum = 0.0f;
  for (int64_t j = first; j < n; j += 2) {
    sum += x[j];
    ++count;
  }
  if (count == 0) {
    out[0] = out[1] = out[2] = 0.0f;
    return;
  }
  const float mean = sum / static_cast<float>(count);
  float m2 = 0.0f;
  for (int64_t j = first; j < n; j += 2) {
    const float d = x[j] - mean;
    m2 += d * d;
  }
  out[0] = static_cast<float>(count);
  out[1] = mean;
  out[2] = m2;
}

absl::Status Execute(ExecContext& ctx) {
  const InstrView& v = ctx.view();
  const int64_t p = v.operand(kData).partitions();
  const int64_t f = v.operand(kData).free_size();
  NKI_ASSIGN_OR_RETURN(absl::Span<const float> data, ctx.ReadFloat(kData));
  std::vector<float>& out = ctx.ScratchFloat(0);
  out.resize(p * kStats);
  for (int64_t i = 0; i < p; ++i) {
    GroupStats(&data[i * f], f, 0, &out[i * kStats]);
    GroupStats(&data[i * f], f, 1, &out[i * kStats + 3]);
  }
  return ctx.WriteFloat(kDst, out);
}

}  // namespace

template <>
OpDef DefineOp<proto::BN_STATS>() {
  return {.engine = Engine::kVector,
          .roles = kRoles,
          .check = Check,
          .execute = Execute};
}

}  // namespace nkigraph::ops
