// The convolution kernels in the interpreter against their plain C++
// references, in the same run.
//
// BM_InterpConv1d replays the registered conv1d graph (B=4, C_in = C_out =
// 256, L=2048, K=3, pad 1/1, bf16 by default) and reports
// `ratio_vs_reference`: the interpreter's Run() time over one call of the
// kernel's reference (double accumulation) on the same inputs, measured
// just before in the same process. BLAS runs single-threaded, as the
// reference does.
//
// BM_InterpDepthwiseConv1d does the same for depthwise_conv1d (N=4, C=256,
// W=2048, S=4, pad 2/1): one small matmul per channel and q tile, so it
// mostly measures per-instruction cost.
#include <benchmark/benchmark.h>
#include <cblas.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "interp/interpreter.h"
#include "kernels/registry.h"
#include "util/dtype.h"

namespace nkigraph {
namespace {

using Settings = std::vector<std::pair<std::string, std::string>>;

[[noreturn]] void Die(const absl::Status& status) {
  std::fprintf(stderr, "%s\n", status.ToString().c_str());
  std::abort();
}

// Random inputs in [-1, 1) for every input of `graph`, rounded to each
// input's dtype.
std::vector<HostArray> RandomInputs(const proto::Graph& graph) {
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  std::vector<HostArray> inputs;
  for (const proto::Tensor& t : graph.tensors()) {
    if (t.role() != proto::ROLE_INPUT) continue;
    HostArray a;
    a.name = t.name();
    a.shape.assign(t.shape().begin(), t.shape().end());
    a.f32.resize(a.num_elements());
    for (float& v : a.f32) v = RoundTo(t.dtype(), dist(rng), 240.0f);
    inputs.push_back(std::move(a));
  }
  return inputs;
}

// Traces `kernel`, times its reference once, then times the interpreter
// per iteration (graph validation and input loading excluded).
void RunAgainstReference(benchmark::State& state, const std::string& kernel,
                         const Settings& settings) {
  openblas_set_num_threads(1);
  const kernels::KernelRegistry& registry = kernels::KernelRegistry::Global();
  const kernels::KernelDef* def = registry.Find(kernel);
  if (def == nullptr) Die(absl::NotFoundError(kernel));
  absl::StatusOr<kernels::ParamValues> values =
      registry.ParseParams(*def, settings);
  if (!values.ok()) Die(values.status());
  absl::StatusOr<proto::Graph> graph = registry.Trace(kernel, settings);
  if (!graph.ok()) Die(graph.status());
  const std::vector<HostArray> inputs = RandomInputs(*graph);

  const auto ref_start = std::chrono::steady_clock::now();
  absl::StatusOr<std::vector<HostArray>> want = def->reference(*values, inputs);
  const std::chrono::duration<double> reference =
      std::chrono::steady_clock::now() - ref_start;
  if (!want.ok()) Die(want.status());
  benchmark::DoNotOptimize(want->data());

  double total = 0;
  int64_t instructions = 0;
  for (auto _ : state) {
    state.PauseTiming();
    absl::StatusOr<std::unique_ptr<interp::Interpreter>> interp =
        interp::Interpreter::Create(*graph);
    if (!interp.ok()) Die(interp.status());
    for (const HostArray& input : inputs) {
      if (absl::Status s = (*interp)->SetInput(input); !s.ok()) Die(s);
    }
    state.ResumeTiming();
    const auto start = std::chrono::steady_clock::now();
    if (absl::Status s = (*interp)->Run(); !s.ok()) Die(s);
    const std::chrono::duration<double> elapsed =
        std::chrono::steady_clock::now() - start;
    total += elapsed.count();
    instructions = (*interp)->instructions_executed();
    state.PauseTiming();
    interp->reset();
    state.ResumeTiming();
  }
  state.counters["reference_ms"] = reference.count() * 1e3;
  state.counters["ratio_vs_reference"] =
      total / static_cast<double>(state.iterations()) / reference.count();
  state.counters["instructions"] = static_cast<double>(instructions);
}

void BM_InterpConv1d(benchmark::State& state) {
  RunAgainstReference(state, "conv1d",
                      {{"batch", "4"},
                       {"c_in", "256"},
                       {"c_out", "256"},
                       {"length", "2048"},
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
