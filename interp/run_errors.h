#ifndef NKIGRAPH_INTERP_RUN_ERRORS_H_
#define NKIGRAPH_INTERP_RUN_ERRORS_H_

// The errors a run stops with, each saying where it stopped: an
// instruction that failed on the device, the step limit, a deadlock.

#include <cstdint>
#include <memory>
#include <vector>

#include "absl/status/status.h"
#include "interp/program_state.h"
#include "proto/nkigraph.pb.h"

namespace nkigraph::interp {

// Wraps an error from executing an instruction with where it happened,
// keeping what the error itself says it is (a race, the tensor, ...).
absl::Status DeviceError(const proto::Graph& graph, const ProgramState& p,
                         const proto::Instruction& instr,
                         const absl::Status& status);

// The run has taken its --max-steps instructions; `instr`, program p's
// next, is where it stopped.
absl::Status StepLimitError(const proto::Graph& graph, const ProgramState& p,
                            const proto::Instruction& instr, int64_t steps);

// No program can proceed: one note per program, where it waits or that it
// finished its stream (at most 64).
absl::Status DeadlockError(
    const proto::Graph& graph,
    const std::vector<std::unique_ptr<ProgramState>>& programs);

}  // namespace nkigraph::interp

#endif  // NKIGRAPH_INTERP_RUN_ERRORS_H_
