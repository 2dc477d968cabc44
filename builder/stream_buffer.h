#ifndef NKIGRAPH_BUILDER_STREAM_BUFFER_H_
#define NKIGRAPH_BUILDER_STREAM_BUFFER_H_

#include <cstddef>
#include <cstdint>

#include "absl/strings/string_view.h"

namespace nkigraph::builder {

class PagePrefaulter;

// The growing bytes of one traced stream. A million-instruction stream is
// tens of megabytes: a std::string grown by doubling copied each byte about
// once more, faulted in every new buffer's pages and zero-filled the room
// of each instruction before writing it. This one is mapped memory that
// grows with mremap (the kernel moves the pages, nothing is copied), and
// the room handed out is not cleared. Linux only, as the graph arena.
class StreamBuffer {
 public:
  StreamBuffer() = default;
  // Pages ahead of the writing are brought in by `prefaulter` (which must
  // outlive this) on its thread instead of by the writer.
  explicit StreamBuffer(PagePrefaulter* prefaulter) : prefaulter_(prefaulter) {}
  StreamBuffer(const StreamBuffer&) = delete;
  StreamBuffer& operator=(const StreamBuffer&) = delete;
  StreamBuffer(StreamBuffer&& other) noexcept;
  StreamBuffer& operator=(StreamBuffer&& other) noexcept;
  ~StreamBuffer();

  // Room for at least `n` more bytes at the end, to write into and then
  // Commit. The pointer is valid until the next Room call. Throws
  // std::bad_alloc when the memory cannot be mapped, as allocation does.
  uint8_t* Room(size_t n) {
    if (ready_ - size_ < n) Grow(n);
    return data_ + size_;
  }
  // Keeps the first `n` bytes written at the last Room.
  void Commit(size_t n) { size_ += n; }

  size_t size() const { return size_; }
  absl::string_view view() const {
    return absl::string_view(reinterpret_cast<const char*>(data_), size_);
  }

 private:
  void Grow(size_t n);

  // Unmaps the memory, once nothing populates it any more.
  void Release();

  PagePrefaulter* prefaulter_ = nullptr;
  uint8_t* data_ = nullptr;
  size_t size_ = 0;
  size_t capacity_ = 0;
  // Bytes from data_ on whose pages are in memory, or asked for from the
  // prefaulter; Room hands out memory below ready_ without asking again
  // (with a prefaulter, a chunk short of populated_, so that the next
  // chunk is asked for before the writing reaches it).
  size_t populated_ = 0;
  size_t ready_ = 0;
};

// Asks the kernel to bring in the pages of [data, data + size) for
// writing in one call (a hint: nothing happens where it cannot). Faulting
// fresh memory in a page at a time costs more than writing it on this
// project's virtual machines.
void PrefaultForWriting(void* data, size_t size);

}  // namespace nkigraph::builder

#endif  // NKIGRAPH_BUILDER_STREAM_BUFFER_H_
