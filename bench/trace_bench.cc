// Tracing, serialization and loading throughput on a graph of >= 1M
// instructions (the streaming kernel, 71 MB as a binary graph).
//
// BM_TraceInstructions: instructions traced per second, to the binary graph
// `nkigraph trace` writes (serialization included). BM_SerializeGraph:
// bytes per second writing a graph held as messages (WriteGraph of a
// loaded graph). BM_ParseGraph: bytes per second parsing the file's bytes
// onto an arena (LoadGraph) on 1 and 2 threads (wall time), freeing not
// counted; BM_ParseGraphHeap: the
// same onto the heap with the free counted (ReadGraph, for callers that
// take the graph by value). BM_LoadAndIndex: parse, then validate and
// index (graph::GraphIndex::Build), as `nkigraph profile` and `dot` load a
// file.
#include <benchmark/benchmark.h>

#include <cstdlib>
#include <optional>
#include <string>

#include "bench/streaming_kernel.h"
#include "graph/graph_index.h"
#include "util/graph_io.h"

namespace nkigraph {
namespace {

constexpr int64_t kInstructionsPerStep = bench::kStreamingInstructionsPerStep;
constexpr int64_t kSteps = 1'000'000 / kInstructionsPerStep;

const std::string& GraphBytes() {
  static const std::string* bytes =
      new std::string(bench::SerializeStreamingKernel(kSteps).bytes);
  return *bytes;
}

void BM_TraceInstructions(benchmark::State& state) {
  const int64_t steps = state.range(0);
  for (auto _ : state) {
    builder::SerializedGraph graph = bench::SerializeStreamingKernel(steps);
    benchmark::DoNotOptimize(graph);
  }
  state.SetItemsProcessed(state.iterations() * steps * kInstructionsPerStep);
  state.counters["instructions"] =
      static_cast<double>(steps * kInstructionsPerStep);
}
BENCHMARK(BM_TraceInstructions)
    ->Arg(kSteps)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

void BM_SerializeGraph(benchmark::State& state) {
  absl::StatusOr<ArenaGraph> graph = ParseGraph(GraphBytes(), "streaming");
  if (!graph.ok()) std::abort();
  int64_t bytes = 0;
  for (auto _ : state) {
    std::string out = SerializeDeterministic(**graph);
    bytes = static_cast<int64_t>(out.size());
    benchmark::DoNotOptimize(out);
  }
  state.SetBytesProcessed(state.iterations() * bytes);
  state.counters["graph_MB"] = static_cast<double>(bytes) / 1e6;
}
BENCHMARK(BM_SerializeGraph)->Unit(benchmark::kMillisecond)->UseRealTime();

void BM_ParseGraph(benchmark::State& state) {
  const std::string& bytes = GraphBytes();
  const int threads = static_cast<int>(state.range(0));
  uint64_t arena_used = 0, arena_allocated = 0;
  for (auto _ : state) {
    std::optional<absl::StatusOr<ArenaGraph>> graph;
    graph.emplace(ParseGraph(bytes, "streaming", threads));
    if (!graph->ok()) std::abort();
    state.PauseTiming();  // freeing the graph is not parsing
    arena_used = (*graph)->arena_bytes_used();
    arena_allocated = (*graph)->arena_bytes_allocated();
    graph.reset();
    state.ResumeTiming();
  }
  state.SetBytesProcessed(state.iterations() *
                          static_cast<int64_t>(bytes.size()));
  // Message memory per instruction (the graph's other messages are noise
  // beside them) and per wire byte.
  constexpr double kInstructions = kSteps * kInstructionsPerStep;
  state.counters["arena_B_per_instr"] = arena_used / kInstructions;
  state.counters["blocks_B_per_instr"] = arena_allocated / kInstructions;
  state.counters["arena_per_wire_B"] =
      static_cast<double>(arena_used) / static_cast<double>(bytes.size());
}
BENCHMARK(BM_ParseGraph)
    ->ArgName("threads")
    ->Arg(1)
    ->Arg(2)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

void BM_ParseGraphHeap(benchmark::State& state) {
  const std::string& bytes = GraphBytes();
  for (auto _ : state) {
    proto::Graph graph;
    if (!graph.ParseFromString(bytes)) std::abort();
    benchmark::DoNotOptimize(graph);
  }
  state.SetBytesProcessed(state.iterations() *
                          static_cast<int64_t>(bytes.size()));
}
BENCHMARK(BM_ParseGraphHeap)->Unit(benchmark::kMillisecond)->UseRealTime();

void BM_LoadAndIndex(benchmark::State& state) {
  const std::string& bytes = GraphBytes();
  for (auto _ : state) {
    std::optional<absl::StatusOr<ArenaGraph>> graph;
    graph.emplace(ParseGraph(bytes, "streaming"));
    if (!graph->ok()) std::abort();
    {
      absl::StatusOr<std::unique_ptr<graph::GraphIndex>> index =
          graph::GraphIndex::Build(***graph);
      if (!index.ok()) std::abort();
      state.PauseTiming();
    }
    graph.reset();
    state.ResumeTiming();
  }
  state.SetBytesProcessed(state.iterations() *
                          static_cast<int64_t>(bytes.size()));
  state.SetItemsProcessed(state.iterations() * 1'000'000);
}
BENCHMARK(BM_LoadAndIndex)->Unit(benchmark::kMillisecond)->UseRealTime();

}  // namespace
}  // namespace nkigraph

BENCHMARK_MAIN();
