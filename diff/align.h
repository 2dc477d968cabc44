#ifndef NKIGRAPH_DIFF_ALIGN_H_
#define NKIGRAPH_DIFF_ALIGN_H_

// Sequence alignment of two key sequences: which elements of `a` were
// removed and which of `b` were added so that the rest match in order.

#include <cstdint>
#include <vector>

#include "absl/types/span.h"

namespace nkigraph::diff {

struct Alignment {
  std::vector<uint8_t> removed;  // removed[i]: a[i] has no partner in b
  std::vector<uint8_t> added;    // added[j]: b[j] has no partner in a
};

// Myers' O(ND) difference algorithm in linear space (the middle-snake
// divide and conquer, as in GNU diff), after trimming the common prefix
// and suffix and setting aside keys that occur on one side only. The
// script is minimal while the edit distance is small (under 256); past
// that each split settles for a good rather than minimal script, so even
// unrelated long sequences take near-linear time.
Alignment Align(absl::Span<const uint32_t> a, absl::Span<const uint32_t> b);

// A maximal run of removed and added elements between matched ones:
// a[a_begin, a_end) was replaced by b[b_begin, b_end) (either may be
// empty, never both).
struct Hunk {
  int64_t a_begin = 0;
  int64_t a_end = 0;
  int64_t b_begin = 0;
  int64_t b_end = 0;
};

// The hunks of an alignment, in order.
std::vector<Hunk> Hunks(const Alignment& alignment);

}  // namespace nkigraph::diff

#endif  // NKIGRAPH_DIFF_ALIGN_H_
