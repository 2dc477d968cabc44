// collective_permute_implicit_current_processing_rank_id: writes into dst
// (one int32 or uint32) the group-local rank whose data the ring of
// collective_permute_implicit has delivered at step `iteration`:
// (index - iteration) mod group size. No communication.
#include "ops/exec_context.h"
#include "ops/op_defs.h"
#include "ops/op_util.h"
#include "util/dtype.h"
#include "util/status_macros.h"

namespace nkigraph::ops {
namespace {

enum { kDst };

constexpr int64_t kChannels = 4;

absl::Status Check(const InstrView& v) {
  const OperandInfo& dst = v.operand(kDst);
  if (dst.elements() != 1) {
    return v.Error("'dst' has ", dst.elements(), " elements; it must have 1");
  }
  if (dst.dtype() != proto::INT32 && dst.dtype() != proto::UINT32) {
    return v.Error("'dst' is ", DTypeName(dst.dtype()),
                   "; int32 or uint32 allowed");
  }
  const int64_t iteration = v.IntAttr("iteration", 0);
  if (iteration < 0) {
    return v.Error("iteration is ", iteration, "; it must be 0 or more");
  }
  const int64_t channel = v.IntAttr("channel", 0);
  if (channel < 0 || channel >= kChannels) {
    return v.Error("channel is ", channel, "; 0 to ", kChannels - 1,
                   " allowed");
  }
  return absl::OkStatus();
}

absl::Status Execute(ExecContext& ctx) {
  const InstrView& v = ctx.view();
  NKI_ASSIGN_OR_RETURN(const GroupPosition position,
                       GroupOf(v.world(), ctx.rank()));
  const int64_t n = static_cast<int64_t>(position.ranks.size());
  const int64_t iteration = v.IntAttr("iteration", 0);
  const int64_t value = ((position.index - iteration) % n + n) % n;
  const int64_t values[] = {value};
  return ctx.WriteInt(kDst, values);
}

}  // namespace

const OpDef& CollectivePermuteImplicitCurrentProcessingRankIdOp() {
  static const OpDef def{
      .opcode = proto::COLLECTIVE_PERMUTE_IMPLICIT_CURRENT_PROCESSING_RANK_ID,
      .name = "collective_permute_implicit_current_processing_rank_id",
      .engine = Engine::kCollective,
      .roles = {{"dst", Access::kWrite, kSbufOrHbm}},
      .check = Check,
      .execute = Execute,
  };
  return def;
}

}  // namespace nkigraph::ops
