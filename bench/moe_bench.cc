// The MoE backward, blockwise_mm_bwd, at a production shape against its
// plain C++ reference in the same run (bench/kernel_timing.h): T=4096
// tokens, H=4096, E=8 experts, I=1024, blocks of B=512 slots, bf16.
//
// The routing is a genuine top-2 dropless one (MakeTopKRouting): each
// token goes to 2 distinct experts, 8192 (token, expert) pairs; each
// expert's tokens fill consecutive blocks of 512 slots, its last block
// padded with empty slots, at most 8192 / 512 + E = 24 blocks, the ones
// left over empty. The checkpoints are the forward reference's on that
// routing. The routed slots and blocks used go to stderr.
//
// Reported: trace time, instructions in the graph, the reference's time
// (double, one slot at a time), the interpreter's Run() time and their
// ratio. One iteration: the reference alone takes minutes. Input
// generation (the forward reference, to make consistent checkpoints) is
// not timed.
#include <benchmark/benchmark.h>

#include <cstdint>
#include <cstdio>
#include <vector>

#include "absl/status/statusor.h"
#include "bench/kernel_timing.h"
#include "kernels/blockwise_mm_bwd.h"
#include "kernels/moe_common.h"
#include "kernels/registry.h"
#include "util/host_array.h"

namespace nkigraph {
namespace {

constexpr int64_t kTopK = 2;

absl::StatusOr<std::vector<HostArray>> TopKInputs(
    const kernels::ParamValues& values, uint64_t seed) {
  absl::StatusOr<const kernels::MoeParams*> typed =
      values.Typed<kernels::MoeParams>();
  if (!typed.ok()) return typed.status();
  const kernels::MoeParams& params = **typed;
  absl::StatusOr<std::vector<HostArray>> inputs =
      kernels::MakeBlockwiseMmBwdInputs(params, seed, kTopK);
  if (!inputs.ok()) return inputs.status();
  int64_t slots = 0, blocks = 0;
  for (const HostArray& a : *inputs) {
    if (a.name != "token_position_to_id") continue;
    for (int64_t n = 0; n < params.num_blocks; ++n) {
      bool used = false;
      for (int64_t b = 0; b < params.block_size; ++b) {
        if (a.i32[n * params.block_size + b] >= 0) {
          ++slots;
          used = true;
        }
      }
      blocks += used ? 1 : 0;
    }
  }
  std::fprintf(stderr,
               "routing: top-%lld dropless, %lld routed slots in %lld of "
               "%lld blocks\n",
               static_cast<long long>(kTopK), static_cast<long long>(slots),
               static_cast<long long>(blocks),
               static_cast<long long>(params.num_blocks));
  return inputs;
}

void BM_InterpBlockwiseMmBwd(benchmark::State& state) {
  bench::RunAgainstReference(state, "blockwise_mm_bwd",
                             {{"num_tokens", "4096"},
                              {"hidden", "4096"},
                              {"num_experts", "8"},
                              {"intermediate", "1024"},
                              {"block_size", "512"},
                              {"num_blocks", "24"},
                              {"dtype", "bfloat16"}},
                             TopKInputs);
}
BENCHMARK(BM_InterpBlockwiseMmBwd)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime()
    ->Iterations(1);

}  // namespace
}  // namespace nkigraph

BENCHMARK_MAIN();
