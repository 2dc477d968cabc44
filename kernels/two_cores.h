#ifndef NKIGRAPH_KERNELS_TWO_CORES_H_
#define NKIGRAPH_KERNELS_TWO_CORES_H_

// What the kernels running on the two logical cores of a rank (LNC 2)
// share: their world, the split of a dim between the cores, and the
// exchange that sums the two cores' partial results (one sendrecv to the
// other core and one add).

#include <cstdint>
#include <vector>

#include "absl/strings/string_view.h"
#include "builder/tensor.h"
#include "builder/tiling.h"
#include "builder/tracer.h"

namespace nkigraph::kernels {

// `num_ranks` ranks of two logical cores each, the ranks one group.
builder::WorldConfig TwoCoreWorld(int64_t num_ranks = 1);

// This core's part of a dim split across the two cores: [offset,
// offset + size), the first core taking the larger half (size may be 0).
struct CoreShard {
  int64_t offset;
  int64_t size;
};
CoreShard ShardOf(int64_t extent, int core);
// The tiles of a shard: offsets into the whole dim, indexes from 0 within
// the shard.
std::vector<builder::Tile> ShardTiles(const CoreShard& shard, int64_t tile);

// How one exchange is recorded: the sendrecv's pipe (both cores issue
// their exchanges in the same order, so one pipe pairs them) and the name
// of the SBUF tensor receiving the other core's partial, of the partial's
// shape and dtype.
struct CoreExchange {
  int pipe;
  absl::string_view received_name;
};

// dst = partial + the other core's partial (SBUF): one sendrecv, one add.
// The instructions carry `loc`, the caller's line.
void AddOtherCoresPartial(const builder::Tensor& dst,
                          const builder::Tensor& partial,
                          const CoreExchange& exchange,
                          builder::Loc loc = builder::Loc::current());
// The same sum into a new SBUF tensor `name` of the partial's shape and
// dtype, allocated after the received one.
builder::Tensor SumWithOtherCore(const builder::Tensor& partial,
                                 const CoreExchange& exchange,
                                 absl::string_view name,
                                 builder::Loc loc = builder::Loc::current());

}  // namespace nkigraph::kernels

#endif  // NKIGRAPH_KERNELS_TWO_CORES_H_
