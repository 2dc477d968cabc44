#ifndef NKIGRAPH_TOOLS_RUN_SUPPORT_H_
#define NKIGRAPH_TOOLS_RUN_SUPPORT_H_

// What the verbs that execute graphs (run, replay, verify) share: reading
// inputs and outputs off the interpreter, converting them to and from the
// bundle's NamedArray, writing them as .npy files, tensor dumps, and
// reporting run errors with the right exit code.

#include <cstdint>
#include <memory>
#include <regex>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "interp/interpreter.h"
#include "proto/nkigraph.pb.h"
#include "util/file_io.h"  // SafeFileName
#include "util/graph_source.h"
#include "util/host_array.h"
#include "util/memory_budget.h"
#include "util/named_array.h"

namespace nkigraph::tools {

// Reports a failed load or run of a graph: device errors (races, deadlocks,
// out-of-bounds accesses, ...) print `nkigraph <verb>: device error: ...`
// with their multi-line detail and return kExitFailure; anything else is a
// one-line error returning kExitError.
int ReportRunError(absl::string_view verb, const absl::Status& status);

// Reads the graph a verb is given: a graph file, or a replay bundle, whose
// graph it uses, saying so on stderr ("nkigraph <verb>: 'b.pb' is a replay
// bundle; using its graph"; nothing with JSON diagnostics).
absl::StatusOr<GraphSource> ReadGraphArg(absl::string_view verb,
                                         const std::string& path,
                                         bool check_schema = true);
// The same onto an arena (LoadGraph), for verbs that only look at it.
absl::StatusOr<ArenaGraphSource> LoadGraphArg(absl::string_view verb,
                                              const std::string& path);

// Parses a non-negative integer option value; `what` names the option.
absl::StatusOr<uint64_t> ParseCount(absl::string_view text,
                                    absl::string_view what);

// --- Host memory (what --memory-limit counts besides the device) --------

// Host bytes of `graph`'s inputs, or outputs, as .npy arrays hold them
// (per-rank tensors stacked over the ranks): 4 per element, 2 for a 2-byte
// tensor when `raw_bits16` (inputs read back for a bundle or a reference
// are raw bits).
int64_t HostInputBytes(const proto::Graph& graph, bool raw_bits16);
int64_t HostOutputBytes(const proto::Graph& graph, bool raw_bits16);

// The most host memory writing the outputs holds at once
// (WriteOutputsTogether): the largest output, a per-rank one by one rank's
// rows.
int64_t HostOutputWriteBytes(const proto::Graph& graph, bool raw_bits16);

// The size of the file at `path`; 0 when it cannot be sized (reading it
// then reports why).
int64_t FileBytes(const std::string& path);

// The check made before anything large is allocated: the parts a run will
// hold (what, bytes), summed against what `budget` has left; a resource
// error listing them when they do not fit.
absl::Status CheckMemoryPlan(
    const MemoryBudget& budget,
    const std::vector<std::pair<std::string, int64_t>>& parts);

// Reads an .npy input, charging `budget` its file's size twice while it is
// read (the file's bytes and the array), then once, appended to `held`,
// for the array.
absl::StatusOr<HostArray> ReadNpyCharged(const std::string& path,
                                         MemoryBudget& budget,
                                         std::vector<ScopedCharge>& held);

// --- Arrays ------------------------------------------------------------

// The bundle's NamedArray (util/named_array.h).
using ::nkigraph::FromNamedArray;
using ::nkigraph::ToNamedArray;

// Every input as the device holds it now (in a process holding some of
// the ranks, per-rank inputs with those ranks' rows alone): after SetInput,
// rounded to its declared dtype; 2-byte inputs as uint16 raw bits (or, with
// kValues, as float32 or int32 values like the others). Per-rank inputs of
// multi-rank graphs are stacked along a leading [num_ranks] axis, as in .npy
// files. Read before Run: inputs written in place are overwritten by it. Each
// array is charged to the interpreter's budget before it is read, the charge
// appended to `held` (when given; otherwise not charged).
absl::StatusOr<std::vector<HostArray>> ReadInputs(
    const interp::Interpreter& interp,
    interp::Interpreter::HostForm form =
        interp::Interpreter::HostForm::kRawBits16,
    std::vector<ScopedCharge>* held = nullptr);
// Charges the host memory of `tensor` read as a host array (per-rank
// tensors: this process's ranks' rows) to the interpreter's budget as
// `what`, appending the charge to `held` (null: nothing charged).
absl::Status ChargeHostArray(const interp::Interpreter& interp,
                             const proto::Tensor& tensor, bool raw_bits16,
                             absl::string_view what,
                             std::vector<ScopedCharge>* held);
// Every output, in the graph's order; with kRawBits16, 2-byte outputs as
// uint16 raw bits. Charged like ReadInputs.
absl::StatusOr<std::vector<HostArray>> ReadOutputs(
    const interp::Interpreter& interp,
    interp::Interpreter::HostForm form = interp::Interpreter::HostForm::kValues,
    std::vector<ScopedCharge>* held = nullptr);

// Copies the arrays into `bundle`'s inputs or outputs, charging `budget`
// for the copies (appended to `held`).
absl::Status AddToBundle(const std::vector<HostArray>& arrays, bool outputs,
                         proto::Bundle& bundle, MemoryBudget& budget,
                         std::vector<ScopedCharge>& held);

// "[1, 2]": the multi-index of flat element `flat` of an array of `shape`.
std::string IndexString(const std::vector<int64_t>& shape, int64_t flat);
std::string ShapeString(const std::vector<int64_t>& shape);

// Creates `dir` and its parents as needed.
absl::Status MakeDirectories(const std::string& dir);

// Writes DIR/<name>.npy for every array (creating DIR). Each file is
// written atomically.
absl::Status WriteArrays(const std::string& dir,
                         const std::vector<HostArray>& arrays);

// --- Tensor dumps (run --dump) -----------------------------------------

// Writes a tensor to DIR/<seq>_<tensor>_i<instr id>[_r<rank>][_c<core>].npy
// each time an instruction writes it, for the tensors whose name the
// filter (a std::regex, searched in the name) matches; `seq`, the write's
// place in the run's one-thread order (RunOptions::WriteEvent::sequence),
// is zero-padded so that `ls` lists the files in write order. In a process
// of a run spread over several, only its ranks' files: together the
// processes write the single process's files.
class TensorDumper {
 public:
  static absl::StatusOr<std::unique_ptr<TensorDumper>> Create(
      const std::string& dir, const std::string& filter);

  // Installs the dumper as `options.on_write`. The dumper must outlive the
  // interpreter's runs, and `SetInterpreter` must be called before Run.
  void Attach(interp::RunOptions& options);
  void SetInterpreter(const interp::Interpreter* interp) { interp_ = interp; }

  // The first error writing a dump file (dumping stops at it).
  const absl::Status& status() const { return status_; }
  // Files this process wrote.
  int64_t files_written() const { return files_written_; }

  // After a run stopped: the current state of every tensor the filter
  // names, from every program (of this process's ranks) that holds it, as
  // DIR/final_<tensor>_t<tensor id>[_r<rank>][_c<core>].npy. On-chip
  // tensors whose lifetime has ended show whatever now occupies their
  // address.
  absl::Status DumpFinalState();

 private:
  TensorDumper(std::string dir, std::regex filter)
      : dir_(std::move(dir)), filter_(std::move(filter)) {}

  void OnWrite(const interp::RunOptions::WriteEvent& event);
  bool Matches(const proto::Tensor& tensor);
  std::string Suffix(int rank, int core, bool with_core) const;

  std::string dir_;
  std::regex filter_;
  const interp::Interpreter* interp_ = nullptr;
  // By tensor index: 0 unknown, 1 matches, 2 does not.
  std::vector<uint8_t> matches_;
  int64_t files_written_ = 0;
  absl::Status status_;
};

}  // namespace nkigraph::tools

#endif  // NKIGRAPH_TOOLS_RUN_SUPPORT_H_
