#include "interp/byte_buffer.h"

#include <sys/mman.h>

#include <cerrno>
#include <cstring>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"

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

}  // namespace nkigraph::interp
