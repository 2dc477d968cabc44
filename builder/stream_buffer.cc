#include "builder/stream_buffer.h"

#include <sys/mman.h>

#include <algorithm>
#include <new>
#include <utility>

#include "builder/page_prefaulter.h"

namespace nkigraph::builder {
namespace {

// The first mapping: small traces (most kernels, every test) fit in it.
constexpr size_t kFirstCapacity = size_t{64} << 10;
// How far ahead of the writing pages are brought in.
constexpr size_t kPopulateChunk = size_t{1} << 20;

}  // namespace

StreamBuffer::StreamBuffer(StreamBuffer&& other) noexcept
    : prefaulter_(other.prefaulter_),
      data_(std::exchange(other.data_, nullptr)),
      size_(std::exchange(other.size_, 0)),
      capacity_(std::exchange(other.capacity_, 0)),
      populated_(std::exchange(other.populated_, 0)),
      ready_(std::exchange(other.ready_, 0)) {}

StreamBuffer& StreamBuffer::operator=(StreamBuffer&& other) noexcept {
  if (this != &other) {
    Release();
    prefaulter_ = other.prefaulter_;
    data_ = std::exchange(other.data_, nullptr);
    size_ = std::exchange(other.size_, 0);
    capacity_ = std::exchange(other.capacity_, 0);
    populated_ = std::exchange(other.populated_, 0);
    ready_ = std::exchange(other.ready_, 0);
  }
  return *this;
}

StreamBuffer::~StreamBuffer() { Release(); }

void StreamBuffer::Release() {
  if (data_ == nullptr) return;
  if (prefaulter_ != nullptr) prefaulter_->Drain();
  munmap(data_, capacity_);
  data_ = nullptr;
}

void StreamBuffer::Grow(size_t n) {
  if (capacity_ - size_ < n) {
    // The mapping may move: nothing may be bringing in its old pages.
    if (prefaulter_ != nullptr && data_ != nullptr) prefaulter_->Drain();
    size_t capacity = std::max(capacity_, kFirstCapacity);
    while (capacity - size_ < n) capacity *= 2;
    void* data = data_ == nullptr
                     ? mmap(nullptr, capacity, PROT_READ | PROT_WRITE,
                            MAP_PRIVATE | MAP_ANONYMOUS, -1, 0)
                     : mremap(data_, capacity_, capacity, MREMAP_MAYMOVE);
    if (data == MAP_FAILED) throw std::bad_alloc();
    data_ = static_cast<uint8_t*>(data);
    capacity_ = capacity;
  }
  // Pages are brought in a chunk ahead of the writing, not a capacity
  // ahead: a stream commits at most a chunk it does not use.
  // With a prefaulter the chunk after the next is asked for, so that its
  // pages are in by the time the writing gets there; pages the writing
  // reaches first fault in as it writes them.
  const size_t ahead =
      prefaulter_ != nullptr ? 2 * kPopulateChunk : kPopulateChunk;
  const size_t end =
      std::min(capacity_, std::max(size_ + n, populated_) + ahead);
  if (prefaulter_ != nullptr && data_ != nullptr &&
      populated_ >= kFirstCapacity) {
    prefaulter_->Request(data_ + populated_, end - populated_);
  } else {
    PrefaultForWriting(data_ + populated_, end - populated_);
  }
  populated_ = end;
  // (At the end of the mapping there is nothing further to ask for.)
  ready_ = prefaulter_ == nullptr || end == capacity_
               ? end
               : std::max(size_ + n, end - kPopulateChunk);
}

void PrefaultForWriting(void* data, size_t size) {
  constexpr uintptr_t kPage = 4096;
  const uintptr_t begin =
      (reinterpret_cast<uintptr_t>(data) + kPage - 1) & ~(kPage - 1);
  const uintptr_t end =
      (reinterpret_cast<uintptr_t>(data) + size) & ~(kPage - 1);
  if (end <= begin) return;
  // An older kernel without MADV_POPULATE_WRITE says EINVAL: the pages
  // then fault in as they are written.
  madvise(reinterpret_cast<void*>(begin), end - begin, MADV_POPULATE_WRITE);
}

}  // namespace nkigraph::builder
