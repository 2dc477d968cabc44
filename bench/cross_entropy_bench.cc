// The cross-entropy kernels in the interpreter against their plain C++
// references, in the same run (bench/kernel_timing.h), at a language-model
// shape: P=2048 positions over a V=32000 vocabulary, the default 2048-wide
// vocabulary chunks, no ignore_index.
//
// BM_InterpCrossEntropyForward: the online log-sum-exp over 16 chunks per
// 128-position tile plus the target-logit gather; the reference makes two
// passes per row in double. BM_InterpCrossEntropyBackward: the gradient in
// place over the logits (mean reduction), softmax rebuilt from lse_state.
// Both report `ratio_vs_reference` for bf16 and fp32 logits. The forward
// pass also reports `ratio_vs_baseline`: against the same math as plain
// fp32 loops (ForwardLoop below: a max pass and an exp-sum pass per row,
// vectorised, exp as ops::ExpRow), the speed the machine does it at
// directly.
#include <benchmark/benchmark.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "bench/kernel_timing.h"
#include "ops/vector_exp.h"

namespace nkigraph {
namespace {

using bench::RunAgainstReference;

// loss[p] = log sum_j exp(x[p, j]) - x[p, target[p]] in fp32 loops the
// compiler vectorises: the row's max with eight running maxima, then the
// shifted exponentials in blocks and their sum with eight partial sums.
void ForwardLoop(const bench::KernelCase& c) {
  const HostArray* logits = nullptr;
  const HostArray* targets = nullptr;
  for (const HostArray& a : c.inputs) {
    if (a.name == "logits") logits = &a;
    if (a.name == "targets") targets = &a;
  }
  if (logits == nullptr || targets == nullptr) {
    bench::Die(absl::NotFoundError("cross_entropy_forward inputs"));
  }
  const int64_t p = logits->shape[0];
  const int64_t v = logits->shape[1];
  std::vector<float> loss(p), lse(p);
  constexpr int64_t kBlock = 1024;
  float shifted[kBlock];
  for (int64_t i = 0; i < p; ++i) {
    const float* row = &logits->f32[i * v];
    float m8[8];
    std::fill(m8, m8 + 8, -std::numeric_limits<float>::infinity());
    int64_t j = 0;
    for (; j + 8 <= v; j += 8) {
      for (int l = 0; l < 8; ++l) m8[l] = std::max(m8[l], row[j + l]);
    }
    float m = *std::max_element(m8, m8 + 8);
    for (; j < v; ++j) m = std::max(m, row[j]);
    float s8[8] = {};
    for (int64_t j0 = 0; j0 < v; j0 += kBlock) {
      const int64_t n = std::min(kBlock, v - j0);
      for (int64_t k = 0; k < n; ++k) shifted[k] = row[j0 + k] - m;
      ops::ExpRow(shifted, shifted, n);
      int64_t k = 0;
      for (; k + 8 <= n; k += 8) {
        for (int l = 0; l < 8; ++l) s8[l] += shifted[k + l];
      }
      for (; k < n; ++k) s8[0] += shifted[k];
    }
    float sum = 0;
    for (float x : s8) sum += x;
    lse[i] = m + std::log(sum);
    loss[i] = lse[i] - row[targets->i32[i]];
  }
  benchmark::DoNotOptimize(loss.data());
  benchmark::DoNotOptimize(lse.data());
}

bench::Settings CrossEntropySettings(bool bf16) {
  return {{"num_positions", "2048"},
          {"vocab_size", "32000"},
          {"dtype", bf16 ? "bfloat16" : "float32"}};
}

void BM_InterpCrossEntropyForward(benchmark::State& state) {
  RunAgainstReference(state, "cross_entropy_forward",
                      CrossEntropySettings(state.range(0) != 0), nullptr,
                      ForwardLoop, static_cast<int>(state.range(1)));
}
BENCHMARK(BM_InterpCrossEntropyForward)
    ->ArgsProduct({{1, 0}, {1, 2}})
    ->ArgNames({"bf16", "threads"})
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
