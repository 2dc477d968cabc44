#include "interp/interpreter.h"

#include <algorithm>
#include <memory>
#include <utility>

#include "absl/strings/str_cat.h"
#include "graph/describe.h"
#include "graph/validate.h"
#include "interp/device_memory.h"
#include "interp/interpreter_impl.h"
#include "interp/program_state.h"
#include "interp/race_scope.h"
#include "interp/transport.h"
#include "ops/access_pattern.h"
#include "util/dtype.h"
#include "util/status_macros.h"

namespace nkigraph::interp {

namespace {

// The ranks this process holds of a run spread over processes.
absl::StatusOr<RankBlock> HeldBlock(const proto::Graph& g,
                                    const Transport& transport) {
  const int ranks = static_cast<int>(g.world().num_ranks());
  const int processes = transport.num_processes();
  if (processes > std::max(1, ranks)) {
    return DiagnosticError(
        absl::StatusCode::kInvalidArgument,
        MakeDiagnostic(
            DiagnosticKind::kInput,
            absl::StrCat("the run has ", processes,
                         " processes but the graph only ", std::max(1, ranks),
                         " rank(s); each process needs a rank")));
  }
  return BlockOf(transport.process(), processes, std::max(1, ranks));
}

}  // namespace

Interpreter::Interpreter(HeldGraph held)
    : held_(std::move(held)), graph_(held_.graph()) {}
Interpreter::~Interpreter() = default;

absl::StatusOr<std::unique_ptr<Interpreter>> Interpreter::Create(
    proto::Graph graph, RunOptions options) {
  HeldGraph held;
  held.heap = std::move(graph);
  return CreateHeld(std::move(held), std::move(options));
}

absl::StatusOr<std::unique_ptr<Interpreter>> Interpreter::Create(
    ArenaGraph graph, RunOptions options) {
  HeldGraph held;
  held.arena.emplace(std::move(graph));
  return CreateHeld(std::move(held), std::move(options));
}

absl::StatusOr<std::unique_ptr<Interpreter>> Interpreter::CreateHeld(
    HeldGraph held, RunOptions options) {
  NKI_RETURN_IF_ERROR(graph::CheckGraph(held.graph()));
  std::unique_ptr<Interpreter> interp(new Interpreter(std::move(held)));
  interp->options_ = std::move(options);
  const proto::Graph& g = interp->graph_;
  const int ranks = static_cast<int>(g.world().num_ranks());
  const int cores = static_cast<int>(g.world().num_cores());
  if (interp->options_.budget != nullptr) {
    interp->budget_ = interp->options_.budget;
  } else {
    interp->owned_budget_ =
        std::make_unique<MemoryBudget>(interp->options_.memory_limit_bytes);
    interp->budget_ = interp->owned_budget_.get();
  }
  MemoryBudget& budget = *interp->budget_;
  RankBlock block{0, ranks};
  if (Transport* transport = interp->options_.transport; transport != nullptr) {
    NKI_ASSIGN_OR_RETURN(block, HeldBlock(g, *transport));
  }
  NKI_ASSIGN_OR_RETURN(const int64_t memory_bytes,
                       DeviceMemory::BytesNeeded(g, block.size()));
  if (memory_bytes > budget.available()) {
    return DiagnosticError(
        absl::StatusCode::kResourceExhausted,
        MakeDiagnostic(
            DiagnosticKind::kResource,
            absl::StrCat("the graph needs ", memory_bytes,
                         " bytes of device memory and its shadow state; with "
                         "the ",
                         budget.used(),
                         " bytes already held that is over the limit of ",
                         budget.limit(), " (raise --memory-limit)")));
  }
  // Executing an instruction buffers each operand: read into, or written
  // from, at least one byte per byte of it. Refuse an instruction whose
  // buffers alone would break the limit (e.g. a stride-0 pattern walking a
  // small tensor billions of times) instead of allocating them.
  const int64_t available = budget.available() - memory_bytes;
  for (const proto::Stream& stream : g.streams()) {
    for (const proto::Instruction& instr : stream.instructions()) {
      int64_t bytes = 0;
      for (const proto::AccessPattern& ap : instr.operands()) {
        if (ap.tensor_id() == 0) continue;
        const proto::Tensor& t =
            g.tensors(static_cast<int>(ap.tensor_id()) - 1);
        bytes += ops::ApElements(ap) * DTypeSize(t.dtype());
      }
      if (bytes > available) {
        return DiagnosticError(
            absl::StatusCode::kResourceExhausted,
            graph::InstructionDiagnostic(
                DiagnosticKind::kResource, g, instr,
                absl::StrCat("its operands need ", bytes,
                             " bytes of buffers; with the device memory that "
                             "is over the limit of ",
                             budget.limit(), " (raise --memory-limit)")));
      }
    }
  }
  NKI_ASSIGN_OR_RETURN(
      DeviceMemory memory,
      DeviceMemory::Create(g, &budget, block.first, block.end));
  // Race-detection state grows with the distinct access runs seen on
  // shared tensors two cores touch; it is charged as it grows.
  interp->impl_ = std::make_unique<Impl>(std::move(memory), ranks, cores,
                                         &budget, ComputeRaceScopes(g));
  Impl& impl = *interp->impl_;
  impl.num_ranks = ranks;
  impl.num_cores = cores;
  impl.transport = interp->options_.transport;
  impl.block = block;
  // The decoded streams are the graph's own description in another form,
  // smaller than the parsed graph the interpreter holds; like it, they are
  // not charged to the run's budget (which counts device memory, shadow,
  // race state and host arrays).
  impl.decoded.reserve(g.streams_size());
  for (const proto::Stream& stream : g.streams()) {
    NKI_ASSIGN_OR_RETURN(
        ops::DecodedStream decoded,
        ops::DecodedStream::Decode(stream, g.tensors(), g.world()));
    impl.decoded.push_back(std::move(decoded));
  }
  for (int r = 0; r < ranks; ++r) {
    for (int c = 0; c < cores; ++c) {
      impl.programs.push_back(std::make_unique<ProgramState>(
          g, impl.decoded[c], impl.memory, impl.race, impl.race_scopes, r, c));
    }
  }
  impl.input_set.assign(g.tensors_size(), false);
  return interp;
}

RankBlock Interpreter::HeldRanks() const { return impl_->block; }

void Interpreter::RecordResolvedOffsets(graph::ResolvedOffsets* sink) {
  impl_->resolved_sink = sink;
}

}  // namespace nkigraph::interp
