// core_barrier: every core of a rank waits until all reach a core_barrier
// on the same shared-HBM tensor. No data moves; the scheduler does the
// waiting.
#include "ops/exec_context.h"
#include "ops/op_def.h"
#include "ops/op_util.h"
#include "util/status_macros.h"

namespace nkigraph::ops {
namespace {

constexpr OperandRole kRoles[] = {
    {"data", Access::kRead, Space(proto::SHARED_HBM)}};

constexpr AttrSpec kAttrs[] = {
    IntsSpec("cores", "the cores that meet; absent: every core of the rank")};
constexpr const AttrSpec& kCores = AttrOf(kAttrs, "cores");

absl::Status Check(const InstrView& v) {
  if (v.Has(kCores)) {
    const absl::Span<const int64_t> cores = v.Ints(kCores);
    if (cores.size() != 2 || cores[0] != 0 || cores[1] != 1) {
      return v.Error(
          "attribute 'cores' must be (0, 1), the only set the "
          "hardware supports");
    }
  }
  return absl::OkStatus();
}

absl::Status ExecuteGroup(absl::Span<ExecContext* const> /*group*/) {
  return absl::OkStatus();
}

}  // namespace

template <>
OpDef DefineOp<proto::CORE_BARRIER>() {
  return {.engine = Engine::kGpSimd,
          .roles = kRoles,
          .attrs = kAttrs,
          .sync = SyncKind::kCoreBarrier,
          .sync_rule = kCoreBarrierRule,
          .check = Check,
          .execute_group = ExecuteGroup};
}

}  // namespace nkigraph::ops
