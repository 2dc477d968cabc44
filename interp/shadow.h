#ifndef NKIGRAPH_INTERP_SHADOW_H_
#define NKIGRAPH_INTERP_SHADOW_H_

#include <atomic>
#include <cstdint>
#include <memory>

#include "absl/status/statusor.h"
#include "interp/byte_buffer.h"

namespace nkigraph::interp {

// Shadow bits kept for every byte of device memory.
inline constexpr uint8_t kInitialized = 1;  // written since the run began
inline constexpr uint8_t kMatmulGroup = 2;  // psum: last written by a matmul

// The shadow state of every byte of one memory, exact per byte but stored
// per block of 64 bytes: a block whose bytes share one state holds just
// that state, and only a block written in part keeps a state per byte.
// Instructions write and read whole runs of elements, so marking or
// checking a run costs one byte per block instead of one per byte, and the
// per-byte pages of blocks never split are never touched.
class Shadow {
 public:
  Shadow() = default;
  // A shadow for `bytes` bytes, all in state 0 (never written), charged
  // to `budget` when given.
  static absl::StatusOr<Shadow> Allocate(int64_t bytes,
                                         MemoryBudget* budget = nullptr);
  // The bytes Allocate(bytes) charges up front: a summary per block, and
  // for a memory under kSparseBytes a byte per byte. A larger one (HBM
  // holding a model's weights) charges its per-byte states a 4 KiB page
  // at a time as blocks written in part first touch them: the weights
  // are then held once, not twice.
  static int64_t AllocatedBytes(int64_t bytes) {
    return BlocksFor(bytes) + (bytes < kSparseBytes ? bytes : 0);
  }
  static constexpr int64_t kSparseBytes = int64_t{4} << 20;

  // Every byte of [begin, begin + length) takes `state`. Inline for a run
  // inside one block that already holds it (an instruction rewriting a
  // tile of a few elements), where nothing changes; a run reaching a
  // mixed block's first or last byte goes on to SetInBlock, which looks
  // there whether the block can collapse.
  void Set(int64_t begin, int64_t length, uint8_t state) {
    if (length > 0 && InOneBlock(begin, length)) {
      const uint8_t block = blocks_[begin >> kBlockShift];
      if (block == state ||
          (block == kMixed && !ReachesBlockEnd(begin, length) &&
           BytesAll(begin, length, state))) {
        return;
      }
    }
    SetRange(begin, length, state);
  }
  // Whether every byte of [begin, begin + length) has all of `bits`.
  // Inline for a run inside one block.
  bool All(int64_t begin, int64_t length, uint8_t bits) const {
    if (length > 0 && InOneBlock(begin, length)) {
      const uint8_t block = blocks_[begin >> kBlockShift];
      if (block != kMixed) return (block & bits) == bits;
      uint8_t all = 0xFF;
      for (int64_t i = begin; i < begin + length; ++i) all &= bytes_[i];
      return (all & bits) == bits;
    }
    return AllRange(begin, length, bits);
  }
  // The state of one byte.
  uint8_t Get(int64_t byte) const {
    const uint8_t block = blocks_[byte >> kBlockShift];
    return block == kMixed ? bytes_[byte] : block;
  }

 private:
  static constexpr int kBlockShift = 6;
  static constexpr int64_t kBlock = int64_t{1} << kBlockShift;
  // A block state: its bytes differ, bytes_ holds each one's.
  static constexpr uint8_t kMixed = 0x80;
  static int64_t BlocksFor(int64_t bytes) {
    return (bytes + kBlock - 1) >> kBlockShift;
  }

  static bool InOneBlock(int64_t begin, int64_t length) {
    return (begin >> kBlockShift) == ((begin + length - 1) >> kBlockShift);
  }
  // Whether [begin, begin + length), inside one block, holds its first or
  // last byte.
  static bool ReachesBlockEnd(int64_t begin, int64_t length) {
    return (begin & (kBlock - 1)) == 0 ||
           ((begin + length) & (kBlock - 1)) == 0;
  }
  // Whether the per-byte states of [begin, begin + length) are all `state`
  // (meaningful in a mixed block).
  bool BytesAll(int64_t begin, int64_t length, uint8_t state) const {
    uint8_t differ = 0;
    for (int64_t i = begin; i < begin + length; ++i)
      differ |= bytes_[i] ^ state;
    return differ == 0;
  }
  void SetRange(int64_t begin, int64_t length, uint8_t state);
  // Block `block` turns mixed: charges its per-byte page if first touched.
  void TouchBlock(int64_t block);
  bool AllRange(int64_t begin, int64_t length, uint8_t bits) const;
  // Part of one block, [lo, hi) inside block `block`.
  void SetInBlock(int64_t block, int64_t lo, int64_t hi, uint8_t state);
  bool AllInBlock(int64_t block, int64_t lo, int64_t hi, uint8_t bits) const;

  // The pages of a sparse bytes_ touched so far, and what they cost.
  struct TouchedPages {
    static constexpr int kPageShift = 12;
    explicit TouchedPages(int64_t bytes, MemoryBudget* b);
    ~TouchedPages();
    MemoryBudget* budget;
    std::unique_ptr<std::atomic<uint64_t>[]> bits;  // one per page
    std::atomic<int64_t> charged{0};
  };

  ByteBuffer blocks_;  // per block: its bytes' common state, or kMixed
  ByteBuffer bytes_;   // per byte; meaningful only in mixed blocks
  std::unique_ptr<TouchedPages> pages_;  // sparse bytes_ only
};

}  // namespace nkigraph::interp

#endif  // NKIGRAPH_INTERP_SHADOW_H_
