#ifndef NKIGRAPH_DIST_MPI_TRANSPORT_H_
#define NKIGRAPH_DIST_MPI_TRANSPORT_H_

// interp::Transport over MPI (Open MPI's mpirun): the processes of
// MPI_COMM_WORLD are the run's processes, in rank order. Every wait is
// bounded: a peer that does not answer within the timeout (killed, hung)
// makes the waiting call fail with DeadlineExceeded naming it, instead of
// leaving this process waiting for ever.
//
// An MPI message carries at most 2 GiB (its count is an int): longer
// messages travel as pieces of at most `max_message_bytes` each.
//
// Only the thread that joined calls MPI.

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "interp/transport.h"

namespace nkigraph::dist {

class MpiTransport : public interp::Transport {
 public:
  // The largest piece a message travels in by default: 1 GiB.
  static constexpr int64_t kDefaultMaxMessageBytes = int64_t{1} << 30;

  // Initialises MPI; `timeout_seconds` bounds every wait for a peer;
  // messages travel in pieces of at most `max_message_bytes` (in
  // [1, INT_MAX]; smaller than the default only to test the pieces).
  static absl::StatusOr<std::unique_ptr<MpiTransport>> Join(
      double timeout_seconds,
      int64_t max_message_bytes = kDefaultMaxMessageBytes);
  // Finalises MPI.
  ~MpiTransport() override;

  int process() const override { return process_; }
  int num_processes() const override { return processes_; }
  absl::StatusOr<std::vector<std::string>> AllGather(
      absl::string_view mine) override;
  absl::StatusOr<std::vector<std::string>> Exchange(
      absl::Span<const int> peers, absl::string_view mine) override;
  absl::Status Send(int to, absl::string_view bytes) override;
  absl::StatusOr<std::string> Receive(int from) override;

  // Ends every process of the run with `exit_code` (MPI_Abort): for an
  // error only this process knows of.
  [[noreturn]] void Abort(int exit_code);

 private:
  MpiTransport(int process, int processes, double timeout_seconds,
               int64_t max_message_bytes)
      : process_(process),
        processes_(processes),
        timeout_(timeout_seconds),
        piece_(max_message_bytes) {}

  // Sends `bytes` to `to` on `tag` as its length, then its pieces; and
  // receives what that sent.
  absl::Status SendPieces(int to, int tag, absl::string_view bytes);
  absl::StatusOr<std::string> ReceivePieces(int from, int tag);

  const int process_;
  const int processes_;
  const double timeout_;
  const int64_t piece_;
};

}  // namespace nkigraph::dist

#endif  // NKIGRAPH_DIST_MPI_TRANSPORT_H_
