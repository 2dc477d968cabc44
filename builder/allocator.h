#ifndef NKIGRAPH_BUILDER_ALLOCATOR_H_
#define NKIGRAPH_BUILDER_ALLOCATOR_H_

#include <cstddef>
#include <cstdint>
#include <vector>

#include "ops/device_profile.h"
#include "proto/nkigraph.pb.h"

namespace nkigraph::builder {

// Device addresses the builder assigns at trace time.

// HBM and shared HBM: every allocation at increasing addresses, each
// starting on a 512-byte boundary; nothing is freed.
class HbmAllocator {
 public:
  // The address of a new allocation of `bytes` bytes.
  int64_t Allocate(int64_t bytes);

 private:
  int64_t top_ = 0;
};

// SBUF and PSUM of one core, in bytes per partition: a stack whose frames
// are the open scopes, so tiles allocated in a loop body are freed at the
// end of the iteration. Popped frames keep their storage, so a loop body's
// scope does not allocate a tensor list per iteration.
class OnChipStack {
 public:
  // Where a tensor goes: `address` is where it starts in every partition;
  // it fits when it ends within `capacity`.
  struct Placement {
    int64_t address;
    int64_t capacity;
    bool fits(int64_t row_bytes) const {
      return address + row_bytes <= capacity;
    }
  };

  // Empties the stack and opens the bottom frame (at the start of a core).
  void Reset();
  // Opens a frame whose allocations start where the current one's end.
  void PushFrame();
  void PopFrame() { --num_frames_; }
  // Open frames, the bottom one included.
  size_t depth() const { return num_frames_; }
  // Ids of the tensors allocated in the top frame, freed when it pops.
  const std::vector<uint32_t>& top_tensors() const {
    return frames_[num_frames_ - 1].tensors;
  }

  // Places a tensor of `row_bytes` per partition in `space` (SBUF or PSUM)
  // on top of the current frame. When it fits, the tensor `tensor_id` is
  // allocated there and freed with the frame; otherwise nothing changes.
  Placement Allocate(proto::MemorySpace space, int64_t row_bytes,
                     uint32_t tensor_id, const ops::DeviceProfile& profile);

 private:
  struct Frame {
    int64_t sbuf_top;
    int64_t psum_top;
    std::vector<uint32_t> tensors;
  };

  Frame& top_frame() { return frames_[num_frames_ - 1]; }
  // Opens a frame on top of the stack, reusing a popped frame's storage.
  void PushFrame(int64_t sbuf_top, int64_t psum_top);

  // Frames [0, num_frames_) are open.
  std::vector<Frame> frames_;
  size_t num_frames_ = 0;
};

// SBUF and PSUM of one core for a kernel that frees each tensor itself, in
// any order (the Python front-end frees a tile when its last reference
// goes): the first gap that fits, under the stack's alignment rules.
class OnChipHeap {
 public:
  void Reset();
  // As OnChipStack::Allocate; a tensor that does not fit is placed (in the
  // returned Placement) after the last live one.
  OnChipStack::Placement Allocate(proto::MemorySpace space, int64_t row_bytes,
                                  uint32_t tensor_id,
                                  const ops::DeviceProfile& profile);
  // Frees `tensor_id`'s bytes; false when it is not live here.
  bool Free(uint32_t tensor_id);
  // The live tensors' ids.
  std::vector<uint32_t> Live() const;

 private:
  struct Block {
    int64_t address;
    int64_t end;
    uint32_t id;
  };
  // Live blocks by address, per space.
  std::vector<Block> sbuf_;
  std::vector<Block> psum_;
};

}  // namespace nkigraph::builder

#endif  // NKIGRAPH_BUILDER_ALLOCATOR_H_
