// What the processes of a run spread over several tell each other in a
// round (see cross_process_round.h).
#include "interp/cross_process_round.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"
#include "interp/round_wire.h"
#include "interp/run_errors.h"
#include "ops/op_util.h"
#include "util/status_macros.h"

namespace nkigraph::interp {
namespace {

// Executes a ready group over this process's members (their
// ProgramStates, bound) and the others' `contributions`, numbering the
// calls (`stop_at`: see CountingContext). A failure comes back as the
// device error, its call number in `failed_call`.
absl::Status ExecuteHere(const Round& round, ProgramState& p,
                         const ops::OpDef& def,
                         const std::vector<ProgramState*>& group,
                         const std::vector<MemberContribution>& contributions,
                         int64_t stop_at, int64_t* failed_call) {
  const Programs& impl = round.programs;
  const int n = static_cast<int>(group.size());
  const ops::InstrView* view = nullptr;
  for (int j = 0; j < n && view == nullptr; ++j) {
    if (impl.block.Holds(group[j]->rank())) view = &group[j]->view();
  }
  std::vector<std::unique_ptr<RemoteMember>> remotes;
  std::vector<std::unique_ptr<CountingContext>> counted;
  std::vector<ops::ExecContext*> contexts;
  int64_t calls = 0;
  int64_t first_failure = -1;
  for (int j = 0; j < n; ++j) {
    ops::ExecContext* member = group[j];
    if (!impl.block.Holds(group[j]->rank())) {
      remotes.push_back(std::make_unique<RemoteMember>(
          *view, group[j]->rank(), group[j]->core(), contributions[j]));
      member = remotes.back().get();
    }
    counted.push_back(std::make_unique<CountingContext>(
        *member, calls, first_failure, stop_at));
    contexts.push_back(counted.back().get());
  }
  absl::Status s = def.execute_group(contexts);
  if (s.ok()) return s;
  *failed_call = first_failure >= 0 ? first_failure : calls;
  return DeviceError(round.graph, p, p.current(), s);
}

}  // namespace

absl::Status ShareSegments(const Round& round,
                           std::vector<absl::Status>& errors,
                           int64_t& write_sequence) {
  Transport& transport = round.transport;
  const Programs& impl = round.programs;
  const int processes = transport.num_processes();
  const int cores = impl.num_cores;
  WireWriter out;
  out.Int(write_sequence);
  for (int r = impl.block.first; r < impl.block.end; ++r) {
    for (int c = 0; c < cores; ++c) {
      out.Int(impl.at(r, c).pc());
      out.Status(errors[r * cores + c]);
    }
  }
  NKI_ASSIGN_OR_RETURN(std::vector<std::string> all,
                       transport.AllGather(out.bytes()));
  for (int q = 0; q < processes; ++q) {
    if (q == transport.process()) continue;
    WireReader in(all[q]);
    const int64_t their_sequence = in.Int();
    if (q == processes - 1) write_sequence = their_sequence;
    const RankBlock theirs = BlockOf(q, processes, impl.num_ranks);
    for (int r = theirs.first; r < theirs.end; ++r) {
      for (int c = 0; c < cores; ++c) {
        const int64_t pc = in.Int();
        errors[r * cores + c] = in.Status();
        ProgramState& p = impl.at(r, c);
        NKI_RETURN_IF_ERROR(in.Check("round state"));
        if (pc < p.pc()) {
          return absl::InternalError(
              absl::StrCat("process ", q, " reports rank ", r, " core ", c,
                           " at position ", pc, ", behind ", p.pc()));
        }
        while (p.pc() < pc && !p.done()) p.Advance();
      }
    }
    NKI_RETURN_IF_ERROR(in.Check("round state"));
  }
  return absl::OkStatus();
}

absl::StatusOr<GroupFailure> FirstFailure(Transport& transport,
                                          const GroupFailure& failure) {
  WireWriter out;
  out.Int(failure.fired);
  out.Int(failure.call);
  out.Int(failure.executed);
  out.Status(failure.status);
  NKI_ASSIGN_OR_RETURN(std::vector<std::string> all,
                       transport.AllGather(out.bytes()));
  GroupFailure first;
  for (const std::string& bytes : all) {
    WireReader in(bytes);
    GroupFailure theirs;
    theirs.fired = in.Int();
    theirs.call = in.Int();
    theirs.executed = in.Int();
    theirs.status = in.Status();
    NKI_RETURN_IF_ERROR(in.Check("group outcome"));
    if (theirs.fired < 0) continue;
    if (first.fired < 0 || theirs.fired < first.fired ||
        (theirs.fired == first.fired && theirs.call < first.call)) {
      first = std::move(theirs);
    }
  }
  return first;
}

absl::Status AgreeOnFailure(Transport& transport, const GroupFailure& failure,
                            int64_t* executed) {
  NKI_ASSIGN_OR_RETURN(GroupFailure first, FirstFailure(transport, failure));
  if (first.fired >= 0) *executed = first.executed;
  return first.status;
}

absl::Status AgreeAtRoundEnd(Transport& transport, GroupFailure failure,
                             absl::Status overdrawn, int64_t executed_now,
                             int64_t* executed) {
  if (failure.fired < 0 && !overdrawn.ok()) {
    failure = {kAfterEveryGroup, 0, std::move(overdrawn), executed_now};
  }
  return AgreeOnFailure(transport, failure, executed);
}

void WrittenTensors(const proto::Graph& graph, const proto::Instruction& instr,
                    const std::function<bool(const proto::Tensor&)>& filter,
                    std::vector<const proto::Tensor*>& written) {
  written.clear();
  const ops::OpDef* def = ops::FindOp(instr.opcode());
  for (int i = 0; i < instr.operands_size(); ++i) {
    const uint32_t id = instr.operands(i).tensor_id();
    const ops::OperandRole* role = ops::OperandRoleOf(*def, i);
    if (id == 0 || role == nullptr || role->access == ops::Access::kRead) {
      continue;
    }
    const proto::Tensor* tensor = &graph.tensors(static_cast<int>(id) - 1);
    if (std::find(written.begin(), written.end(), tensor) != written.end()) {
      continue;
    }
    if (filter && !filter(*tensor)) continue;
    written.push_back(tensor);
  }
}

absl::Status FireAcrossProcesses(const Round& round, ProgramState& p,
                                 const ops::OpDef& def,
                                 const std::vector<ProgramState*>& group,
                                 int64_t fired, int64_t executed,
                                 GroupFailure& failure, FiredHere* here) {
  Transport& transport = round.transport;
  const Programs& impl = round.programs;
  const RankBlock& block = impl.block;
  const int n = static_cast<int>(group.size());
  const int processes = transport.num_processes();
  std::vector<int> owner(n);
  int first_local = -1;
  std::vector<int> peers;
  for (int j = 0; j < n; ++j) {
    owner[j] = ProcessOfRank(group[j]->rank(), processes, impl.num_ranks);
    if (block.Holds(group[j]->rank())) {
      if (first_local < 0) first_local = j;
    } else if (std::find(peers.begin(), peers.end(), owner[j]) == peers.end()) {
      peers.push_back(owner[j]);
    }
  }
  if (first_local < 0) return absl::OkStatus();  // none of ours
  std::sort(peers.begin(), peers.end());
  auto fail = [&](int64_t call, absl::Status status) {
    if (failure.fired < 0) {
      failure = {fired, call, std::move(status), executed};
    }
  };

  // Our members' contributions, in group order; theirs.
  WireWriter out;
  std::vector<absl::Status> bound(n);
  for (int j = 0; j < n; ++j) {
    if (block.Holds(group[j]->rank())) {
      bound[j] = WriteContribution(*group[j], out);
    }
  }
  FiredHere local;
  if (here == nullptr) here = &local;
  std::vector<MemberContribution>& contributions = here->contributions;
  contributions.assign(n, MemberContribution{});
  if (!peers.empty()) {
    NKI_ASSIGN_OR_RETURN(std::vector<std::string> replies,
                         transport.Exchange(peers, out.bytes()));
    for (size_t k = 0; k < peers.size(); ++k) {
      WireReader in(replies[k]);
      for (int j = 0; j < n; ++j) {
        if (owner[j] != peers[k]) continue;
        contributions[j] = ReadContribution(in);
        bound[j] = contributions[j].bind;
      }
      NKI_RETURN_IF_ERROR(in.Check("collective operands"));
    }
  }
  // As one process binds the members in group order before executing.
  for (int j = 0; j < n; ++j) {
    if (!bound[j].ok()) {
      fail(-1, bound[j]);
      return absl::OkStatus();
    }
  }

  // Only a group spanning processes can have run past another process's
  // failure.
  if (here != &local && !peers.empty()) {
    std::vector<const proto::Tensor*> written;
    for (ProgramState* q : group) {
      if (!block.Holds(q->rank())) continue;
      WrittenTensors(round.graph, q->current(), nullptr, written);
      for (const proto::Tensor* t : written) {
        here->before.push_back(
            TensorSnapshot::Take(round.memory, *t, q->rank(), q->core()));
      }
    }
  }
  here->executed = true;
  int64_t call = -1;
  if (absl::Status s = ExecuteHere(round, p, def, group, contributions,
                                   /*stop_at=*/-1, &call);
      !s.ok()) {
    here->stopped_at = call;
    fail(call, std::move(s));
  }
  return absl::OkStatus();
}

absl::Status EndAtFailure(const Round& round, ProgramState& p,
                          const ops::OpDef& def,
                          const std::vector<ProgramState*>& group,
                          const FiredHere& here, const GroupFailure& first) {
  if (!here.executed || here.stopped_at == first.call) return absl::OkStatus();
  for (const TensorSnapshot& saved : here.before) saved.Restore(round.memory);
  for (ProgramState* q : group) {
    if (round.programs.block.Holds(q->rank())) {
      NKI_RETURN_IF_ERROR(q->Bind(q->current()));
    }
  }
  int64_t call = -1;
  ExecuteHere(round, p, def, group, here.contributions, first.call, &call)
      .IgnoreError();
  return absl::OkStatus();
}

}  // namespace nkigraph::interp
