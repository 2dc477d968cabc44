// The cross-entropy kernels in the interpreter against their plain C++
// references, in the same run (bench/kernel_timing.h), at a language-model
// shape: P=2048 positions over a V=32000 vocabulary, the default 2048-wide
// vocabulary chunks, no ignore_index.
//
// BM_InterpCrossEntropyForward: the online log-sum-exp over 16 chunks per
// 128-position tile plus the target-logit gather; the reference makes two
// passes per row in double. BM_InterpCrossEntropyBackward: the gradient in
// place over the logits (mean reduction), softmax rebuilt from lse_state.
// Both report `ratio_vs_reference` for bf16 and fp32 logits.
#include <benchmark/benchmark.h>

#include "bench/kernel_timing.h"

namespace nkigraph {
namespace {

using bench::RunAgainstReference;

bench::Settings CrossEntropySettings(bool bf16) {
  return {{"num_positions", "2048"},
          {"vocab_size", "32000"},
          {"dtype", bf16 ? "bfloat16" : "float32"}};
}

void BM_InterpCrossEntropyForward(benchmark::State& state) {
  RunAgainstReference(state, "cross_entropy_forward",
                      CrossEntropySettings(state.range(0) != 0));
}
BENCHMARK(BM_InterpCrossEntropyForward)
    ->Arg(1)
    ->Arg(0)
    ->ArgName("bf16")
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime()
    ->Iterations(3);

void BM_InterpCrossEntropyBackward(benchmark::State& state) {
  RunAgainstReference(state, "cross_entropy_backward",
                      CrossEntropySettings(state.range(0) != 0));
}
BENCHMARK(BM_InterpCrossEntropyBackward)
    ->Arg(1)
    ->Arg(0)
    ->ArgName("bf16")
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime()
    ->Iterations(3);

}  // namespace
}  // namespace nkigraph

BENCHMARK_MAIN();
