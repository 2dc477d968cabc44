#include "interp/transport.h"

#include <algorithm>

namespace nkigraph::interp {
namespace {

absl::Status NoPeers() {
  return absl::InternalError("a single-process run has no other process");
}

}  // namespace

RankBlock BlockOf(int process, int num_processes, int num_ranks) {
  const int64_t r = num_ranks;
  const int64_t p = std::max(1, num_processes);
  return {static_cast<int>(process * r / p),
          static_cast<int>((process + 1) * r / p)};
}

int ProcessOfRank(int rank, int num_processes, int num_ranks) {
  // The last process whose block starts at or before `rank`.
  int process = 0;
  while (process + 1 < num_processes &&
         BlockOf(process + 1, num_processes, num_ranks).first <= rank) {
    ++process;
  }
  return process;
}

absl::StatusOr<std::vector<std::string>> LocalTransport::Exchange(
    absl::Span<const int> peers, absl::string_view) {
  if (!peers.empty()) return NoPeers();
  return std::vector<std::string>{};
}

absl::Status LocalTransport::Send(int, absl::string_view) { return NoPeers(); }

absl::StatusOr<std::string> LocalTransport::Receive(int) { return NoPeers(); }

}  // namespace nkigraph::interp
