#include "util/graph_arena.h"

#include <sys/mman.h>

#include <cstddef>
#include <cstdlib>
#include <new>

namespace nkigraph {
namespace {

// Arena blocks. A graph of a million instructions takes about 600 MB of
// messages, and with protobuf's default 8 KiB malloc'd blocks a third of the
// tracing time went to page faults as the kernel handed that memory out one
// 4 KiB page at a time. Blocks instead double up to kMaxArenaBlock, and the
// big ones are mapped with MAP_POPULATE: the kernel fills a whole block in
// one call, about a third cheaper than faulting it in page by page. The
// cost is at most one block committed before it is used. Small traces stay
// on malloc. (Transparent huge pages were tried: on a virtual machine the
// first touch of a huge page can be many times slower than 4 KiB pages.)
constexpr size_t kFirstArenaBlock = size_t{16} << 10;
constexpr size_t kMaxArenaBlock = size_t{4} << 20;

void* AllocateArenaBlock(size_t size) {
  return AllocateGraphArenaBlock(size, /*populate=*/true);
}

}  // namespace

void* AllocateGraphArenaBlock(size_t size, bool populate) {
  if (size < kMappedArenaBlock) {
    void* block = std::malloc(size);
    if (block == nullptr) throw std::bad_alloc();
    return block;
  }
  void* block =
      mmap(nullptr, size, PROT_READ | PROT_WRITE,
           MAP_PRIVATE | MAP_ANONYMOUS | (populate ? MAP_POPULATE : 0), -1, 0);
  if (block == MAP_FAILED) throw std::bad_alloc();
  return block;
}

void FreeGraphArenaBlock(void* block, size_t size) {
  if (size < kMappedArenaBlock) {
    std::free(block);
  } else {
    munmap(block, size);
  }
}

google::protobuf::ArenaOptions GraphArenaOptions() {
  google::protobuf::ArenaOptions options;
  options.start_block_size = kFirstArenaBlock;
  options.max_block_size = kMaxArenaBlock;
  options.block_alloc = AllocateArenaBlock;
  options.block_dealloc = FreeGraphArenaBlock;
  return options;
}

}  // namespace nkigraph
