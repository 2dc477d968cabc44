#ifndef NKIGRAPH_INTERP_INTERPRETER_H_
#define NKIGRAPH_INTERP_INTERPRETER_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "graph/regions.h"
#include "interp/transport.h"
#include "proto/nkigraph.pb.h"
#include "util/graph_io.h"
#include "util/host_array.h"
#include "util/memory_budget.h"

namespace nkigraph::interp {

struct RunOptions {
  // What the run may hold: device memory with its shadow state, race-
  // detection state as it grows, the host arrays the interpreter makes
  // (random inputs). A graph whose memories cannot fit is refused by
  // Create; a run stops with ResourceExhausted where a charge would pass
  // the limit. With `budget` set, that budget (shared with the caller's
  // host arrays, which it must outlive the interpreter) is used and
  // `memory_limit_bytes` ignored; otherwise the interpreter keeps its own
  // of `memory_limit_bytes`.
  int64_t memory_limit_bytes = MemoryBudget::kDefaultLimit;
  MemoryBudget* budget = nullptr;
  // Stop after this many instructions (0: no limit) with ResourceExhausted
  // naming the instruction where the run stopped.
  int64_t max_steps = 0;
  // Called after every instruction, once per tensor it wrote that
  // `write_filter` accepts (every one when it is unset).
  struct WriteEvent {
    int rank;
    int core;
    const proto::Instruction* instr;
    const proto::Tensor* tensor;  // as declared (not a bitcast view)
    // The event's place among all the run's events in the one-thread
    // order, counted from 0 at each Run; across processes too (each
    // process is told only its own programs' events).
    int64_t sequence;
  };
  // Setting it makes the programs run one at a time, in the one-thread
  // order, and stop at the first error: each event may read the machine.
  // Across processes they then run one process after another: each round's
  // segments in process order, each group's outcome agreed on before the
  // next group fires, so memory at every event and when the run stops is
  // the single process's.
  std::function<void(const WriteEvent&)> on_write;
  std::function<bool(const proto::Tensor&)> write_filter;

  // How many threads run the programs (ranks x cores); 0: one per core of
  // the machine. Outputs, errors, deadlock and race reports are the same
  // for every count: a core of a rank executes an instruction only once
  // the lower cores have passed every instruction before their next
  // synchronisation that may touch a common HBM block with a write
  // (interp/segment_footprint.h), and when programs fail the one reported
  // is the first a one-thread run reaches.
  int threads = 0;

  // Progress of a run: instructions executed so far of all the programs'
  // streams together.
  struct Progress {
    int64_t done = 0;
    int64_t total = 0;
    double elapsed_seconds = 0;
    bool finished = false;  // the last call, when Run returns
  };
  // Called from a thread of the interpreter's about every
  // `progress_interval_seconds` while Run runs, then once with `finished`.
  std::function<void(const Progress&)> on_progress;
  double progress_interval_seconds = 0.5;

  // A run spread over several processes (`mpirun -np P`; dist/): each
  // process holds a contiguous block of ranks (interp/transport.h's
  // BlockOf), allocates device memory for those alone and runs their
  // programs; outputs, errors and deadlock reports are the single
  // process's. Inputs are set, and outputs read, for the ranks held here
  // (HeldRanks). Null: this process holds every rank. Must outlive the
  // interpreter.
  Transport* transport = nullptr;
};

// Device errors (out of bounds at run time, races, deadlocks, reads of
// memory never written, ...) come back with this code; bad graphs and bad
// inputs with InvalidArgument.
inline constexpr absl::StatusCode kDeviceErrorCode = absl::StatusCode::kAborted;

class ProgramState;

// Executes a graph on a memory-model device: num_ranks x num_cores
// programs, each running its core's instruction stream, synchronising at
// core_barrier / sendrecv / collectives.
class Interpreter {
 public:
  // Validates the graph (see ValidateGraph) and sizes the device.
  static absl::StatusOr<std::unique_ptr<Interpreter>> Create(
      proto::Graph graph, RunOptions options = {});
  // The same for a graph on its arena (LoadGraph, ParseGraph), which the
  // interpreter keeps and runs where it lies: no copy onto the heap.
  static absl::StatusOr<std::unique_ptr<Interpreter>> Create(
      ArenaGraph graph, RunOptions options = {});
  ~Interpreter();

  const proto::Graph& graph() const { return graph_; }
  // Names of inputs and outputs, in tensor order.
  std::vector<std::string> InputNames() const;
  std::vector<std::string> OutputNames() const;
  // The .npy shape an input or output has: a leading [num_ranks] axis for
  // per-rank tensors of multi-rank graphs.
  std::vector<int64_t> HostShape(const proto::Tensor& tensor) const;
  const proto::Tensor* FindInput(const std::string& name) const;
  const proto::Tensor* FindOutput(const std::string& name) const;

  // Loads an input (float32 rounded to the declared dtype; int32 for
  // integer tensors; uint16 raw bits, copied bit for bit, for any 2-byte
  // tensor); errors name the input and the expected shape. Only the ranks
  // this process holds are loaded; a per-rank input may then come as
  // their rows alone (leading axis HeldRanks().size()).
  absl::Status SetInput(const HostArray& array);
  // The same from values held elsewhere (a mapped .npy file, util/npy.h's
  // MapNpy): `values` elements of `dtype` (FLOAT32, INT32 or UINT16) at
  // `data`, laid out as `shape`, copied straight into device memory; only
  // the ranks this process holds are read.
  // When the values are a file's bytes as the device holds them (uint16
  // raw bits, float32 into float32, int32 into int32), `file` (when given)
  // says where `data` lies in an open file: its whole pages are then
  // mapped into device memory rather than copied (copy-on-write: the file
  // never changes), so a model's weights are held once, in the page cache.
  struct InputFile {
    int fd = -1;
    int64_t offset = 0;  // of `data` in the file
  };
  absl::Status SetInputValues(const std::string& name, proto::DType dtype,
                              const std::vector<int64_t>& shape, int64_t values,
                              const void* data,
                              const InputFile* file = nullptr);
  // Fills every input not yet set with deterministic random values: an
  // input that declares a value range gets whole numbers uniform in it
  // (0 or 1 for a 0/1 mask, valid indices for an index), whatever its
  // dtype; otherwise floats are uniform in [-1, 1) and integers in [0, 8).
  // The draws depend only on the seed and the graph, not on the library.
  absl::Status FillRandomInputs(uint64_t seed);
  std::vector<std::string> MissingInputs() const;

  // Runs every program to completion. Programs run until they reach a
  // synchronising instruction, then the groups whose members have all
  // arrived execute, and so on. After a device error the memory holds, for
  // each program, what it had done by its next synchronising instruction
  // or its own first error (with `on_write`: what the programs before the
  // failing one, and that one up to its error, had done).
  absl::Status Run();

  // How tensors are read back: float32/int32 values, or for 2-byte
  // tensors (bfloat16, float16, int16, uint16) their uint16 raw bits.
  enum class HostForm { kValues, kRawBits16 };

  // Reads an output (all ranks stacked for per-rank outputs; in a process
  // holding some of the ranks, HeldRanks() stacked, and a replicated
  // output from the first of them).
  absl::StatusOr<HostArray> GetOutput(const std::string& name,
                                      HostForm form = HostForm::kValues) const;
  // Reads a host tensor (an input or an output) as the host holds it,
  // shaped as HostShape: a per-rank one with every rank's rows stacked (in
  // a process holding some of the ranks, HeldRanks()'s), a replicated one
  // from the first rank held. Named as the tensor; what GetOutput and the
  // tools reading inputs back share.
  absl::StatusOr<HostArray> ReadHostTensor(
      const proto::Tensor& tensor, HostForm form = HostForm::kValues) const;
  // Reads any tensor as one program sees it; elements never written read
  // as NaN (floats; the dtype's quiet NaN bits as raw bits) or 0.
  absl::StatusOr<HostArray> ReadTensor(uint32_t tensor_id, int rank, int core,
                                       HostForm form = HostForm::kValues) const;

  // The ranks this process holds: all of them unless the run is spread
  // over processes (RunOptions::transport).
  RankBlock HeldRanks() const;

  int64_t instructions_executed() const { return instructions_executed_; }
  // The budget the run charges (the caller's, or the interpreter's own).
  MemoryBudget& budget() const { return *budget_; }

  // From the next Run on, records into `sink` (which must outlive the
  // runs) the elements rank 0's dynamically offset operands reach, by
  // instruction id and operand (graph/regions.h): what the cost model
  // schedules `nkigraph run --timeline` with. nullptr stops recording.
  void RecordResolvedOffsets(graph::ResolvedOffsets* sink);

 private:
  // The graph as given: by value on the heap, or on its own arena.
  struct HeldGraph {
    proto::Graph heap;
    std::optional<ArenaGraph> arena;
    const proto::Graph& graph() const {
      return arena.has_value() ? arena->graph() : heap;
    }
  };
  explicit Interpreter(HeldGraph held);
  static absl::StatusOr<std::unique_ptr<Interpreter>> CreateHeld(
      HeldGraph held, RunOptions options);
  friend class ProgramState;

  // Declared before graph_, which refers to the graph it holds (an arena
  // graph's address stays when it is moved).
  HeldGraph held_;
  const proto::Graph& graph_;
  RunOptions options_;
  // Declared before impl_: what impl_ holds is released to it on
  // destruction.
  std::unique_ptr<MemoryBudget> owned_budget_;
  MemoryBudget* budget_ = nullptr;
  struct Impl;
  std::unique_ptr<Impl> impl_;
  int64_t instructions_executed_ = 0;
};

}  // namespace nkigraph::interp

#endif  // NKIGRAPH_INTERP_INTERPRETER_H_
