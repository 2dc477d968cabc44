#include "interp/byte_buffer.h"

#include <sys/mman.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "util/status_macros.h"

namespace nkigraph::interp {
namespace {

// Above this size the pages are asked for as transparent huge pages where
// the kernel allows it: one fault per 2 MiB instead of per 4 KiB.
constexpr int64_t kHugePageThreshold = int64_t{4} << 20;

}  // namespace

absl::StatusOr<ByteBuffer> ByteBuffer::Allocate(int64_t size,
                                                MemoryBudget* budget,
                                                absl::string_view what) {
  ByteBuffer buffer;
  if (size <= 0) return buffer;
  buffer.charge_ = ScopedCharge(budget, size, what);
  if (!buffer.charge_.status().ok()) return buffer.charge_.status();
  void* p = mmap(nullptr, static_cast<size_t>(size), PROT_READ | PROT_WRITE,
                 MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (p == MAP_FAILED) {
    return absl::ResourceExhaustedError(
        absl::StrCat("cannot allocate ", size,
                     " bytes of device memory: ", std::strerror(errno)));
  }
  if (size >= kHugePageThreshold) {
    madvise(p, static_cast<size_t>(size), MADV_HUGEPAGE);  // a hint only
  }
  buffer.data_ = static_cast<uint8_t*>(p);
  buffer.size_ = size;
  return buffer;
}

absl::StatusOr<ByteBuffer> ByteBuffer::AllocateSparse(int64_t size) {
  NKI_ASSIGN_OR_RETURN(ByteBuffer buffer, Allocate(size, nullptr));
  if (buffer.data_ != nullptr && size >= kHugePageThreshold) {
    madvise(buffer.data_, static_cast<size_t>(size), MADV_NOHUGEPAGE);
  }
  return buffer;
}

namespace {

constexpr int64_t kPage = 4096;

// Copies `length` bytes, releasing the source's whole pages as it goes.
void CopyReleasing(uint8_t* dst, const uint8_t* src, int64_t length) {
  constexpr int64_t kChunk = int64_t{64} << 20;
  for (int64_t done = 0; done < length; done += kChunk) {
    const int64_t n = std::min(kChunk, length - done);
    std::memcpy(dst + done, src + done, n);
    ReleasePages(src + done, n);
  }
}

}  // namespace

void ReleasePages(const void* data, int64_t bytes) {
  const uintptr_t begin = reinterpret_cast<uintptr_t>(data);
  const uintptr_t lo = (begin + kPage - 1) & ~uintptr_t{kPage - 1};
  const uintptr_t hi = (begin + bytes) & ~uintptr_t{kPage - 1};
  if (hi > lo) madvise(reinterpret_cast<void*>(lo), hi - lo, MADV_DONTNEED);
}

absl::Status ByteBuffer::MapFile(int64_t at, int64_t length, int fd,
                                 int64_t file_offset, const uint8_t* mapped) {
  if (at < 0 || length < 0 || at + length > size_) {
    return absl::InternalError("a file mapped outside device memory");
  }
  // The pages [first, last) of this buffer whose file bytes start a page.
  int64_t first = (at + kPage - 1) / kPage * kPage;
  const int64_t last = (at + length) / kPage * kPage;
  const bool aligned = (first - at + file_offset) % kPage == 0;
  if (!aligned || last <= first) {
    CopyReleasing(data_ + at, mapped, length);
    return absl::OkStatus();
  }
  void* p = mmap(data_ + first, static_cast<size_t>(last - first),
                 PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_FIXED, fd,
                 static_cast<off_t>(file_offset + (first - at)));
  if (p == MAP_FAILED) {
    // A failed MAP_FIXED may have unmapped the anonymous pages: put them
    // back and take a copy instead. Should that fail too, the buffer has a
    // hole, and the run cannot go on with it.
    const int map_error = errno;
    if (mmap(data_ + first, static_cast<size_t>(last - first),
             PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED,
             -1, 0) == MAP_FAILED) {
      return absl::ResourceExhaustedError(absl::StrCat(
          "cannot map ", last - first, " bytes of an input file (",
          std::strerror(map_error), ") nor put back the device memory there (",
          std::strerror(errno), ")"));
    }
    CopyReleasing(data_ + at, mapped, length);
    return absl::OkStatus();
  }
  CopyReleasing(data_ + at, mapped, first - at);
  CopyReleasing(data_ + last, mapped + (last - at), at + length - last);
  return absl::OkStatus();
}

ByteBuffer::~ByteBuffer() {
  if (data_ != nullptr) munmap(data_, static_cast<size_t>(size_));
}

ByteBuffer::ByteBuffer(ByteBuffer&& other) noexcept
    : data_(std::exchange(other.data_, nullptr)),
      size_(std::exchange(other.size_, 0)),
      charge_(std::move(other.charge_)) {}

ByteBuffer& ByteBuffer::operator=(ByteBuffer&& other) noexcept {
  if (this != &other) {
    if (data_ != nullptr) munmap(data_, static_cast<size_t>(size_));
    data_ = std::exchange(other.data_, nullptr);
    size_ = std::exchange(other.size_, 0);
    charge_ = std::move(other.charge_);
  }
  return *this;
}

PageWarmer::PageWarmer(std::vector<std::pair<uint8_t*, int64_t>> ranges)
    : thread_([this, ranges = std::move(ranges)] {
#ifdef MADV_POPULATE_WRITE
        constexpr int64_t kStep = int64_t{2} << 20;
        for (const auto& [data, size] : ranges) {
          const uintptr_t begin =
              reinterpret_cast<uintptr_t>(data) & ~uintptr_t{kPage - 1};
          const uintptr_t end = reinterpret_cast<uintptr_t>(data + size);
          for (uintptr_t at = begin; at < end; at += kStep) {
            if (stop_.load(std::memory_order_relaxed)) return;
            const size_t n = std::min<uintptr_t>(kStep, end - at);
            if (madvise(reinterpret_cast<void*>(at), n, MADV_POPULATE_WRITE) !=
                0) {
              return;  // not supported here: the writer faults them in
            }
          }
        }
#endif
      }) {
}

PageWarmer::~PageWarmer() {
  stop_.store(true, std::memory_order_relaxed);
  thread_.join();
}

}  // namespace nkigraph::interp
