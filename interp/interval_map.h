#ifndef NKIGRAPH_INTERP_INTERVAL_MAP_H_
#define NKIGRAPH_INTERP_INTERVAL_MAP_H_

#include <algorithm>
#include <cstdint>
#include <iterator>
#include <map>

namespace nkigraph::interp {

// A map from byte offsets to values, stored as disjoint half-open
// intervals [begin, end) of equal value. Offsets never assigned hold V{}.
// Memory grows with the number of distinct runs of values, not with the
// number of bytes: Update splits intervals at the ends of the updated range
// and merges neighbours that end up equal, so the map is always the
// coarsest exact description of the per-byte values.
//
// V must be default-constructible, copyable and equality-comparable.
template <typename V>
class IntervalMap {
 public:
  // Calls visit(begin, end, value) for each stored interval overlapping
  // [begin, end), clipped to it, in increasing order, until visit returns
  // true. Gaps (bytes holding V{}) are not visited.
  template <typename Fn>
  void Visit(int64_t begin, int64_t end, Fn&& visit) const {
    for (auto it = FirstOverlapping(begin); it != map_.end() && it->first < end;
         ++it) {
      if (visit(std::max(begin, it->first), std::min(end, it->second.end),
                it->second.value)) {
        return;
      }
    }
  }

  // Applies update(value) once to the value of every run of equal bytes in
  // [begin, end), gaps included (starting from V{}).
  template <typename Fn>
  void Update(int64_t begin, int64_t end, Fn&& update) {
    if (begin >= end) return;
    SplitAt(begin);
    SplitAt(end);
    int64_t pos = begin;
    auto it = map_.lower_bound(begin);
    while (pos < end) {
      if (it == map_.end() || it->first > pos) {
        const int64_t gap_end =
            it == map_.end() ? end : std::min(end, it->first);
        it = map_.emplace_hint(it, pos, Entry{gap_end, V{}});
      }
      update(it->second.value);
      pos = it->second.end;
      ++it;
    }
    Coalesce(begin, end);
  }

  // Number of stored intervals.
  int64_t size() const { return static_cast<int64_t>(map_.size()); }

  // Approximate heap bytes per stored interval (tree node and allocator
  // header), for memory accounting.
  static constexpr int64_t kBytesPerInterval =
      static_cast<int64_t>(sizeof(std::pair<const int64_t, int64_t>) +
                           sizeof(V) + 4 * sizeof(void*) + 16);

 private:
  struct Entry {
    int64_t end;
    V value;
  };
  using Map = std::map<int64_t, Entry>;

  // The first interval whose end is past `pos`.
  typename Map::const_iterator FirstOverlapping(int64_t pos) const {
    auto it = map_.upper_bound(pos);
    if (it != map_.begin()) {
      auto prev = std::prev(it);
      if (prev->second.end > pos) return prev;
    }
    return it;
  }

  // Makes `pos` the start of an interval if an interval strictly contains
  // it.
  void SplitAt(int64_t pos) {
    auto it = map_.upper_bound(pos);
    if (it == map_.begin()) return;
    --it;
    if (it->first < pos && pos < it->second.end) {
      map_.emplace_hint(std::next(it), pos,
                        Entry{it->second.end, it->second.value});
      it->second.end = pos;
    }
  }

  // Merges equal, touching intervals from the one ending at `begin`
  // through the one starting at `end`.
  void Coalesce(int64_t begin, int64_t end) {
    auto it = map_.lower_bound(begin);
    if (it != map_.begin()) {
      auto prev = std::prev(it);
      if (prev->second.end == begin) it = prev;
    }
    while (it != map_.end() && it->first <= end) {
      auto next = std::next(it);
      if (next == map_.end()) break;
      if (it->second.end == next->first &&
          it->second.value == next->second.value) {
        it->second.end = next->second.end;
        map_.erase(next);
      } else {
        it = next;
      }
    }
  }

  Map map_;
};

}  // namespace nkigraph::interp

#endif  // NKIGRAPH_INTERP_INTERVAL_MAP_H_
