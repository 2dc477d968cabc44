// Tracing and serialization throughput on a graph of >= 1M instructions.
//
// Reports instructions traced per second (items_per_second) for the DSL and
// bytes per second for deterministic binary serialization of the result.
#include <benchmark/benchmark.h>

#include <cstdlib>
#include <memory>

#include "builder/isa.h"
#include "builder/tracer.h"
#include "util/graph_io.h"

namespace nkigraph {
namespace {

using builder::Buffer;
using builder::Tensor;
namespace isa = builder::isa;

constexpr int64_t kInstructionsPerStep = 5;

// A streaming elementwise kernel: per step, load a tile, two vector ops, an
// activation, store. Each step allocates its tiles in its own scope.
std::unique_ptr<builder::Tracer> TraceStreamingKernel(int64_t steps) {
  auto tracer = std::make_unique<builder::Tracer>(
      builder::TraceConfig{"streaming", {}, {}});
  absl::StatusOr<const proto::Graph*> graph =
      tracer->TraceInPlace([&](builder::Tracer& t) {
        constexpr int64_t kCols = 512;
        constexpr int64_t kTiles = 64;
        Tensor in = t.Input("in", {128, kCols * kTiles}, proto::BFLOAT16);
        Tensor out = t.Allocate({128, kCols * kTiles}, proto::BFLOAT16,
                                Buffer::kSharedHbm, "out");
        for (int64_t s = 0; s < steps; ++s) {
          builder::Scope scope("step");
          const int64_t col = (s % kTiles) * kCols;
          Tensor a = builder::ndarray({128, kCols}, proto::BFLOAT16,
                                      Buffer::kSbuf, "a");
          Tensor b = builder::ndarray({128, kCols}, proto::FLOAT32,
                                      Buffer::kSbuf, "b");
          isa::dma_copy(a, in.Slice(1, col, kCols));
          isa::tensor_tensor(b, a, a, isa::Alu::kMultiply);
          isa::tensor_scalar(b, b, isa::Alu::kAdd, 1.0f);
          isa::activation(a, isa::ActFunc::kExp, b);
          isa::dma_copy(out.Slice(1, col, kCols), a);
        }
        t.Output("out", out);
      });
  if (!graph.ok()) {
    fprintf(stderr, "trace failed: %s\n", graph.status().ToString().c_str());
    std::abort();
  }
  return tracer;
}

const proto::Graph& GraphOf(const builder::Tracer& tracer) {
  return *tracer.graph();
}

void BM_TraceInstructions(benchmark::State& state) {
  const int64_t steps = state.range(0);
  for (auto _ : state) {
    std::unique_ptr<builder::Tracer> tracer = TraceStreamingKernel(steps);
    benchmark::DoNotOptimize(tracer);
    state.PauseTiming();  // freeing the graph is not tracing
    tracer.reset();
    state.ResumeTiming();
  }
  state.SetItemsProcessed(state.iterations() * steps * kInstructionsPerStep);
  state.counters["instructions"] =
      static_cast<double>(steps * kInstructionsPerStep);
}
BENCHMARK(BM_TraceInstructions)
    ->Arg(1'000'000 / kInstructionsPerStep)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

void BM_SerializeGraph(benchmark::State& state) {
  const std::unique_ptr<builder::Tracer> tracer =
      TraceStreamingKernel(state.range(0));
  const proto::Graph& graph = GraphOf(*tracer);
  int64_t bytes = 0;
  for (auto _ : state) {
    std::string out = SerializeDeterministic(graph);
    bytes = static_cast<int64_t>(out.size());
    benchmark::DoNotOptimize(out);
  }
  state.SetBytesProcessed(state.iterations() * bytes);
  state.counters["graph_MB"] = static_cast<double>(bytes) / 1e6;
}
BENCHMARK(BM_SerializeGraph)
    ->Arg(1'000'000 / kInstructionsPerStep)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

void BM_ParseGraph(benchmark::State& state) {
  const std::string bytes =
      SerializeDeterministic(GraphOf(*TraceStreamingKernel(state.range(0))));
  for (auto _ : state) {
    proto::Graph graph;
    benchmark::DoNotOptimize(graph.ParseFromString(bytes));
  }
  state.SetBytesProcessed(state.iterations() *
                          static_cast<int64_t>(bytes.size()));
}
BENCHMARK(BM_ParseGraph)
    ->Arg(1'000'000 / kInstructionsPerStep)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

}  // namespace
}  // namespace nkigraph

BENCHMARK_MAIN();
