#ifndef NKIGRAPH_BUILDER_PAGE_PREFAULTER_H_
#define NKIGRAPH_BUILDER_PAGE_PREFAULTER_H_

#include <condition_variable>
#include <cstddef>
#include <deque>
#include <mutex>
#include <thread>
#include <utility>

namespace nkigraph::builder {

// Brings in the pages of freshly mapped memory on a thread of its own,
// ahead of the trace writing into them: a big trace faults in hundreds of
// megabytes (its stream bytes, its tensors' arena), which cost about a
// sixth of the tracing thread's time. Only a hint: a page the trace
// reaches first is faulted in by the trace as before, so nothing the
// thread does or fails to do changes what is written, and it never
// reports an error. The thread starts at the first request (small traces
// never start it); when it cannot start, requests are done at once.
class PagePrefaulter {
 public:
  PagePrefaulter() = default;
  PagePrefaulter(const PagePrefaulter&) = delete;
  PagePrefaulter& operator=(const PagePrefaulter&) = delete;
  ~PagePrefaulter();  // finishes the requests, then stops the thread

  // Asks for the pages of [data, data + size) to be brought in for
  // writing; returns without waiting.
  void Request(void* data, size_t size);
  // Waits until no request is pending or running: before memory that was
  // requested is moved (mremap) or unmapped.
  void Drain();

 private:
  void Loop();

  std::mutex mu_;
  std::condition_variable work_;  // a request came, or stop_
  std::condition_variable idle_;  // the queue ran dry
  std::deque<std::pair<void*, size_t>> queue_;
  bool running_ = false;  // the thread is working on a request
  bool stop_ = false;
  bool started_ = false;
  std::thread thread_;
};

}  // namespace nkigraph::builder

#endif  // NKIGRAPH_BUILDER_PAGE_PREFAULTER_H_
