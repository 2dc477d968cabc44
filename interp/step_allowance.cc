// The step limit handed out to each round's programs in one-thread order
// (see step_allowance.h).
#include "interp/step_allowance.h"

#include <algorithm>
#include <cstdint>

#include "ops/op_def.h"

namespace nkigraph::interp {

StepAllowances::StepAllowances(const proto::Graph& graph, int64_t max_steps,
                               int num_programs)
    : max_steps_(max_steps), allowance_(num_programs, INT64_MAX) {
  if (max_steps_ <= 0) return;
  next_sync_.resize(graph.streams_size());
  for (int c = 0; c < graph.streams_size(); ++c) {
    const proto::Stream& stream = graph.streams(c);
    std::vector<int>& next = next_sync_[c];
    next.resize(stream.instructions_size() + 1);
    next.back() = stream.instructions_size();
    for (int i = stream.instructions_size() - 1; i >= 0; --i) {
      const bool sync = ops::FindOp(stream.instructions(i).opcode())->sync !=
                        ops::SyncKind::kNone;
      next[i] = sync ? i : next[i + 1];
    }
  }
}

void StepAllowances::HandOut(
    const std::vector<std::unique_ptr<ProgramState>>& programs,
    const std::vector<bool>& moves, int64_t executed) {
  if (max_steps_ <= 0) return;
  int64_t left = std::max<int64_t>(0, max_steps_ - executed);
  for (size_t i = 0; i < programs.size(); ++i) {
    if (!moves[i]) continue;
    const ProgramState& p = *programs[i];
    allowance_[i] =
        std::min<int64_t>(left, next_sync_[p.core()][p.pc()] - p.pc());
    left -= allowance_[i];
  }
}

}  // namespace nkigraph::interp
