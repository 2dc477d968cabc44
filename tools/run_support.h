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
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "interp/interpreter.h"
#include "proto/nkigraph.pb.h"
#include "util/host_array.h"
#include "util/named_array.h"

namespace nkigraph::tools {

// Reports a failed load or run of a graph: device errors (races, deadlocks,
// out-of-bounds accesses, ...) print `nkigraph <verb>: device error: ...`
// with their multi-line detail and return kExitFailure; anything else is a
// one-line error returning kExitError.
int ReportRunError(absl::string_view verb, const absl::Status& status);

// Parses a non-negative integer option value; `what` names the option.
absl::StatusOr<uint64_t> ParseCount(absl::string_view text,
                                    absl::string_view what);

// --- Arrays ------------------------------------------------------------

// The bundle's NamedArray (util/named_array.h).
using ::nkigraph::FromNamedArray;
using ::nkigraph::ToNamedArray;

// Every input as the device holds it now: after SetInput, rounded to its
// declared dtype; 2-byte inputs as uint16 raw bits (or, with kValues, as
// float32 or int32 values like the others). Per-rank inputs of multi-rank
// graphs are stacked along a leading [num_ranks] axis, as in .npy files.
// Read before Run: inputs written in place are overwritten by it.
absl::StatusOr<std::vector<HostArray>> ReadInputs(
    const interp::Interpreter& interp,
    interp::Interpreter::HostForm form =
        interp::Interpreter::HostForm::kRawBits16);
// Every output, in the graph's order; with kRawBits16, 2-byte outputs as
// uint16 raw bits.
absl::StatusOr<std::vector<HostArray>> ReadOutputs(
    const interp::Interpreter& interp,
    interp::Interpreter::HostForm form =
        interp::Interpreter::HostForm::kValues);

// "[1, 2]": the multi-index of flat element `flat` of an array of `shape`.
std::string IndexString(const std::vector<int64_t>& shape, int64_t flat);
std::string ShapeString(const std::vector<int64_t>& shape);

// `name` made safe as a file name: characters other than letters, digits,
// '.', '_' and '-' become '_'.
std::string SafeFileName(absl::string_view name);

// Creates `dir` and its parents as needed.
absl::Status MakeDirectories(const std::string& dir);

// Writes DIR/<name>.npy for every array (creating DIR). Each file is
// written atomically.
absl::Status WriteArrays(const std::string& dir,
                         const std::vector<HostArray>& arrays);

// --- Tensor dumps (run --dump) -----------------------------------------

// Writes a tensor to DIR/<seq>_<tensor>_i<instr id>[_r<rank>][_c<core>].npy
// each time an instruction writes it, for the tensors whose name the
// filter (a std::regex, searched in the name) matches; `seq` is
// zero-padded so that `ls` lists the files in write order.
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
  int64_t files_written() const { return files_written_; }

  // After a run stopped: the current state of every tensor the filter
  // names, from every program that holds it, as
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
  int64_t sequence_ = 0;
  int64_t files_written_ = 0;
  absl::Status status_;
};

}  // namespace nkigraph::tools

#endif  // NKIGRAPH_TOOLS_RUN_SUPPORT_H_
