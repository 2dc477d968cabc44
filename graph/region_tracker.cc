#include "graph/region_tracker.h"

#include <limits>

namespace nkigraph::graph {

RegionTracker::Space::iterator RegionTracker::Split(Space& space, int64_t at) {
  auto it = space.upper_bound(at);
  --it;  // the range containing `at` (the map always covers [0, max))
  if (it->first == at) return it;
  Rows upper = it->second;  // copies the records
  it->second.hi = at;
  return space.emplace_hint(std::next(it), at, std::move(upper));
}

void RegionTracker::Read(Rows& rows, const Touch& touch, int instr, int engine,
                         std::vector<Hit>* hits) {
  bool covered = false;
  for (size_t r = rows.records.size(); r-- > 0;) {
    Record& rec = rows.records[r];
    if (rec.hi <= touch.byte_lo || touch.byte_hi <= rec.lo) continue;
    if (rec.writer >= 0 && rec.writer != instr) {
      hits->push_back({rec.writer, DepKind::kRaw, rec.writer_tensor});
    }
    rec.readers[engine] = instr;
    rec.reader_tensors[engine] = touch.tensor;
    if (rec.lo <= touch.byte_lo && touch.byte_hi <= rec.hi) {
      covered = true;
      // A covering write hides everything older.
      if (rec.writer >= 0) return;
    }
  }
  if (covered) return;
  // Never written here (an input, or memory read before any write): keep
  // a reader-only record so a later write finds its readers.
  Record rec;
  rec.lo = touch.byte_lo;
  rec.hi = touch.byte_hi;
  rec.readers[engine] = instr;
  rec.reader_tensors[engine] = touch.tensor;
  rows.records.push_back(rec);
  if (rows.records.size() > kMaxRecords) {
    rows.records.erase(rows.records.begin());
  }
}

void RegionTracker::Write(Rows& rows, const Touch& touch, int instr,
                          std::vector<Hit>* hits) {
  for (size_t r = rows.records.size(); r-- > 0;) {
    const Record& rec = rows.records[r];
    if (rec.hi <= touch.byte_lo || touch.byte_hi <= rec.lo) continue;
    bool read = false;
    for (int e = 0; e < kNumEngines; ++e) {
      if (rec.readers[e] < 0) continue;
      read = true;
      if (rec.readers[e] != instr) {
        hits->push_back({rec.readers[e], DepKind::kWar, rec.reader_tensors[e]});
      }
    }
    if (!read && rec.writer >= 0 && rec.writer != instr) {
      hits->push_back({rec.writer, DepKind::kWaw, rec.writer_tensor});
    }
    // Readers of a covering write were ordered after it: nothing older
    // matters.
    if (rec.writer >= 0 && rec.lo <= touch.byte_lo && touch.byte_hi <= rec.hi) {
      break;
    }
  }
  // The write replaces every record it covers.
  std::erase_if(rows.records, [&](const Record& rec) {
    return touch.byte_lo <= rec.lo && rec.hi <= touch.byte_hi;
  });
  Record rec;
  rec.lo = touch.byte_lo;
  rec.hi = touch.byte_hi;
  rec.writer = instr;
  rec.writer_tensor = touch.tensor;
  rows.records.push_back(rec);
  if (rows.records.size() > kMaxRecords) {
    rows.records.erase(rows.records.begin());
  }
}

void RegionTracker::Access(const Touch& touch, int instr, int engine,
                           std::vector<Hit>* hits) {
  if (touch.row_lo >= touch.row_hi || touch.byte_lo >= touch.byte_hi) return;
  if (last_space_ == nullptr || last_key_ != touch.space_key) {
    auto [it, inserted] = spaces_.try_emplace(touch.space_key);
    if (inserted) {
      it->second.emplace(0, Rows{std::numeric_limits<int64_t>::max(), {}});
    }
    last_key_ = touch.space_key;
    last_space_ = &it->second;
  }
  Space& space = *last_space_;
  // (Splitting at row_hi leaves `first` valid: map nodes stay put.)
  const auto first = Split(space, touch.row_lo);
  Split(space, touch.row_hi);
  for (auto seg = first; seg != space.end() && seg->first < touch.row_hi;
       ++seg) {
    if (touch.write) {
      Write(seg->second, touch, instr, hits);
    } else {
      Read(seg->second, touch, instr, engine, hits);
    }
  }
}

}  // namespace nkigraph::graph
