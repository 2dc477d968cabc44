// The convolution kernels in the interpreter against their plain C++
// references, in the same run (bench/kernel_timing.h).
//
// BM_InterpConv1d replays the registered conv1d graph (B=4, C_in = C_out =
// 256, L=4096, K=3, pad 1/1, bf16 and fp32) and reports
// `ratio_vs_reference`: the interpreter's Run() time over one call of the
// kernel's reference (double accumulation) on the same inputs, measured
// just before in the same process. BLAS runs single-threaded, as the
// reference does.
//
// BM_InterpDepthwiseConv1d does the same for depthwise_conv1d (N=4, C=256,
// W=2048, S=4, pad 2/1): one small matmul per channel and q tile, so it
// mostly measures per-instruction cost.
#include <benchmark/benchmark.h>

#include "bench/kernel_timing.h"

namespace nkigraph {
namespace {

using bench::RunAgainstReference;

void BM_InterpConv1d(benchmark::State& state) {
  RunAgainstReference(state, "conv1d",
                      {{"batch", "4"},
                       {"c_in", "256"},
                       {"c_out", "256"},
                       {"length", "4096"},
                       {"kernel_size", "3"},
                       {"pad_left", "1"},
                       {"pad_right", "1"},
                       {"dtype", state.range(0) ? "bfloat16" : "float32"}});
}
BENCHMARK(BM_InterpConv1d)
    ->Arg(1)
    ->Arg(0)
    ->ArgName("bf16")
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime()
    ->Iterations(3);

void BM_InterpDepthwiseConv1d(benchmark::State& state) {
  RunAgainstReference(state, "depthwise_conv1d",
                      {{"batch", "4"},
                       {"channels", "256"},
                       {"width", "2048"},
                       {"kernel_size", "4"},
                       {"pad_left", "2"},
                       {"pad_right", "1"},
                       {"dtype", "bfloat16"}});
}
BENCHMARK(BM_InterpDepthwiseConv1d)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime()
    ->Iterations(3);

}  // namespace
}  // namespace nkigraph

BENCHMARK_MAIN();
