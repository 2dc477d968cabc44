#include "builder/allocator.h"

#include <cstddef>
#include <cstdint>
#include <vector>

namespace nkigraph::builder {
namespace {

constexpr int64_t kSbufAlign = 64;
constexpr int64_t kHbmAlign = 512;

int64_t AlignUp(int64_t value, int64_t align) {
  return (value + align - 1) / align * align;
}

// The first address at or after `top` where a tensor of `row_bytes` per
// partition may start in `space`: SBUF tensors are 64-byte aligned; a PSUM
// tensor no larger than a bank never straddles two banks, a larger one
// starts on a bank.
int64_t PlaceAt(proto::MemorySpace space, int64_t top, int64_t row_bytes,
                const ops::DeviceProfile& profile) {
  if (space != proto::PSUM) return AlignUp(top, kSbufAlign);
  const int64_t bank = profile.psum_bank_bytes;
  int64_t address = AlignUp(top, 4);
  if (row_bytes <= bank ? (address / bank != (address + row_bytes - 1) / bank)
                        : (address % bank != 0)) {
    address = AlignUp(address, bank);
  }
  return address;
}

int64_t CapacityOf(proto::MemorySpace space,
                   const ops::DeviceProfile& profile) {
  return space == proto::PSUM ? profile.psum_partition_bytes
                              : profile.sbuf_partition_bytes;
}

}  // namespace

int64_t HbmAllocator::Allocate(int64_t bytes) {
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
  Frame& frame = top_frame();
  int64_t& top = space == proto::PSUM ? frame.psum_top : frame.sbuf_top;
  const Placement placement{PlaceAt(space, top, row_bytes, profile),
                            CapacityOf(space, profile)};
  if (!placement.fits(row_bytes)) return placement;
  top = placement.address + row_bytes;
  frame.tensors.push_back(tensor_id);
  return placement;
}

void OnChipHeap::Reset() {
  sbuf_.clear();
  psum_.clear();
}

OnChipStack::Placement OnChipHeap::Allocate(proto::MemorySpace space,
                                            int64_t row_bytes,
                                            uint32_t tensor_id,
                                            const ops::DeviceProfile& profile) {
  std::vector<Block>& blocks = space == proto::PSUM ? psum_ : sbuf_;
  const int64_t capacity = CapacityOf(space, profile);
  int64_t top = 0;
  size_t i = 0;
  for (; i <= blocks.size(); ++i) {
    const int64_t address = PlaceAt(space, top, row_bytes, profile);
    const int64_t limit = i < blocks.size() ? blocks[i].address : capacity;
    if (address + row_bytes <= limit) {
      blocks.insert(blocks.begin() + static_cast<std::ptrdiff_t>(i),
                    Block{address, address + row_bytes, tensor_id});
      return {address, capacity};
    }
    if (i < blocks.size()) top = blocks[i].end;
  }
  return {PlaceAt(space, top, row_bytes, profile), capacity};
}

bool OnChipHeap::Free(uint32_t tensor_id) {
  for (std::vector<Block>* blocks : {&sbuf_, &psum_}) {
    for (auto it = blocks->begin(); it != blocks->end(); ++it) {
      if (it->id == tensor_id) {
        blocks->erase(it);
        return true;
      }
    }
  }
  return false;
}

std::vector<uint32_t> OnChipHeap::Live() const {
  std::vector<uint32_t> ids;
  for (const std::vector<Block>* blocks : {&sbuf_, &psum_}) {
    for (const Block& b : *blocks) ids.push_back(b.id);
  }
  return ids;
}

}  // namespace nkigraph::builder
