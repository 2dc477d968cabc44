// The two logical cores' world, dim split and partial-sum exchange
// (kernels/two_cores.h).
#include "kernels/two_cores.h"

#include "kernels/dsl.h"
#include "proto/nkigraph.pb.h"

namespace nkigraph::kernels {
namespace {

// The other core's partial: allocated, then received by one sendrecv.
Tensor ReceiveOtherCoresPartial(const Tensor& partial,
                                const CoreExchange& exchange,
                                builder::Loc loc) {
  const int other = 1 - builder::program_id();
  Tensor received =
      builder::ndarray(partial.shape(), partial.dtype(), Buffer::kSbuf,
                       exchange.received_name, loc);
  isa::sendrecv(received, partial, /*send_to=*/other, /*recv_from=*/other,
                exchange.pipe, loc);
  return received;
}

}  // namespace

builder::WorldConfig TwoCoreWorld(int64_t num_ranks) {
  builder::WorldConfig world;
  world.num_ranks = static_cast<int>(num_ranks);
  world.num_cores = 2;
  return world;
}

CoreShard ShardOf(int64_t extent, int core) {
  const int64_t first = (extent + 1) / 2;
  return core == 0 ? CoreShard{0, first} : CoreShard{first, extent - first};
}

std::vector<Tile> ShardTiles(const CoreShard& shard, int64_t tile) {
  std::vector<Tile> tiles;
  for (const Tile t : TiledRange(shard.size, tile)) {
    tiles.push_back(Tile{t.index, shard.offset + t.offset, t.size});
  }
  return tiles;
}

void AddOtherCoresPartial(const Tensor& dst, const Tensor& partial,
                          const CoreExchange& exchange, builder::Loc loc) {
  const Tensor received = ReceiveOtherCoresPartial(partial, exchange, loc);
  isa::tensor_tensor(dst, partial, received, isa::Alu::kAdd, loc);
}

Tensor SumWithOtherCore(const Tensor& partial, const CoreExchange& exchange,
                        absl::string_view name, builder::Loc loc) {
  const Tensor received = ReceiveOtherCoresPartial(partial, exchange, loc);
  Tensor sum = builder::ndarray(partial.shape(), partial.dtype(), Buffer::kSbuf,
                                name, loc);
  isa::tensor_tensor(sum, partial, received, isa::Alu::kAdd, loc);
  return sum;
}

}  // namespace nkigraph::kernels
