#include "interp/shadow.h"

#include <algorithm>
#include <cstring>

#include "util/status_macros.h"

namespace nkigraph::interp {

absl::StatusOr<Shadow> Shadow::Allocate(int64_t bytes, MemoryBudget* budget) {
  Shadow shadow;
  NKI_ASSIGN_OR_RETURN(shadow.blocks_,
                       ByteBuffer::Allocate(BlocksFor(bytes), budget));
  if (bytes < kSparseBytes) {
    NKI_ASSIGN_OR_RETURN(shadow.bytes_, ByteBuffer::Allocate(bytes, budget));
  } else {
    NKI_ASSIGN_OR_RETURN(shadow.bytes_, ByteBuffer::AllocateSparse(bytes));
    shadow.pages_ = std::make_unique<TouchedPages>(bytes, budget);
  }
  return shadow;
}

Shadow::TouchedPages::TouchedPages(int64_t bytes, MemoryBudget* b)
    : budget(b),
      bits(
          new std::atomic<uint64_t>[(((bytes - 1) >> kPageShift) >> 6) + 1]()) {
}

Shadow::TouchedPages::~TouchedPages() {
  if (budget != nullptr) budget->Release(charged.load());
}

void Shadow::TouchBlock(int64_t block) {
  if (pages_ == nullptr) return;
  const int64_t page = (block << kBlockShift) >> TouchedPages::kPageShift;
  std::atomic<uint64_t>& word = pages_->bits[page >> 6];
  const uint64_t bit = uint64_t{1} << (page & 63);
  if ((word.load(std::memory_order_relaxed) & bit) != 0) return;
  if ((word.fetch_or(bit, std::memory_order_relaxed) & bit) != 0) return;
  constexpr int64_t kPage = int64_t{1} << TouchedPages::kPageShift;
  pages_->charged.fetch_add(kPage, std::memory_order_relaxed);
  if (pages_->budget != nullptr) {
    pages_->budget->ChargeTouched(
        kPage, "shadow state of device memory written in part");
  }
}

void Shadow::SetInBlock(int64_t block, int64_t lo, int64_t hi, uint8_t state) {
  const int64_t first = block << kBlockShift;
  uint8_t& summary = blocks_[block];
  if (lo == first && hi == first + kBlock) {
    summary = state;
    return;
  }
  if (summary == state) return;
  if (summary != kMixed) {
    TouchBlock(block);
    std::memset(&bytes_[first], summary, kBlock);
    summary = kMixed;
  } else if (lo != first && hi != first + kBlock &&
             BytesAll(lo, hi - lo, state)) {
    // Rewriting bytes inside a mixed block that already hold the state
    // changes nothing (a run reaching the block's end still looks below
    // whether the block collapses).
    return;
  }
  std::memset(&bytes_[lo], state, hi - lo);
  // Collapse a block whose bytes agree again, so later runs over it stay
  // on the per-block path; looked at when a write reaches the block's
  // end, which element-by-element writes in either direction do once.
  if (hi != first + kBlock && lo != first) return;
  const uint8_t* b = &bytes_[first];
  uint8_t differ = 0;
  for (int64_t i = 0; i < kBlock; ++i) differ |= b[i] ^ state;
  if (differ == 0) summary = state;
}

void Shadow::SetRange(int64_t begin, int64_t length, uint8_t state) {
  if (length <= 0) return;
  const int64_t end = begin + length;
  int64_t first = begin >> kBlockShift;
  int64_t last = (end - 1) >> kBlockShift;
  if (first == last) {
    SetInBlock(first, begin, end, state);
    return;
  }
  if ((begin & (kBlock - 1)) != 0) {
    SetInBlock(first, begin, (first + 1) << kBlockShift, state);
    ++first;
  }
  if ((end & (kBlock - 1)) != 0) {
    SetInBlock(last, last << kBlockShift, end, state);
    --last;
  }
  if (last >= first) std::memset(&blocks_[first], state, last - first + 1);
}

bool Shadow::AllInBlock(int64_t block, int64_t lo, int64_t hi,
                        uint8_t bits) const {
  const uint8_t summary = blocks_[block];
  if (summary != kMixed) return (summary & bits) == bits;
  uint8_t all = 0xFF;
  for (int64_t i = lo; i < hi; ++i) all &= bytes_[i];
  return (all & bits) == bits;
}

bool Shadow::AllRange(int64_t begin, int64_t length, uint8_t bits) const {
  if (length <= 0) return true;
  const int64_t end = begin + length;
  const int64_t first = begin >> kBlockShift;
  const int64_t last = (end - 1) >> kBlockShift;
  if (first == last) return AllInBlock(first, begin, end, bits);
  // Whole blocks in one vectorisable pass; mixed ones looked at after.
  uint8_t all = 0xFF;
  uint8_t any = 0;
  for (int64_t b = first; b <= last; ++b) {
    all &= blocks_[b];
    any |= blocks_[b];
  }
  if ((any & kMixed) == 0) return (all & bits) == bits;
  for (int64_t b = first; b <= last; ++b) {
    const int64_t lo = std::max(begin, b << kBlockShift);
    const int64_t hi = std::min(end, (b + 1) << kBlockShift);
    if (!AllInBlock(b, lo, hi, bits)) return false;
  }
  return true;
}

}  // namespace nkigraph::interp
