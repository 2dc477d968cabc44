#ifndef NKIGRAPH_TESTS_THREADED_TRANSPORT_H_
#define NKIGRAPH_TESTS_THREADED_TRANSPORT_H_

// Several "processes" of one run as threads of one test: an
// interp::Transport per process over shared mailboxes, so the scheduler's
// rounds across processes are tested without MPI. A process whose peer
// never answers fails after `timeout_seconds`, as dist/'s MPI transport
// does; `Stop(p)` makes process p fail every later call, as if killed.

#include <chrono>
#include <condition_variable>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <tuple>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "interp/transport.h"

namespace nkigraph::testing {

class ThreadedWorld {
 public:
  explicit ThreadedWorld(int processes, double timeout_seconds = 20)
      : processes_(processes), timeout_(timeout_seconds) {
    for (int p = 0; p < processes; ++p) {
      transports_.push_back(std::make_unique<Endpoint>(*this, p));
    }
  }
  interp::Transport& at(int p) { return *transports_[p]; }
  void Stop(int p) {
    std::lock_guard<std::mutex> lock(mu_);
    stopped_.push_back(p);
    cv_.notify_all();
  }

 private:
  // Messages from, to, on a channel (0: exchange, 1: send, 2: all-gather).
  using Key = std::tuple<int, int, int>;

  class Endpoint : public interp::Transport {
   public:
    Endpoint(ThreadedWorld& world, int p) : world_(world), p_(p) {}
    int process() const override { return p_; }
    int num_processes() const override { return world_.processes_; }
    absl::StatusOr<std::vector<std::string>> AllGather(
        absl::string_view mine) override {
      std::vector<std::string> all(world_.processes_);
      for (int q = 0; q < world_.processes_; ++q) {
        if (q != p_) world_.Put({p_, q, 2}, std::string(mine));
      }
      for (int q = 0; q < world_.processes_; ++q) {
        if (q == p_) {
          all[q] = std::string(mine);
          continue;
        }
        absl::StatusOr<std::string> got = world_.Take({q, p_, 2}, p_);
        if (!got.ok()) return got.status();
        all[q] = *std::move(got);
      }
      return all;
    }
    absl::StatusOr<std::vector<std::string>> Exchange(
        absl::Span<const int> peers, absl::string_view mine) override {
      for (int q : peers) world_.Put({p_, q, 0}, std::string(mine));
      std::vector<std::string> replies;
      for (int q : peers) {
        absl::StatusOr<std::string> got = world_.Take({q, p_, 0}, p_);
        if (!got.ok()) return got.status();
        replies.push_back(*std::move(got));
      }
      return replies;
    }
    absl::Status Send(int to, absl::string_view bytes) override {
      world_.Put({p_, to, 1}, std::string(bytes));
      return absl::OkStatus();
    }
    absl::StatusOr<std::string> Receive(int from) override {
      return world_.Take({from, p_, 1}, p_);
    }

   private:
    ThreadedWorld& world_;
    const int p_;
  };

  bool Stopped(int p) const {
    for (int q : stopped_) {
      if (q == p) return true;
    }
    return false;
  }
  void Put(const Key& key, std::string bytes) {
    std::lock_guard<std::mutex> lock(mu_);
    if (Stopped(std::get<0>(key))) return;
    mail_[key].push_back(std::move(bytes));
    cv_.notify_all();
  }
  absl::StatusOr<std::string> Take(const Key& key, int self) {
    std::unique_lock<std::mutex> lock(mu_);
    const auto deadline =
        std::chrono::steady_clock::now() +
        std::chrono::milliseconds(static_cast<int64_t>(timeout_ * 1000));
    while (mail_[key].empty()) {
      if (Stopped(self)) return absl::CancelledError("stopped");
      if (cv_.wait_until(lock, deadline) == std::cv_status::timeout &&
          mail_[key].empty()) {
        return absl::DeadlineExceededError(
            absl::StrCat("no answer from process ", std::get<0>(key),
                         " within ", timeout_, " s"));
      }
    }
    std::string bytes = std::move(mail_[key].front());
    mail_[key].pop_front();
    return bytes;
  }

  const int processes_;
  const double timeout_;
  std::vector<std::unique_ptr<Endpoint>> transports_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::map<Key, std::deque<std::string>> mail_;
  std::vector<int> stopped_;
};

}  // namespace nkigraph::testing

#endif  // NKIGRAPH_TESTS_THREADED_TRANSPORT_H_
