// nc_find_index8: per partition, the index of the first element of data
// equal to each of vals' 8 values, on the vector engine; all ones
// (0xFFFFFFFF, 0xFFFF; -1 for int32) where a value does not occur.
// Repeated values take successive occurrences, in vals order: the first of
// them the first occurrence, the next one the next (so the indices of
// max8's tied values are distinct, and eight copies of t find the first
// eight elements equal to t). nc_match_replace8 breaks ties the other way.
#include "ops/exec_context.h"
#include "ops/op_def.h"
#include "ops/op_util.h"
#include "util/dtype.h"
#include "util/status_macros.h"

namespace nkigraph::ops {
namespace {

constexpr OperandRole kRoles[] = {{"dst", Access::kWrite, kSbuf},
                                  {"data", Access::kRead, kSbuf},
                                  {"vals", Access::kRead, kSbuf}};
constexpr int kDst = RoleOf(kRoles, "dst");
constexpr int kData = RoleOf(kRoles, "data");
constexpr int kVals = RoleOf(kRoles, "vals");

constexpr int64_t kValues = 8;

int64_t NotFound(proto::DType dtype) {
  switch (dtype) {
    case proto::UINT32:
      return 0xFFFFFFFF;
    case proto::UINT16:
      return 0xFFFF;
    default:
      return -1;  // int32: all bits set
  }
}

absl::Status Check(const InstrView& v) {
  const OperandInfo& dst = v.operand(kDst);
  const OperandInfo& data = v.operand(kData);
  NKI_RETURN_IF_ERROR(CheckPartitions(v, kData));
  const int64_t p = data.partitions();
  if (!IsFloatDType(data.dtype())) {
    return v.Error("'data' is ", DTypeName(data.dtype()),
                   "; it must be a float dtype");
  }
  for (int i : {kVals, kDst}) {
    const OperandInfo& info = v.operand(i);
    if (info.partitions() != p || info.free_size() != kValues) {
      return v.Error("'", v.RoleName(i), "' must be [", p, ", ", kValues,
                     "], not [", info.partitions(), ", ", info.free_size(),
                     "]");
    }
  }
  if (dst.dtype() != proto::UINT32 && dst.dtype() != proto::UINT16 &&
      dst.dtype() != proto::INT32) {
    return v.Error("'dst' is ", DTypeName(dst.dtype()),
                   "; uint32, uint16 or int32 allowed");
  }
  if (dst.dtype() == proto::UINT16 && data.free_size() > 0xFFFF) {
    return v.Error("'data' has ", data.free_size(),
                   " elements per partition; a uint16 'dst' allows at most ",
                   0xFFFF);
  }
  return absl::OkStatus();
}

absl::Status Execute(ExecContext& ctx) {
  const InstrView& v = ctx.view();
  const int64_t p = v.operand(kData).partitions();
  const int64_t f = v.operand(kData).free_size();
  const int64_t not_found = NotFound(v.operand(kDst).dtype());
  NKI_ASSIGN_OR_RETURN(absl::Span<const float> data, ctx.ReadFloat(kData));
  NKI_ASSIGN_OR_RETURN(absl::Span<const float> vals, ctx.ReadFloat(kVals));
  std::vector<int64_t>& out = ctx.ScratchInt(0);
  out.resize(p * kValues);
  for (int64_t i = 0; i < p; ++i) {
    const float* row = &data[i * f];
    const float* targets = &vals[i * kValues];
    for (int64_t k = 0; k < kValues; ++k) {
      // An earlier equal value claimed an occurrence: search after it.
      int64_t from = 0;
      for (int64_t e = k - 1; e >= 0; --e) {
        if (targets[e] == targets[k]) {
          const int64_t claimed = out[i * kValues + e];
          from = claimed == not_found ? f : claimed + 1;
          break;
        }
      }
      int64_t found = not_found;
      for (int64_t j = from; j < f; ++j) {
        if (row[j] == targets[k]) {
          found = j;
          break;
        }
      }
      out[i * kValues + k] = found;
    }
  }
  return ctx.WriteInt(kDst, out);
}

}  // namespace

template <>
OpDef DefineOp<proto::NC_FIND_INDEX8>() {
  return {.engine = Engine::kVector,
          .roles = kRoles,
          .check = Check,
          .execute = Execute};
}

}  // namespace nkigraph::ops
