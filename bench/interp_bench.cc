// The interpreter against the machine's BLAS, in the same run.
//
// BM_InterpTiledMatmul replays the registered tiled_matmul graph
// (2048 x 2048 x 2048: 2048 nc_matmul instructions on 128 x 128 x 512 tiles
// plus their DMAs and PSUM evacuations) and reports `ratio_vs_sgemm`: its
// time over one cblas_sgemm of the same matrices, measured just before in
// the same process. BLAS runs single-threaded on both sides, so the ratio
// compares like with like.
//
// BM_InterpDispatch runs a stream of tiny tensor_tensor instructions
// ([1, 1] operands) and reports the time per instruction.
#include <benchmark/benchmark.h>
#include <cblas.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <random>
#include <vector>

#include "builder/isa.h"
#include "builder/tracer.h"
#include "interp/interpreter.h"
#include "kernels/registry.h"

namespace nkigraph {
namespace {

[[noreturn]] void Die(const absl::Status& status) {
  std::fprintf(stderr, "%s\n", status.ToString().c_str());
  std::abort();
}

std::vector<float> RandomMatrix(int64_t elements, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<float> values(elements);
  for (float& v : values) v = static_cast<float>(rng() >> 40) * 0x1p-23f - 1.0f;
  return values;
}

// Best of three single-threaded sgemm calls: C[m, n] = A[m, k] @ B[k, n].
double SgemmSeconds(int64_t size, const std::vector<float>& a,
                    const std::vector<float>& b) {
  std::vector<float> c(size * size);
  double best = 1e30;
  for (int rep = 0; rep < 3; ++rep) {
    const auto start = std::chrono::steady_clock::now();
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, size, size, size,
                1.0f, a.data(), size, b.data(), size, 0.0f, c.data(), size);
    const std::chrono::duration<double> elapsed =
        std::chrono::steady_clock::now() - start;
    best = std::min(best, elapsed.count());
  }
  benchmark::DoNotOptimize(c.data());
  return best;
}

void BM_InterpTiledMatmul(benchmark::State& state) {
  openblas_set_num_threads(1);
  const int64_t size = state.range(0);
  const bool bf16 = state.range(1) != 0;
  const std::string n = std::to_string(size);
  absl::StatusOr<proto::Graph> graph = kernels::KernelRegistry::Global().Trace(
      "tiled_matmul", {{"m", n},
                       {"k", n},
                       {"n", n},
                       {"bias", "0"},
                       {"dtype", bf16 ? "bfloat16" : "float32"}});
  if (!graph.ok()) Die(graph.status());

  HostArray lhs{"lhs",        proto::FLOAT32,
                {size, size}, RandomMatrix(size * size, 1),
                {},           {}};
  HostArray rhs{"rhs",        proto::FLOAT32,
                {size, size}, RandomMatrix(size * size, 2),
                {},           {}};
  const double sgemm = SgemmSeconds(size, lhs.f32, rhs.f32);

  double total = 0;
  int64_t instructions = 0;
  for (auto _ : state) {
    state.PauseTiming();
    absl::StatusOr<std::unique_ptr<interp::Interpreter>> interp =
        interp::Interpreter::Create(*graph);
    if (!interp.ok()) Die(interp.status());
    if (absl::Status s = (*interp)->SetInput(lhs); !s.ok()) Die(s);
    if (absl::Status s = (*interp)->SetInput(rhs); !s.ok()) Die(s);
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
  state.counters["sgemm_ms"] = sgemm * 1e3;
  state.counters["ratio_vs_sgemm"] =
      total / static_cast<double>(state.iterations()) / sgemm;
  state.counters["instructions"] = static_cast<double>(instructions);
}
BENCHMARK(BM_InterpTiledMatmul)
    ->Args({2048, 0})
    ->Args({2048, 1})
    ->ArgNames({"size", "bf16"})
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime()
    ->Iterations(2);

void BM_InterpDispatch(benchmark::State& state) {
  const int64_t count = state.range(0);
  builder::Tracer tracer(builder::TraceConfig{"dispatch", {}, {}});
  absl::StatusOr<proto::Graph> graph = tracer.Trace([&](builder::Tracer& t) {
    using builder::Buffer;
    namespace isa = builder::isa;
    builder::Tensor out =
        t.Allocate({1, 1}, proto::FLOAT32, Buffer::kSharedHbm, "out");
    builder::Tensor a =
        builder::ndarray({1, 1}, proto::FLOAT32, Buffer::kSbuf, "a");
    isa::memset(a, 1.0f);
    for (int64_t i = 0; i < count; ++i) {
      isa::tensor_tensor(a, a, a, isa::Alu::kMaximum);
    }
    isa::dma_copy(out, a);
    t.Output("out", out);
  });
  if (!graph.ok()) Die(graph.status());
  int64_t executed = 0;
  for (auto _ : state) {
    state.PauseTiming();
    absl::StatusOr<std::unique_ptr<interp::Interpreter>> interp =
        interp::Interpreter::Create(*graph);
    if (!interp.ok()) Die(interp.status());
    state.ResumeTiming();
    if (absl::Status s = (*interp)->Run(); !s.ok()) Die(s);
    executed += (*interp)->instructions_executed();
  }
  state.SetItemsProcessed(executed);
  state.counters["ns_per_instruction"] = benchmark::Counter(
      static_cast<double>(executed) * 1e-9,
      benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
}
BENCHMARK(BM_InterpDispatch)
    ->Arg(100000)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

}  // namespace
}  // namespace nkigraph

BENCHMARK_MAIN();
