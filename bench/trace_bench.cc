// Tracing and serialization throughput on a graph of >= 1M instructions.
//
// Reports instructions traced per second (items_per_second) for the DSL and
// bytes per second for deterministic binary serialization of the result.
#include <benchmark/benchmark.h>

#include <cstdlib>
#include <memory>

#include "bench/streaming_kernel.h"
#include "builder/isa.h"
#include "builder/tracer.h"
#include "util/graph_io.h"

namespace nkigraph {
namespace {

constexpr int64_t kInstructionsPerStep = bench::kStreamingInstructionsPerStep;
using bench::TraceStreamingKernel;

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
