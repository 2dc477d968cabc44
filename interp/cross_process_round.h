#ifndef NKIGRAPH_INTERP_CROSS_PROCESS_ROUND_H_
#define NKIGRAPH_INTERP_CROSS_PROCESS_ROUND_H_

// What the processes of a run spread over several (interp/transport.h)
// tell each other in a round, so that each holds the view one process
// would: where every program's segment got to and how it ended, the
// groups that span processes fired over their members' contributions, and
// the first failure in firing order. The scheduler (scheduler.cc) says
// when each happens.

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "interp/device_memory.h"
#include "interp/program_state.h"
#include "interp/remote_member.h"
#include "interp/tensor_snapshot.h"
#include "interp/transport.h"
#include "ops/op_def.h"
#include "proto/nkigraph.pb.h"

namespace nkigraph::interp {

// Every program of the run and which ranks this process holds.
struct Programs {
  std::vector<std::unique_ptr<ProgramState>>& all;  // [rank][core]
  int num_ranks;
  int num_cores;
  RankBlock block;
  ProgramState& at(int rank, int core) const {
    return *all[rank * num_cores + core];
  }
};

// What a round's exchanges work on: the other processes, every program
// (and which ranks this process holds), this process's device memory and
// the graph.
struct Round {
  Transport& transport;
  Programs programs;
  DeviceMemory& memory;
  const proto::Graph& graph;
};

// The first group that failed in this process during a round's firing:
// its position in firing order and the number of the failing call within
// its execution (interp/remote_member.h's CountingContext), or -1.
struct GroupFailure {
  int64_t fired = -1;
  int64_t call = 0;
  absl::Status status;
  // Instructions executed by every program before the group: what the
  // run reports as executed when it stops there.
  int64_t executed = 0;
};

// A process whose memory budget is overdrawn at a round's end
// (MemoryBudget::Overdrawn) fails after every group of the round: its
// `fired` in a GroupFailure.
inline constexpr int64_t kAfterEveryGroup = INT64_MAX;

// What a process keeps of a group it fired, when every write is reported:
// enough to end its execution where another process's member failed.
struct FiredHere {
  bool executed = false;    // its members' execution ran here
  int64_t stopped_at = -1;  // the call it failed at here, or -1
  std::vector<MemberContribution> contributions;
  std::vector<TensorSnapshot> before;  // what its members may write
};

// Tells every process where this process's programs got to in their
// segments and how they ended, and learns the same of theirs: remote
// programs advance to where their process ran them, and `errors` gets
// their errors, so every process finds the same first one. The writes
// reported so far (`write_sequence`) are the last process's count, whose
// turn came last.
absl::Status ShareSegments(const Round& round,
                           std::vector<absl::Status>& errors,
                           int64_t& write_sequence);

// After a round's groups have fired (or before the run stops at its step
// limit in the middle of them, or after each group when every write is
// reported): the first group failure of any process, in firing order and
// call number, as one process would have met it; `fired` is -1 if none.
absl::StatusOr<GroupFailure> FirstFailure(Transport& transport,
                                          const GroupFailure& failure);

// The first failure (FirstFailure) is the run's error, with the
// instruction count it had there.
absl::Status AgreeOnFailure(Transport& transport, const GroupFailure& failure,
                            int64_t* executed);

// At a round's end: AgreeOnFailure, where this process fails after every
// group with `overdrawn` when that is an error and no group failed here.
// A process over its memory budget then stops with every other, each
// reporting the first failure (a group's before any budget's).
absl::Status AgreeAtRoundEnd(Transport& transport, GroupFailure failure,
                             absl::Status overdrawn, int64_t executed_now,
                             int64_t* executed);

// The tensors an instruction writes, each once, in operand order, as
// declared: what on_write is told of (those `filter` accepts). Known from
// the instruction alone, so a process counts the events of members it
// does not hold as well.
void WrittenTensors(const proto::Graph& graph, const proto::Instruction& instr,
                    const std::function<bool(const proto::Tensor&)>& filter,
                    std::vector<const proto::Tensor*>& written);

// Fires a ready group that may span processes: only the processes holding
// a member execute it, each over its own members and the others'
// contributions. A failure is recorded in `failure` (the run goes on to
// the end of the round's groups, so that every process fires the same
// ones); what is returned is a failure to reach another process. With
// `here` (every write reported), what the members may write is saved
// first, and `here` says how the execution went.
absl::Status FireAcrossProcesses(const Round& round, ProgramState& p,
                                 const ops::OpDef& def,
                                 const std::vector<ProgramState*>& group,
                                 int64_t fired, int64_t executed,
                                 GroupFailure& failure, FiredHere* here);

// When every write is reported and a member of the group failed first in
// another process (`first`, from FirstFailure): if this process's members'
// execution went past that call, what they wrote is put back and they
// execute again up to it, so that memory is as one process leaves it.
absl::Status EndAtFailure(const Round& round, ProgramState& p,
                          const ops::OpDef& def,
                          const std::vector<ProgramState*>& group,
                          const FiredHere& here, const GroupFailure& first);

}  // namespace nkigraph::interp

#endif  // NKIGRAPH_INTERP_CROSS_PROCESS_ROUND_H_
