// The MoE backward, blockwise_mm_bwd, at a production shape against its
// plain C++ reference in the same run (bench/kernel_timing.h): T=4096
// tokens, H=4096, E=8 experts, I=1024, blocks of B=512 slots, bf16.
//
// Top-2 routing of 4096 tokens gives 8192 (token, expert) pairs; dropless
// blocking pads each expert's share up to whole blocks, at most
// 8192 / 512 + E = 24 blocks. The kernel's input generator leaves about a
// quarter of the slots empty, so N=24 blocks carry about 9200 routed slots:
// the top-2 load with its padding.
//
// Reported: trace time, instructions in the graph, the reference's time
// (double, one slot at a time), the interpreter's Run() time and their
// ratio. One iteration: the reference alone takes minutes. Input
// generation (the forward reference, to make consistent checkpoints) is
// not timed.
#include <benchmark/benchmark.h>

#include "bench/kernel_timing.h"

namespace nkigraph {
namespace {

void BM_InterpBlockwiseMmBwd(benchmark::State& state) {
  bench::RunAgainstReference(state, "blockwise_mm_bwd",
                             {{"num_tokens", "4096"},
                              {"hidden", "4096"},
                              {"num_experts", "8"},
                              {"intermediate", "1024"},
                              {"block_size", "512"},
                              {"num_blocks", "24"},
                              {"dtype", "bfloat16"}});
}
BENCHMARK(BM_InterpBlockwiseMmBwd)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime()
    ->Iterations(1);

}  // namespace
}  // namespace nkigraph

BENCHMARK_MAIN();
