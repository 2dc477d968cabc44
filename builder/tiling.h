#ifndef NKIGRAPH_BUILDER_TILING_H_
#define NKIGRAPH_BUILDER_TILING_H_

#include <algorithm>
#include <cstdint>
#include <initializer_list>

#include "builder/tensor.h"

namespace nkigraph::builder {

// One tile of a tiled range: tile number, first element and size (the last
// tile may be short).
struct Tile {
  int64_t index;
  int64_t offset;
  int64_t size;
};

// `for (Tile t : TiledRange(n, 128))` walks [0, n) in tiles of at most
// `tile` elements, tail included.
class TiledRange {
 public:
  TiledRange(int64_t extent, int64_t tile) : extent_(extent), tile_(tile) {}

  class Iterator {
   public:
    Iterator(int64_t offset, int64_t extent, int64_t tile)
        : offset_(offset), extent_(extent), tile_(tile) {}
    Tile operator*() const {
      const int64_t size =
          offset_ + tile_ <= extent_ ? tile_ : extent_ - offset_;
      return Tile{offset_ / tile_, offset_, size};
    }
    Iterator& operator++() {
      offset_ += tile_;
      return *this;
    }
    bool operator!=(const Iterator& other) const {
      return offset_ < other.offset_;
    }

   private:
    int64_t offset_;
    int64_t extent_;
    int64_t tile_;
  };

  Iterator begin() const { return Iterator(0, extent_, tile_); }
  Iterator end() const { return Iterator(extent_, extent_, tile_); }
  int64_t size() const { return (extent_ + tile_ - 1) / tile_; }

 private:
  int64_t extent_;
  int64_t tile_;
};

inline int64_t CeilDiv(int64_t a, int64_t b) { return (a + b - 1) / b; }

// The partition-tiled layout of an on-chip operand whose leading dim K is
// longer than the partitions P: the K tiles side by side on the free axis,
// [min(K, P), KT, F...] with KT = ceil(K / P), tile t holding rows
// t·P ... t·P + P - 1 on its first partitions. What a matmul contracting
// over K > 128, or a transpose in 128-row pieces, works on.
inline Shape PartitionTiledShape(int64_t k, int64_t partitions,
                                 std::initializer_list<int64_t> free) {
  Shape shape = {std::min(k, partitions), CeilDiv(k, partitions)};
  shape.insert(shape.end(), free.begin(), free.end());
  return shape;
}

// Tile `t` of a partition-tiled tensor or view, the tile index on dim
// `tile_dim` (1 in PartitionTiledShape's layout): [t.size, F...].
inline Tensor PartitionTile(const Tensor& tiled, const Tile& t,
                            int tile_dim = 1, Loc loc = Loc::current()) {
  return tiled.Slice(0, 0, t.size, 1, loc).Select(tile_dim, t.index, loc);
}

}  // namespace nkigraph::builder

#endif  // NKIGRAPH_BUILDER_TILING_H_
