#ifndef NKIGRAPH_GRAPH_REGION_TRACKER_H_
#define NKIGRAPH_GRAPH_REGION_TRACKER_H_

// Last writer and readers-since-write of memory regions, interval-based:
// per address space an ordered map of row ranges, each holding a short list
// of byte-range records. Fed accesses in program order, it answers which
// earlier instructions each access depends on — only the nearest ones: the
// last writer of each byte (read-after-write), the latest reader per engine
// since that write (write-after-read), or the last writer when nobody read
// (write-after-write).

#include <array>
#include <cstdint>
#include <map>
#include <vector>

#include "absl/container/node_hash_map.h"
#include "graph/graph_index.h"
#include "graph/regions.h"

namespace nkigraph::graph {

enum class DepKind { kRaw, kWar, kWaw };

class RegionTracker {
 public:
  struct Hit {
    int from;  // the earlier instruction
    DepKind kind;
    uint32_t tensor;  // the tensor the earlier instruction accessed
  };

  // Records that `instr` (on `engine`) accesses `touch`, appending the
  // earlier accesses it must follow to `hits`.
  void Access(const Touch& touch, int instr, int engine,
              std::vector<Hit>* hits);

  // Byte-range records kept per row range; the oldest are forgotten
  // beyond this (dependencies on them are implied by newer ones in
  // practice, and the cap keeps pathological patterns linear).
  static constexpr size_t kMaxRecords = 48;

 private:
  struct Record {
    int64_t lo = 0;
    int64_t hi = 0;
    int writer = -1;
    uint32_t writer_tensor = 0;
    std::array<int, kNumEngines> readers;
    std::array<uint32_t, kNumEngines> reader_tensors;
    Record() {
      readers.fill(-1);
      reader_tensors.fill(0);
    }
  };
  struct Rows {
    int64_t hi = 0;
    std::vector<Record> records;  // oldest first
  };
  using Space = std::map<int64_t, Rows>;

  // Makes `at` the start of a row range; returns it.
  static Space::iterator Split(Space& space, int64_t at);
  static void Read(Rows& rows, const Touch& touch, int instr, int engine,
                   std::vector<Hit>* hits);
  static void Write(Rows& rows, const Touch& touch, int instr,
                    std::vector<Hit>* hits);

  // Node-based, so the last space asked for can be kept by pointer
  // (consecutive accesses mostly stay in one SBUF).
  absl::node_hash_map<uint64_t, Space> spaces_;
  uint64_t last_key_ = 0;
  Space* last_space_ = nullptr;
};

}  // namespace nkigraph::graph

#endif  // NKIGRAPH_GRAPH_REGION_TRACKER_H_
