#include "dist/mpi_transport.h"

#include <mpi.h>

#include <algorithm>
#include <chrono>
#include <climits>
#include <cstdint>
#include <cstdlib>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "dist/backoff.h"
#include "util/status_macros.h"

namespace nkigraph::dist {
namespace {

// Point-to-point messages of Exchange and of Send/Receive; the pair of
// processes and the order of the calls, the same on both ends, keep them
// apart otherwise (MPI does not overtake on one communicator and tag).
constexpr int kExchangeTag = 1;
constexpr int kSendTag = 2;

using Clock = std::chrono::steady_clock;

absl::Status MpiError(int code, absl::string_view what) {
  char text[MPI_MAX_ERROR_STRING];
  int length = 0;
  MPI_Error_string(code, text, &length);
  return absl::InternalError(
      absl::StrCat("MPI failed ", what, ": ", absl::string_view(text, length)));
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

// Posts the sends of `bytes` to `to`: its length (`*length`, which must
// outlive the requests), then its pieces of at most `piece` bytes.
absl::Status PostPieces(int to, int tag, absl::string_view bytes, int64_t piece,
                        const int64_t* length,
                        std::vector<MPI_Request>& requests) {
  requests.emplace_back();
  int rc = MPI_Isend(length, 1, MPI_INT64_T, to, tag, MPI_COMM_WORLD,
                     &requests.back());
  if (rc != MPI_SUCCESS) return MpiError(rc, "sending");
  for (size_t at = 0; at < bytes.size(); at += piece) {
    const int count =
        static_cast<int>(std::min<size_t>(piece, bytes.size() - at));
    requests.emplace_back();
    rc = MPI_Isend(bytes.data() + at, count, MPI_BYTE, to, tag, MPI_COMM_WORLD,
                   &requests.back());
    if (rc != MPI_SUCCESS) return MpiError(rc, "sending");
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<std::string> MpiTransport::ReceivePieces(int from, int tag) {
  NKI_ASSIGN_OR_RETURN(const std::string header,
                       ReceiveFrom(from, tag, timeout_));
  int64_t length = -1;
  if (header.size() == sizeof(length)) {
    std::memcpy(&length, header.data(), sizeof(length));
  }
  if (length < 0) {
    return absl::InternalError(
        absl::StrCat("malformed message length from process ", from));
  }
  std::string bytes;
  bytes.reserve(length);
  while (static_cast<int64_t>(bytes.size()) < length) {
    NKI_ASSIGN_OR_RETURN(const std::string part,
                         ReceiveFrom(from, tag, timeout_));
    if (part.empty() ||
        static_cast<int64_t>(bytes.size() + part.size()) > length) {
      return absl::InternalError(
          absl::StrCat("malformed message piece from process ", from));
    }
    bytes += part;
  }
  return bytes;
}

absl::Status MpiTransport::SendPieces(int to, int tag,
                                      absl::string_view bytes) {
  const int64_t length = static_cast<int64_t>(bytes.size());
  std::vector<MPI_Request> requests;
  const absl::Status posted =
      PostPieces(to, tag, bytes, piece_, &length, requests);
  // Even after a failed post, what was posted must complete before
  // `length` goes.
  const absl::Status sent =
      WaitAll(requests, timeout_, absl::StrCat("process ", to));
  NKI_RETURN_IF_ERROR(posted);
  return sent;
}

absl::StatusOr<std::unique_ptr<MpiTransport>> MpiTransport::Join(
    double timeout_seconds, int64_t max_message_bytes) {
  if (max_message_bytes < 1 || max_message_bytes > INT_MAX) {
    return absl::InvalidArgumentError(
        absl::StrCat("the largest MPI message must be 1 to ", INT_MAX,
                     " bytes, not ", max_message_bytes));
  }
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
      new MpiTransport(process, processes, timeout_seconds, max_message_bytes));
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
  const int64_t size = static_cast<int64_t>(mine.size());
  std::vector<int64_t> sizes(processes_);
  std::vector<MPI_Request> request(1);
  int rc = MPI_Iallgather(&size, 1, MPI_INT64_T, sizes.data(), 1, MPI_INT64_T,
                          MPI_COMM_WORLD, &request[0]);
  if (rc != MPI_SUCCESS) return MpiError(rc, "gathering sizes");
  NKI_RETURN_IF_ERROR(WaitAll(request, timeout_, "the other processes"));
  std::vector<std::string> result(processes_);
  for (int q = 0; q < processes_; ++q) result[q].reserve(sizes[q]);
  // In steps, each process sending up to `share` bytes of its own, so
  // that a step's counts and offsets stay within one message.
  const int64_t share = std::max<int64_t>(1, piece_ / processes_);
  const int64_t longest = *std::max_element(sizes.begin(), sizes.end());
  std::vector<int> counts(processes_);
  std::vector<int> offsets(processes_);
  std::string step;
  for (int64_t at = 0; at < longest; at += share) {
    int total = 0;
    for (int q = 0; q < processes_; ++q) {
      counts[q] =
          static_cast<int>(std::clamp<int64_t>(sizes[q] - at, 0, share));
      offsets[q] = total;
      total += counts[q];
    }
    step.assign(total, '\0');
    const char* send = counts[process_] > 0 ? mine.data() + at : mine.data();
    rc = MPI_Iallgatherv(send, counts[process_], MPI_BYTE, step.data(),
                         counts.data(), offsets.data(), MPI_BYTE,
                         MPI_COMM_WORLD, &request[0]);
    if (rc != MPI_SUCCESS) return MpiError(rc, "gathering");
    NKI_RETURN_IF_ERROR(WaitAll(request, timeout_, "the other processes"));
    for (int q = 0; q < processes_; ++q) {
      result[q].append(step, offsets[q], counts[q]);
    }
  }
  return result;
}

absl::StatusOr<std::vector<std::string>> MpiTransport::Exchange(
    absl::Span<const int> peers, absl::string_view mine) {
  // Every send is posted before any receive, so that two processes
  // exchanging long messages do not wait for each other.
  const int64_t length = static_cast<int64_t>(mine.size());
  std::vector<MPI_Request> sends;
  absl::Status posted;
  for (size_t k = 0; k < peers.size() && posted.ok(); ++k) {
    posted = PostPieces(peers[k], kExchangeTag, mine, piece_, &length, sends);
  }
  std::vector<std::string> replies(peers.size());
  absl::Status received;
  for (size_t k = 0; k < peers.size() && posted.ok() && received.ok(); ++k) {
    absl::StatusOr<std::string> reply = ReceivePieces(peers[k], kExchangeTag);
    if (reply.ok()) {
      replies[k] = *std::move(reply);
    } else {
      received = reply.status();
    }
  }
  const absl::Status sent = WaitAll(sends, timeout_, "the processes sent to");
  NKI_RETURN_IF_ERROR(posted);
  NKI_RETURN_IF_ERROR(received);
  NKI_RETURN_IF_ERROR(sent);
  return replies;
}

absl::Status MpiTransport::Send(int to, absl::string_view bytes) {
  return SendPieces(to, kSendTag, bytes);
}

absl::StatusOr<std::string> MpiTransport::Receive(int from) {
  return ReceivePieces(from, kSendTag);
}

}  // namespace nkigraph::dist
