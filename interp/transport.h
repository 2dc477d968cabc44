#ifndef NKIGRAPH_INTERP_TRANSPORT_H_
#define NKIGRAPH_INTERP_TRANSPORT_H_

// How the processes of one run talk: a run may spread its ranks over
// several processes (`mpirun -np P nkigraph run`), each holding a
// contiguous block of ranks with all their cores. The scheduler keeps
// every process's view of a round identical by exchanging, through this
// interface, what each process's programs did; the data of collectives
// between ranks of different processes travels through it too. The
// single-process run uses LocalTransport and exchanges nothing.
//
// The interpreter library knows only this interface; dist/ implements it
// with MPI when the build found MPI.

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"

namespace nkigraph::interp {

// The ranks [first, end) one process holds.
struct RankBlock {
  int first = 0;
  int end = 0;
  bool Holds(int rank) const { return rank >= first && rank < end; }
  int size() const { return end - first; }
};

// Process p of P holds ranks [p * R / P, (p + 1) * R / P): contiguous
// blocks whose sizes differ by at most one (3 processes over 4 ranks hold
// 1, 1 and 2 ranks).
RankBlock BlockOf(int process, int num_processes, int num_ranks);
// The process holding `rank`.
int ProcessOfRank(int rank, int num_processes, int num_ranks);

class Transport {
 public:
  virtual ~Transport() = default;

  // This process's index, and how many processes the run has.
  virtual int process() const = 0;
  virtual int num_processes() const = 0;

  // Every process calls this in the same order; each gets every process's
  // `mine`, by process index (its own included).
  virtual absl::StatusOr<std::vector<std::string>> AllGather(
      absl::string_view mine) = 0;
  // Sends `mine` to each of `peers` (other processes) and returns what each
  // of them sent, in the order of `peers`. The peers call it with this
  // process among theirs, in the same order relative to one another.
  virtual absl::StatusOr<std::vector<std::string>> Exchange(
      absl::Span<const int> peers, absl::string_view mine) = 0;
  // Point to point, for phases that run one process after another.
  virtual absl::Status Send(int to, absl::string_view bytes) = 0;
  virtual absl::StatusOr<std::string> Receive(int from) = 0;
};

// One process holding every rank: nothing to exchange.
class LocalTransport : public Transport {
 public:
  int process() const override { return 0; }
  int num_processes() const override { return 1; }
  absl::StatusOr<std::vector<std::string>> AllGather(
      absl::string_view mine) override {
    return std::vector<std::string>{std::string(mine)};
  }
  absl::StatusOr<std::vector<std::string>> Exchange(
      absl::Span<const int> peers, absl::string_view mine) override;
  absl::Status Send(int to, absl::string_view bytes) override;
  absl::StatusOr<std::string> Receive(int from) override;
};

}  // namespace nkigraph::interp

#endif  // NKIGRAPH_INTERP_TRANSPORT_H_
