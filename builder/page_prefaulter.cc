#include "builder/page_prefaulter.h"

#include <system_error>

#include "builder/stream_buffer.h"

namespace nkigraph::builder {

PagePrefaulter::~PagePrefaulter() {
  if (!started_) return;
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  work_.notify_one();
  thread_.join();
}

void PagePrefaulter::Request(void* data, size_t size) {
  if (size == 0) return;
  std::unique_lock<std::mutex> lock(mu_);
  if (!started_) {
    try {
      thread_ = std::thread([this] { Loop(); });
      started_ = true;
    } catch (const std::system_error&) {
      lock.unlock();
      PrefaultForWriting(data, size);  // no thread: the caller does it
      return;
    }
  }
  queue_.emplace_back(data, size);
  lock.unlock();
  work_.notify_one();
}

void PagePrefaulter::Drain() {
  std::unique_lock<std::mutex> lock(mu_);
  idle_.wait(lock, [this] { return queue_.empty() && !running_; });
}

void PagePrefaulter::Loop() {
  std::unique_lock<std::mutex> lock(mu_);
  while (true) {
    work_.wait(lock, [this] { return stop_ || !queue_.empty(); });
    if (queue_.empty()) return;  // stop_, nothing left
    const auto [data, size] = queue_.front();
    queue_.pop_front();
    running_ = true;
    lock.unlock();
    PrefaultForWriting(data, size);
    lock.lock();
    running_ = false;
    if (queue_.empty()) idle_.notify_all();
  }
}

}  // namespace nkigraph::builder
