#include "dist/mpi_transport.h"

#include <mpi.h>

#include <algorithm>
#include <chrono>
#include <climits>
#include <cstdint>
#include <cstdlib>
#include <thread>

#include "absl/strings/str_cat.h"
#include "util/status_macros.h"

namespace nkigraph::dist {
namespace {

// Point-to-point messages of Exchange and of Send/Receive; the pair of
// processes and the order of the calls, the same on both ends, keep them
// apart otherwise (MPI does not overtake on one communicator and tag).
constexpr int kExchangeTag = 1;
constexpr int kSendTag = 2;

using Clock = std::chrono::steady_clock;

// Waits politely: a few spins, then sleeps growing to a millisecond, so
// that processes sharing few cores (mpirun --oversubscribe) leave them to
// the process that is computing.
class Backoff {
 public:
  void Pause() {
    if (++rounds_ < 64) {
      std::this_thread::yield();
      return;
    }
    std::this_thread::sleep_for(std::chrono::microseconds(sleep_us_));
    sleep_us_ = std::min(1000, sleep_us_ * 2);
  }

 private:
  int rounds_ = 0;
  int sleep_us_ = 10;
};

absl::Status MpiError(int code, absl::string_view what) {
  char text[MPI_MAX_ERROR_STRING];
  int length = 0;
  MPI_Error_string(code, text, &length);
  return absl::InternalError(
      absl::StrCat("MPI failed ", what, ": ", absl::string_view(text, length)));
}

absl::Status CheckSize(size_t bytes, absl::string_view what) {
  if (bytes > static_cast<size_t>(INT_MAX)) {
    return absl::ResourceExhaustedError(
        absl::StrCat(what, " of ", bytes,
                     " bytes is more than one MPI message carries (2 GiB)"));
  }
  return absl::OkStatus();
}

class Deadline {
 public:
  explicit Deadline(double seconds)
      : seconds_(seconds),
        end_(Clock::now() + std::chrono::duration_cast<Clock::duration>(
                                std::chrono::duration<double>(seconds))) {}
  bool passed() const { return Clock::now() > end_; }
  absl::Status Error(absl::string_view waiting_for) const {
    return absl::DeadlineExceededError(absl::StrCat(
        "no answer from ", waiting_for, " within ", seconds_,
        " s (--peer-timeout): another process of the run has stopped or "
        "hangs"));
  }

 private:
  double seconds_;
  Clock::time_point end_;
};

// Waits for every request, or fails at the deadline.
absl::Status WaitAll(std::vector<MPI_Request>& requests, double timeout,
                     absl::string_view waiting_for) {
  const Deadline deadline(timeout);
  Backoff backoff;
  while (true) {
    int done = 0;
    const int rc = MPI_Testall(static_cast<int>(requests.size()),
                               requests.data(), &done, MPI_STATUSES_IGNORE);
    if (rc != MPI_SUCCESS) return MpiError(rc, waiting_for);
    if (done) return absl::OkStatus();
    if (deadline.passed()) return deadline.Error(waiting_for);
    backoff.Pause();
  }
}

// Receives the next message of `tag` from `from`, whatever its size.
absl::StatusOr<std::string> ReceiveFrom(int from, int tag, double timeout) {
  const Deadline deadline(timeout);
  Backoff backoff;
  MPI_Status status;
  while (true) {
    int found = 0;
    const int rc = MPI_Iprobe(from, tag, MPI_COMM_WORLD, &found, &status);
    if (rc != MPI_SUCCESS) return MpiError(rc, "probing");
    if (found) break;
    if (deadline.passed()) {
      return deadline.Error(absl::StrCat("process ", from));
    }
    backoff.Pause();
  }
  int count = 0;
  MPI_Get_count(&status, MPI_BYTE, &count);
  std::string bytes(count, '\0');
  const int rc = MPI_Recv(bytes.data(), count, MPI_BYTE, from, tag,
                          MPI_COMM_WORLD, MPI_STATUS_IGNORE);
  if (rc != MPI_SUCCESS) return MpiError(rc, "receiving");
  return bytes;
}

}  // namespace

absl::StatusOr<std::unique_ptr<MpiTransport>> MpiTransport::Join(
    double timeout_seconds) {
  int initialized = 0;
  MPI_Initialized(&initialized);
  if (!initialized) {
    int provided = 0;
    const int rc =
        MPI_Init_thread(nullptr, nullptr, MPI_THREAD_FUNNELED, &provided);
    if (rc != MPI_SUCCESS) return MpiError(rc, "to initialise");
  }
  // Errors come back as codes, to be reported as statuses.
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  int process = 0;
  int processes = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &process);
  MPI_Comm_size(MPI_COMM_WORLD, &processes);
  return std::unique_ptr<MpiTransport>(
      new MpiTransport(process, processes, timeout_seconds));
}

MpiTransport::~MpiTransport() {
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (!finalized) MPI_Finalize();
}

void MpiTransport::Abort(int exit_code) {
  MPI_Abort(MPI_COMM_WORLD, exit_code);
  std::_Exit(exit_code);
}

absl::StatusOr<std::vector<std::string>> MpiTransport::AllGather(
    absl::string_view mine) {
  NKI_RETURN_IF_ERROR(CheckSize(mine.size(), "a round's state"));
  const int64_t size = static_cast<int64_t>(mine.size());
  std::vector<int64_t> sizes(processes_);
  std::vector<MPI_Request> request(1);
  int rc = MPI_Iallgather(&size, 1, MPI_INT64_T, sizes.data(), 1, MPI_INT64_T,
                          MPI_COMM_WORLD, &request[0]);
  if (rc != MPI_SUCCESS) return MpiError(rc, "gathering sizes");
  NKI_RETURN_IF_ERROR(WaitAll(request, timeout_, "the other processes"));
  std::vector<int> counts(processes_);
  std::vector<int> offsets(processes_);
  int64_t total = 0;
  for (int q = 0; q < processes_; ++q) {
    counts[q] = static_cast<int>(sizes[q]);
    offsets[q] = static_cast<int>(total);
    total += sizes[q];
  }
  NKI_RETURN_IF_ERROR(CheckSize(total, "the processes' round states"));
  std::string all(total, '\0');
  rc = MPI_Iallgatherv(mine.data(), static_cast<int>(size), MPI_BYTE,
                       all.data(), counts.data(), offsets.data(), MPI_BYTE,
                       MPI_COMM_WORLD, &request[0]);
  if (rc != MPI_SUCCESS) return MpiError(rc, "gathering");
  NKI_RETURN_IF_ERROR(WaitAll(request, timeout_, "the other processes"));
  std::vector<std::string> result(processes_);
  for (int q = 0; q < processes_; ++q) {
    result[q] = all.substr(offsets[q], counts[q]);
  }
  return result;
}

absl::StatusOr<std::vector<std::string>> MpiTransport::Exchange(
    absl::Span<const int> peers, absl::string_view mine) {
  NKI_RETURN_IF_ERROR(CheckSize(mine.size(), "a collective's operands"));
  std::vector<MPI_Request> sends(peers.size());
  for (size_t k = 0; k < peers.size(); ++k) {
    const int rc =
        MPI_Isend(mine.data(), static_cast<int>(mine.size()), MPI_BYTE,
                  peers[k], kExchangeTag, MPI_COMM_WORLD, &sends[k]);
    if (rc != MPI_SUCCESS) return MpiError(rc, "sending");
  }
  std::vector<std::string> replies(peers.size());
  for (size_t k = 0; k < peers.size(); ++k) {
    NKI_ASSIGN_OR_RETURN(replies[k],
                         ReceiveFrom(peers[k], kExchangeTag, timeout_));
  }
  NKI_RETURN_IF_ERROR(WaitAll(sends, timeout_, "the processes sent to"));
  return replies;
}

absl::Status MpiTransport::Send(int to, absl::string_view bytes) {
  NKI_RETURN_IF_ERROR(CheckSize(bytes.size(), "a message"));
  std::vector<MPI_Request> request(1);
  const int rc = MPI_Isend(bytes.data(), static_cast<int>(bytes.size()),
                           MPI_BYTE, to, kSendTag, MPI_COMM_WORLD, &request[0]);
  if (rc != MPI_SUCCESS) return MpiError(rc, "sending");
  return WaitAll(request, timeout_, absl::StrCat("process ", to));
}

absl::StatusOr<std::string> MpiTransport::Receive(int from) {
  return ReceiveFrom(from, kSendTag, timeout_);
}

}  // namespace nkigraph::dist
