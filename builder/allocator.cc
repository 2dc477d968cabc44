#include "builder/allocator.h"

#include <cstdint>

namespace nkigraph::builder {
namespace {

constexpr int64_t kSbufAlign = 64;
constexpr int64_t kHbmAlign = 512;

int64_t AlignUp(int64_t value, int64_t align) {
  return (value + align - 1) / align * align;
}

}  // namespace

int64_t HbmAllocator::Allocate(int64_t bytes) {
  // A large allocation (a weight) starts on a 4 KiB page, so that the
  // interpreter can map its input file's pages into device memory
  // rather than copy them.
  if (bytes >= kHbmPageAlignFrom) top_ = AlignUp(top_, kHbmPage);
  const int64_t address = top_;
  top_ = AlignUp(top_ + bytes, kHbmAlign);
  return address;
}

void OnChipStack::Reset() {
  num_frames_ = 0;
  PushFrame(0, 0);
}

void OnChipStack::PushFrame() {
  const Frame& top = top_frame();
  PushFrame(top.sbuf_top, top.psum_top);
}

void OnChipStack::PushFrame(int64_t sbuf_top, int64_t psum_top) {
  if (num_frames_ == frames_.size()) frames_.push_back(Frame{0, 0, {}});
  Frame& frame = frames_[num_frames_++];
  frame.sbuf_top = sbuf_top;
  frame.psum_top = psum_top;
  frame.tensors.clear();
}

OnChipStack::Placement OnChipStack::Allocate(
    proto::MemorySpace space, int64_t row_bytes, uint32_t tensor_id,
    const ops::DeviceProfile& profile) {
  const bool psum = space == proto::PSUM;
  Frame& frame = top_frame();
  int64_t& top = psum ? frame.psum_top : frame.sbuf_top;
  const int64_t capacity =
      psum ? profile.psum_partition_bytes : profile.sbuf_partition_bytes;
  int64_t address;
  if (psum) {
    // A tile no larger than a bank never straddles two banks.
    const int64_t bank = profile.psum_bank_bytes;
    address = AlignUp(top, 4);
    if (row_bytes <= bank ? (address / bank != (address + row_bytes - 1) / bank)
                          : (address % bank != 0)) {
      address = AlignUp(address, bank);
    }
  } else {
    address = AlignUp(top, kSbufAlign);
  }
  const Placement placement{address, capacity};
  if (!placement.fits(row_bytes)) return placement;
  top = address + row_bytes;
  frame.tensors.push_back(tensor_id);
  return placement;
}

}  // namespace nkigraph::builder
