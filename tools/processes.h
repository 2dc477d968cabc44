#ifndef NKIGRAPH_TOOLS_PROCESSES_H_
#define NKIGRAPH_TOOLS_PROCESSES_H_

// The processes a verb that executes a graph (run, verify) runs in: this
// one alone, or the ones `mpirun -np P` started, each holding a
// contiguous block of the graph's ranks (interp/transport.h). Built
// without MPI, the command refuses to run as one of several processes.

#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "interp/interpreter.h"
#include "interp/transport.h"
#include "tools/commands.h"
#include "util/host_array.h"

namespace nkigraph::tools {

inline const FlagSpec kPeerTimeoutFlag{"--peer-timeout", "",
                                       /*takes_value=*/true,
                                       /*repeated=*/false};
inline constexpr double kDefaultPeerTimeoutSeconds = 300;

// The environment variable that bounds one MPI message (default 1 GiB,
// at most 2 GiB - 1); longer messages travel in pieces. For tests.
inline constexpr char kMaxMessageBytesVariable[] = "NKIGRAPH_MPI_MESSAGE_BYTES";

// How many processes the launcher started (Open MPI's
// OMPI_COMM_WORLD_SIZE, or PMI_SIZE); 1 outside a launcher.
int LaunchedProcesses();
// Whether this build can join several processes.
bool BuiltWithMpi();

class Processes {
 public:
  // One process, or, under a launcher that started several, all of them
  // (MPI is initialised then, and finalised when this is destroyed);
  // `timeout_seconds` bounds every wait for another process.
  static absl::StatusOr<std::unique_ptr<Processes>> Join(
      double timeout_seconds);
  ~Processes();

  // Null for a single process.
  interp::Transport* transport() const { return transport_.get(); }
  int index() const { return transport_ ? transport_->process() : 0; }
  int count() const { return transport_ ? transport_->num_processes() : 1; }
  bool several() const { return count() > 1; }
  bool first() const { return index() == 0; }

  // Returns once every process has called it.
  absl::Status Barrier() const;
  // Ends every process with `exit_code`: after an error this process
  // alone met, so that none waits for it.
  [[noreturn]] void Abort(int exit_code);

  // GatherToFirst over this run's processes.
  absl::StatusOr<std::vector<HostArray>> GatherToFirst(
      const interp::Interpreter& interp, std::vector<HostArray> arrays) const;
  // Every process's exit code; the worst is returned to all.
  absl::StatusOr<int> WorstExitCode(int mine) const;
  // The sum of every process's `mine`, returned to all.
  absl::StatusOr<int64_t> Sum(int64_t mine) const;

 private:
  explicit Processes(std::unique_ptr<interp::Transport> transport)
      : transport_(std::move(transport)) {}
  std::unique_ptr<interp::Transport> transport_;
};

// The arrays a process read off its interpreter (inputs or outputs, in
// the graph's order, per-rank ones holding its ranks' rows), joined in the
// first process into whole arrays (the others get an empty list):
// per-rank arrays stacked over every process's rows, the others the first
// process's own. Null `transport` (one process): the arrays as they are.
absl::StatusOr<std::vector<HostArray>> GatherToFirst(
    interp::Transport* transport, const interp::Interpreter& interp,
    std::vector<HostArray> arrays);

// Parses --peer-timeout (default kDefaultPeerTimeoutSeconds).
absl::StatusOr<double> PeerTimeout(const ParsedArgs& parsed);

// Whether a run's error is one every process reports alike (a device,
// input or resource error of the run, agreed on by the scheduler), rather
// than a failure to reach another process.
bool AgreedRunError(const absl::Status& status);

// Writes the run's outputs (in `form`) into DIR/<name>.npy together: the
// first process makes each file with its header and full size, every
// process writes its ranks' rows at their offset, reading them off the
// device one rank at a time (no process holds more than one rank's rows
// of an output), and the first renames the file into place; outputs that
// are not per-rank are written whole by the first process. Host memory is
// charged to the interpreter's budget while held.
absl::Status WriteOutputsTogether(const Processes& processes,
                                  const interp::Interpreter& interp,
                                  const std::string& dir,
                                  interp::Interpreter::HostForm form);

}  // namespace nkigraph::tools

#endif  // NKIGRAPH_TOOLS_PROCESSES_H_
