// core_barrier: every core of a rank waits until all reach a core_barrier
// on the same shared-HBM tensor. No data moves; the scheduler does the
// waiting.
#include "ops/exec_context.h"
#include "ops/op_defs.h"
#include "ops/op_util.h"
#include "util/status_macros.h"

namespace nkigraph::ops {
namespace {

enum { kData };

absl::Status Check(const InstrView& v) {
  if (v.HasAttr("cores")) {
    const absl::Span<const int64_t> cores = v.IntsAttr("cores");
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

const OpDef& CoreBarrierOp() {
  static const OpDef def{
      .opcode = proto::CORE_BARRIER,
      .name = "core_barrier",
      .engine = Engine::kGpSimd,
      .roles = {{"data", Access::kRead, Space(proto::SHARED_HBM)}},
      .sync = SyncKind::kCoreBarrier,
      .check = Check,
      .execute_group = ExecuteGroup,
  };
  return def;
}

}  // namespace nkigraph::ops
