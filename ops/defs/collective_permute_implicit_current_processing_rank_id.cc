// collective_permute_implicit_current_processing_rank_id: writes into dst
// (one int32 or uint32) the group-local rank whose data the ring of
// collective_permute_implicit has delivered at step `iteration`:
// (index - iteration) mod group size. No communication.
#include <cstdint>
#include <limits>
#include <string>

#include "absl/strings/str_cat.h"
#include "ops/exec_context.h"
#include "ops/op_def.h"
#include "ops/op_util.h"
#include "util/dtype.h"
#include "util/status_macros.h"

namespace nkigraph::ops {
namespace {

constexpr OperandRole kRoles[] = {{"dst", Access::kWrite, kSbufOrHbm}};
constexpr int kDst = RoleOf(kRoles, "dst");

constexpr AttrSpec kAttrs[] = {
    IntSpec("iteration", 0, "the ring step")
        .Range(0, std::numeric_limits<int64_t>::max())
        .WrittenAtDefault(),
    kRingChannelSpec,
};
constexpr const AttrSpec& kIteration = AttrOf(kAttrs, "iteration");

absl::Status Check(const InstrView& v) {
  const OperandInfo& dst = v.operand(kDst);
  if (dst.elements() != 1) {
    return v.Error("'dst' has ", dst.elements(), " elements; it must have 1");
  }
  if (dst.dtype() != proto::INT32 && dst.dtype() != proto::UINT32) {
    return v.Error("'dst' is ", DTypeName(dst.dtype()),
                   "; int32 or uint32 allowed");
  }
  return absl::OkStatus();
}

absl::Status Execute(ExecContext& ctx) {
  const InstrView& v = ctx.view();
  NKI_ASSIGN_OR_RETURN(const GroupPosition position,
                       GroupOf(v.world(), ctx.rank()));
  const int64_t n = static_cast<int64_t>(position.ranks.size());
  const int64_t iteration = v.Int(kIteration);
  const int64_t value = ((position.index - iteration) % n + n) % n;
  const int64_t values[] = {value};
  return ctx.WriteInt(kDst, values);
}

std::string Label(const proto::Instruction& instr) {
  return absl::StrCat("iter ", IntValue(instr, kIteration));
}

}  // namespace

template <>
OpDef DefineOp<
    proto::COLLECTIVE_PERMUTE_IMPLICIT_CURRENT_PROCESSING_RANK_ID>() {
  return {.engine = Engine::kCollective,
          .roles = kRoles,
          .attrs = kAttrs,
          .check = Check,
          .execute = Execute,
          .short_name = "permute_rank_id",
          .label = Label};
}

}  // namespace nkigraph::ops
