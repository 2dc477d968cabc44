#ifndef NKIGRAPH_INTERP_BYTE_BUFFER_H_
#define NKIGRAPH_INTERP_BYTE_BUFFER_H_

#include <atomic>
#include <cstdint>
#include <thread>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "util/memory_budget.h"

namespace nkigraph::interp {

// Zero-filled bytes taken from the kernel as anonymous pages: nothing is
// written when it is allocated, and pages never touched cost neither time
// nor memory. Device memories are sized from the declared tensors, and a
// graph often touches a small part of them (an input written once, a tile
// of SBUF reused), so this replaces a zero-fill of everything up front.
class ByteBuffer {
 public:
  ByteBuffer() = default;
  // The one place device memory and its shadow state are allocated, so
  // the one place they are charged: `size` bytes to `budget` (when given)
  // for `what`, before mapping, released when the buffer is unmapped.
  static absl::StatusOr<ByteBuffer> Allocate(
      int64_t size, MemoryBudget* budget = nullptr,
      absl::string_view what = "device memory and its shadow state");
  // Zero pages like Allocate's, but charged by the caller as they are
  // touched (Shadow's per-byte states, touched only where a block is
  // written in part), and never as huge pages: touching one byte costs one
  // 4 KiB page.
  static absl::StatusOr<ByteBuffer> AllocateSparse(int64_t size);
  ~ByteBuffer();
  ByteBuffer(ByteBuffer&& other) noexcept;
  ByteBuffer& operator=(ByteBuffer&& other) noexcept;
  ByteBuffer(const ByteBuffer&) = delete;
  ByteBuffer& operator=(const ByteBuffer&) = delete;

  // Makes bytes [at, at + length) hold the bytes of open file `fd` from
  // `file_offset`, which the caller has mapped at `mapped`: the whole
  // pages the two share an alignment for are mapped from the file
  // (private, copy-on-write), the rest copied from `mapped` a chunk at a
  // time, each chunk's source pages then released from this process
  // (they stay in the page cache), so the file is never held twice.
  absl::Status MapFile(int64_t at, int64_t length, int fd, int64_t file_offset,
                       const uint8_t* mapped);

  uint8_t* data() { return data_; }
  const uint8_t* data() const { return data_; }
  int64_t size() const { return size_; }
  uint8_t& operator[](int64_t i) { return data_[i]; }
  const uint8_t& operator[](int64_t i) const { return data_[i]; }

 private:
  uint8_t* data_ = nullptr;
  int64_t size_ = 0;
  ScopedCharge charge_;
};

// Lets go of the whole pages of [data, data + bytes), a part of a mapped
// file this process has read: they leave its resident set (the page cache
// keeps them). Never for memory the process owns.
void ReleasePages(const void* data, int64_t bytes);

// Faults in the pages of `ranges` on a thread of its own, in order, ahead
// of a writer filling them in the same order: a page's first touch costs
// the kernel (and in a virtual machine its host) far more than writing it,
// and the two then overlap. It only asks the kernel to populate pages
// (MADV_POPULATE_WRITE) and never writes them, so what the writer stores
// is the same whether or not the warmer got there first; on a kernel
// without it, it does nothing.
class PageWarmer {
 public:
  explicit PageWarmer(std::vector<std::pair<uint8_t*, int64_t>> ranges);
  ~PageWarmer();  // stops, and waits for the thread
  PageWarmer(const PageWarmer&) = delete;
  PageWarmer& operator=(const PageWarmer&) = delete;

 private:
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

}  // namespace nkigraph::interp

#endif  // NKIGRAPH_INTERP_BYTE_BUFFER_H_
