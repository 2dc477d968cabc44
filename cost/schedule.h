#ifndef NKIGRAPH_COST_SCHEDULE_H_
#define NKIGRAPH_COST_SCHEDULE_H_

// When each instruction of a graph runs, by the cost model. The model,
// stated exactly:
//
// * Lanes. Every core has one lane per engine (tensor, vector, scalar,
//   gpsimd, sync, collective) and one per DMA engine (`dma_queues` of
//   them). A lane runs its instructions in program order, one at a time.
//   A collective-engine instruction that joins no other program (the
//   ring's rank resolver, a register read) runs on the sync lane, the
//   core's sequencer, not behind the transfers on the collective lane
//   (an assumption: the hardware's queueing of it is not published).
// * DMA. A DMA-engine instruction (dma_copy, dma_transpose, dma_compute,
//   sendrecv) is spread over the DMA engines serving the SBUF partitions
//   it touches (8 partitions per engine; every engine for HBM to HBM), as
//   the DMA guide describes: it starts when all of them are free and holds
//   them for dma_fixed_ns + its charged bytes at their summed bandwidth
//   (cost/instr_cost.h). An engine serves its transfers one after another
//   in program order (the hardware round-robins between its queues; the
//   total is the same), so a core's DMA bandwidth never exceeds engines x
//   engine bandwidth, the table's aggregate.
// * HBM. Each core owns an equal part of its HBM stack's bandwidth
//   (hbm_stack_bytes_per_ns / cores_per_hbm_stack) and serves every
//   instruction touching HBM (DMAs, collectives on HBM buffers) as one
//   FIFO server, in program order: an instruction reserves its HBM bytes
//   (read + written) / that bandwidth, from when its data starts to flow
//   (after the DMA's fixed latency) or when the server frees, whichever is
//   later, and ends no earlier than its reservation. Concurrent DMAs thus
//   share the core's HBM bandwidth, and the bytes served in any interval
//   never exceed it.
// * Dependencies. An instruction starts when its lane is free and every
//   instruction it depends on has ended: read after write, write after
//   read, write after write on the bytes both touch, as graph/dependencies
//   derives them. Statically, a dynamic offset computed from values that
//   do not depend on input data (cost/known_values.h: iota, rank ids,
//   constants and arithmetic on them) touches exactly the rows it
//   reaches; a data-dependent one touches its whole tensor. A caller may
//   pass the dependencies of a run instead.
// * Synchronisation. core_barrier, sendrecv and collectives start together
//   when every participant has arrived (ops/sync_rule.h decides who
//   participates), each on its own core's lane, and all end when the
//   longest participant's transfer ends. A core barrier is also a fence:
//   it waits for everything before it on its core, and nothing after it
//   starts before it ends (it is what orders the cores' accesses to
//   shared memory). sendrecv and collectives order only through the
//   bytes they read and write, so a ring permute overlaps the compute
//   that does not touch its buffers.
// * Ranks. Every rank runs the same streams, so one rank (rank 0) is
//   simulated and the others are taken to be at the same point at the same
//   time: a collective starts when rank 0's participating cores arrive and
//   costs what cost/instr_cost.h says (latency + bytes over the link per
//   ring step), on the core's collective lane, plus its HBM reservation
//   when its buffers are in HBM.
// * Known approximation: the dependency analysis keeps the latest reader
//   per engine, and the DMA engines are one engine to it, so a write waits
//   for the latest DMA reader of its bytes, not for an earlier one on
//   other DMA engines that might end later.
//
// Deterministic: the same graph and table give the same schedule.

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "cost/cost_table.h"
#include "cost/instr_cost.h"
#include "graph/dependencies.h"
#include "graph/graph_index.h"

namespace nkigraph::cost {

// Lanes of a core: the engines in ops::Engine order (the kDma lane stays
// empty), then the DMA engines.
inline constexpr int kFirstDmaLane = graph::kNumEngines;
std::string LaneName(int lane);  // "tensor", ..., "dma e0", "dma e1", ...

struct Slot {
  double start_ns = 0;
  double end_ns = 0;
  int lane = 0;
  int lanes = 1;  // a DMA's engines: lanes [lane, lane + lanes)
  // The instruction whose end (or whose lane, or whose late arrival at a
  // sync) decided this one's start; -1 when it started at time 0.
  int critical = -1;
};

// A wait on another core: `to` could not start before `from`, the last
// participant to arrive at their sync, arrived.
struct SyncWait {
  int from = 0;
  int to = 0;
};

struct Schedule {
  const graph::GraphIndex* index = nullptr;
  const CostTable* table = nullptr;
  std::vector<Slot> slots;       // by instruction index
  std::vector<InstrCost> costs;  // by instruction index
  std::vector<SyncWait> waits;
  int lanes_per_core = 0;
  double makespan_ns = 0;
  // Static scheduling only: operands with a dynamic offset, and how many
  // of them are data-dependent (taken to touch their whole tensor).
  int64_t dynamic_operands = 0;
  int64_t data_dependent_offsets = 0;
};

// Schedules `index` with `deps` (sorted by (to, from), as
// AnalyzeDependencies returns them). A deadlock (programs stuck at
// synchronisation) is a diagnostic naming each stuck program.
absl::StatusOr<Schedule> ScheduleGraph(
    const graph::GraphIndex& index, const CostTable& table,
    absl::Span<const graph::Dependency> deps);

// The same, deriving the dependencies statically, with the dynamic offsets
// the graph computes without input data resolved (cost/known_values.h).
absl::StatusOr<Schedule> ScheduleGraph(const graph::GraphIndex& index,
                                       const CostTable& table);

}  // namespace nkigraph::cost

#endif  // NKIGRAPH_COST_SCHEDULE_H_
