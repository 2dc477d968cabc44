#include "diff/align.h"

#include <algorithm>
#include <cstdint>
#include <limits>
#include <vector>

#include "absl/container/flat_hash_map.h"

namespace nkigraph::diff {
namespace {

// Past this many edits in one split, settle for a good split rather than
// the optimal one. GNU diff uses max(256, sqrt(N)); a fixed bound keeps
// unrelated million-element sequences at ~2 s instead of ~10 s, with a
// script ~3% longer, and every script of fewer edits stays minimal.
constexpr int64_t kMaxCost = 256;
// The heuristics' tuning, as in GNU diff and git.
constexpr int64_t kSnakeLength = 20;  // a "long" run of matches
constexpr int64_t kHeuristicMinCost = 256;
constexpr int64_t kHeuristicFactor = 4;
constexpr int64_t kFar = std::numeric_limits<int64_t>::max() / 4;

struct SplitPoint {
  int64_t i1 = 0;
  int64_t i2 = 0;
  bool minimal_lo = true;  // whether the halves must still be minimal
  bool minimal_hi = true;
};

// Linear-space Myers on the sequences x[0, n) and y[0, m), marking edits
// into removed_x / added_y.
class Aligner {
 public:
  Aligner(const uint32_t* x, int64_t n, const uint32_t* y, int64_t m)
      : x_(x), y_(y), n_(n), m_(m) {
    const int64_t diagonals = n + m + 3;
    forward_.assign(diagonals, 0);
    backward_.assign(diagonals, 0);
  }

  void Run(uint8_t* removed_x, uint8_t* added_y) {
    struct Box {
      int64_t off1, lim1, off2, lim2;
      bool need_min;
    };
    std::vector<Box> stack = {{0, n_, 0, m_, false}};
    while (!stack.empty()) {
      Box box = stack.back();
      stack.pop_back();
      // Shrink the box by its matching head and tail.
      while (box.off1 < box.lim1 && box.off2 < box.lim2 &&
             x_[box.off1] == y_[box.off2]) {
        ++box.off1;
        ++box.off2;
      }
      while (box.off1 < box.lim1 && box.off2 < box.lim2 &&
             x_[box.lim1 - 1] == y_[box.lim2 - 1]) {
        --box.lim1;
        --box.lim2;
      }
      if (box.off1 == box.lim1) {
        for (int64_t j = box.off2; j < box.lim2; ++j) added_y[j] = 1;
      } else if (box.off2 == box.lim2) {
        for (int64_t i = box.off1; i < box.lim1; ++i) removed_x[i] = 1;
      } else {
        const SplitPoint split =
            Split(box.off1, box.lim1, box.off2, box.lim2, box.need_min);
        stack.push_back(
            {split.i1, box.lim1, split.i2, box.lim2, split.minimal_hi});
        stack.push_back(
            {box.off1, split.i1, box.off2, split.i2, split.minimal_lo});
      }
    }
  }

 private:
  // Diagonal d (= i1 - i2) of the forward and backward furthest-reaching
  // paths; d ranges over [-m - 1, n + 1].
  int64_t& Fwd(int64_t d) { return forward_[d + m_ + 1]; }
  int64_t& Bwd(int64_t d) { return backward_[d + m_ + 1]; }

  // Finds where an optimal (or, past the cost bound, a good) path through
  // the box crosses its middle: Myers' middle snake.
  SplitPoint Split(int64_t off1, int64_t lim1, int64_t off2, int64_t lim2,
                   bool need_min) {
    const int64_t dmin = off1 - lim2;
    const int64_t dmax = lim1 - off2;
    const int64_t fmid = off1 - off2;
    const int64_t bmid = lim1 - lim2;
    const bool odd = ((fmid - bmid) & 1) != 0;
    int64_t fmin = fmid, fmax = fmid;
    int64_t bmin = bmid, bmax = bmid;
    Fwd(fmid) = off1;
    Bwd(bmid) = lim1;

    for (int64_t cost = 1;; ++cost) {
      bool got_snake = false;

      // One more edit on the forward paths.
      if (fmin > dmin) {
        Fwd(--fmin - 1) = -1;
      } else {
        ++fmin;
      }
      if (fmax < dmax) {
        Fwd(++fmax + 1) = -1;
      } else {
        --fmax;
      }
      for (int64_t d = fmax; d >= fmin; d -= 2) {
        int64_t i1 = Fwd(d - 1) >= Fwd(d + 1) ? Fwd(d - 1) + 1 : Fwd(d + 1);
        const int64_t start = i1;
        int64_t i2 = i1 - d;
        while (i1 < lim1 && i2 < lim2 && x_[i1] == y_[i2]) {
          ++i1;
          ++i2;
        }
        if (i1 - start > kSnakeLength) got_snake = true;
        Fwd(d) = i1;
        if (odd && bmin <= d && d <= bmax && Bwd(d) <= i1) {
          return {i1, i2, true, true};
        }
      }

      // One more edit on the backward paths.
      if (bmin > dmin) {
        Bwd(--bmin - 1) = kFar;
      } else {
        ++bmin;
      }
      if (bmax < dmax) {
        Bwd(++bmax + 1) = kFar;
      } else {
        --bmax;
      }
      for (int64_t d = bmax; d >= bmin; d -= 2) {
        int64_t i1 = Bwd(d - 1) < Bwd(d + 1) ? Bwd(d - 1) : Bwd(d + 1) - 1;
        const int64_t start = i1;
        int64_t i2 = i1 - d;
        while (i1 > off1 && i2 > off2 && x_[i1 - 1] == y_[i2 - 1]) {
          --i1;
          --i2;
        }
        if (start - i1 > kSnakeLength) got_snake = true;
        Bwd(d) = i1;
        if (!odd && fmin <= d && d <= fmax && i1 <= Fwd(d)) {
          return {i1, i2, true, true};
        }
      }

      if (need_min) continue;

      // Past a modest cost, a path that made good progress and ends in a
      // long run of matches is taken as the split.
      if (got_snake && cost > kHeuristicMinCost) {
        int64_t best = 0;
        SplitPoint split;
        for (int64_t d = fmax; d >= fmin; d -= 2) {
          const int64_t dd = d > fmid ? d - fmid : fmid - d;
          const int64_t i1 = Fwd(d);
          const int64_t i2 = i1 - d;
          const int64_t v = (i1 - off1) + (i2 - off2) - dd;
          if (v > kHeuristicFactor * cost && v > best &&
              off1 + kSnakeLength <= i1 && i1 < lim1 &&
              off2 + kSnakeLength <= i2 && i2 < lim2) {
            for (int64_t k = 1; x_[i1 - k] == y_[i2 - k]; ++k) {
              if (k == kSnakeLength) {
                best = v;
                split = {i1, i2, true, false};
                break;
              }
            }
          }
        }
        if (best > 0) return split;

        best = 0;
        for (int64_t d = bmax; d >= bmin; d -= 2) {
          const int64_t dd = d > bmid ? d - bmid : bmid - d;
          const int64_t i1 = Bwd(d);
          const int64_t i2 = i1 - d;
          const int64_t v = (lim1 - i1) + (lim2 - i2) - dd;
          if (v > kHeuristicFactor * cost && v > best && off1 < i1 &&
              i1 <= lim1 - kSnakeLength && off2 < i2 &&
              i2 <= lim2 - kSnakeLength) {
            for (int64_t k = 0; x_[i1 + k] == y_[i2 + k]; ++k) {
              if (k == kSnakeLength - 1) {
                best = v;
                split = {i1, i2, false, true};
                break;
              }
            }
          }
        }
        if (best > 0) return split;
      }

      // Too expensive: take the furthest-reaching path of either search.
      if (cost >= kMaxCost) {
        int64_t fbest = -1, fbest1 = -1;
        for (int64_t d = fmax; d >= fmin; d -= 2) {
          int64_t i1 = std::min(Fwd(d), lim1);
          int64_t i2 = i1 - d;
          if (lim2 < i2) {
            i1 = lim2 + d;
            i2 = lim2;
          }
          if (fbest < i1 + i2) {
            fbest = i1 + i2;
            fbest1 = i1;
          }
        }
        int64_t bbest = kFar, bbest1 = kFar;
        for (int64_t d = bmax; d >= bmin; d -= 2) {
          int64_t i1 = std::max(off1, Bwd(d));
          int64_t i2 = i1 - d;
          if (i2 < off2) {
            i1 = off2 + d;
            i2 = off2;
          }
          if (i1 + i2 < bbest) {
            bbest = i1 + i2;
            bbest1 = i1;
          }
        }
        if ((lim1 + lim2) - bbest < fbest - (off1 + off2)) {
          return {fbest1, fbest - fbest1, true, false};
        }
        return {bbest1, bbest - bbest1, false, true};
      }
    }
  }

  const uint32_t* x_;
  const uint32_t* y_;
  int64_t n_;
  int64_t m_;
  std::vector<int64_t> forward_;
  std::vector<int64_t> backward_;
};

}  // namespace

Alignment Align(absl::Span<const uint32_t> a, absl::Span<const uint32_t> b) {
  Alignment result;
  result.removed.assign(a.size(), 0);
  result.added.assign(b.size(), 0);
  const int64_t n = static_cast<int64_t>(a.size());
  const int64_t m = static_cast<int64_t>(b.size());

  // Common prefix and suffix: the usual case of a few local edits leaves
  // only the stretch between the first and last edit.
  int64_t begin = 0;
  while (begin < n && begin < m && a[begin] == b[begin]) ++begin;
  int64_t end_a = n, end_b = m;
  while (end_a > begin && end_b > begin && a[end_a - 1] == b[end_b - 1]) {
    --end_a;
    --end_b;
  }
  if (begin == end_a && begin == end_b) return result;

  // A key that occurs on one side only can never match: mark it now and
  // keep it out of the quadratic-in-cost search.
  absl::flat_hash_map<uint32_t, uint8_t> sides;  // bit 0: in a, bit 1: in b
  for (int64_t i = begin; i < end_a; ++i) sides[a[i]] |= 1;
  for (int64_t j = begin; j < end_b; ++j) sides[b[j]] |= 2;
  std::vector<uint32_t> x, y;
  std::vector<int64_t> x_index, y_index;
  for (int64_t i = begin; i < end_a; ++i) {
    if (sides[a[i]] == 3) {
      x.push_back(a[i]);
      x_index.push_back(i);
    } else {
      result.removed[i] = 1;
    }
  }
  for (int64_t j = begin; j < end_b; ++j) {
    if (sides[b[j]] == 3) {
      y.push_back(b[j]);
      y_index.push_back(j);
    } else {
      result.added[j] = 1;
    }
  }
  if (x.empty() && y.empty()) return result;

  std::vector<uint8_t> removed_x(x.size(), 0), added_y(y.size(), 0);
  Aligner aligner(x.data(), static_cast<int64_t>(x.size()), y.data(),
                  static_cast<int64_t>(y.size()));
  aligner.Run(removed_x.data(), added_y.data());
  for (size_t i = 0; i < x.size(); ++i) {
    if (removed_x[i]) result.removed[x_index[i]] = 1;
  }
  for (size_t j = 0; j < y.size(); ++j) {
    if (added_y[j]) result.added[y_index[j]] = 1;
  }
  return result;
}

std::vector<Hunk> Hunks(const Alignment& alignment) {
  std::vector<Hunk> hunks;
  const int64_t n = static_cast<int64_t>(alignment.removed.size());
  const int64_t m = static_cast<int64_t>(alignment.added.size());
  int64_t i = 0, j = 0;
  while (i < n || j < m) {
    const bool edit_a = i < n && alignment.removed[i];
    const bool edit_b = j < m && alignment.added[j];
    if (!edit_a && !edit_b) {
      // A matched pair (or a malformed alignment's tail; skip it safely).
      ++i;
      ++j;
      continue;
    }
    Hunk hunk{i, i, j, j};
    while (i < n && alignment.removed[i]) ++i;
    while (j < m && alignment.added[j]) ++j;
    hunk.a_end = i;
    hunk.b_end = j;
    hunks.push_back(hunk);
  }
  return hunks;
}

}  // namespace nkigraph::diff
