// Speed of the cost model on the composer of bench/composer.h (two cores,
// matmuls, DMAs, activations, barriers) at 10k, 100k and 1M instructions:
// the instruction index (which validates the graph), the dependency
// analysis with and without the implied-edge pass the pictures use, the
// scheduler alone, the report alone, and `nkigraph profile`'s whole path
// (index, dependencies, schedule, report). items_per_second is instructions per
// second of wall time; CPU time is the process's, every thread's.
#include <benchmark/benchmark.h>

#include <memory>
#include <vector>

#include "bench/composer.h"
#include "cost/cost_table.h"
#include "cost/report.h"
#include "cost/schedule.h"
#include "graph/dependencies.h"
#include "graph/graph_index.h"

namespace nkigraph {
namespace {

using bench::Count;
using bench::TraceComposer;

std::unique_ptr<graph::GraphIndex> IndexOf(const proto::Graph& graph) {
  absl::StatusOr<std::unique_ptr<graph::GraphIndex>> index =
      graph::GraphIndex::Build(graph);
  if (!index.ok()) std::abort();
  return *std::move(index);
}

void BM_Index(benchmark::State& state) {
  const ArenaGraph traced = TraceComposer(state.range(0));
  for (auto _ : state) benchmark::DoNotOptimize(IndexOf(traced.graph()));
  state.SetItemsProcessed(state.iterations() * Count(traced.graph()));
}

void Dependencies(benchmark::State& state, bool drop_implied) {
  const ArenaGraph traced = TraceComposer(state.range(0));
  const auto index = IndexOf(traced.graph());
  for (auto _ : state) {
    benchmark::DoNotOptimize(
        graph::AnalyzeDependencies(*index, {.drop_implied = drop_implied}));
  }
  state.SetItemsProcessed(state.iterations() * index->size());
}
void BM_DependenciesForPictures(benchmark::State& state) {
  Dependencies(state, true);
}
void BM_DependenciesForScheduling(benchmark::State& state) {
  Dependencies(state, false);
}

void BM_ScheduleOnly(benchmark::State& state) {
  const ArenaGraph traced = TraceComposer(state.range(0));
  const auto index = IndexOf(traced.graph());
  const std::vector<graph::Dependency> deps =
      graph::AnalyzeDependencies(*index, {.drop_implied = false});
  const cost::CostTable& table = cost::CostTableFor(proto::TARGET_TRN2);
  for (auto _ : state) {
    benchmark::DoNotOptimize(cost::ScheduleGraph(*index, table, deps).ok());
  }
  state.SetItemsProcessed(state.iterations() * index->size());
}

// The report alone, from a schedule made once.
void BM_ReportOnly(benchmark::State& state) {
  const ArenaGraph traced = TraceComposer(state.range(0));
  const auto index = IndexOf(traced.graph());
  const cost::CostTable& table = cost::CostTableFor(proto::TARGET_TRN2);
  absl::StatusOr<cost::Schedule> schedule = cost::ScheduleGraph(*index, table);
  if (!schedule.ok()) std::abort();
  for (auto _ : state) {
    benchmark::DoNotOptimize(cost::BuildReport(*schedule, 10).latency_ns);
  }
  state.SetItemsProcessed(state.iterations() * index->size());
}

// What `nkigraph profile` does after reading the file.
void BM_Profile(benchmark::State& state) {
  const ArenaGraph traced = TraceComposer(state.range(0));
  const cost::CostTable& table = cost::CostTableFor(proto::TARGET_TRN2);
  for (auto _ : state) {
    const auto index = IndexOf(traced.graph());
    absl::StatusOr<cost::Schedule> schedule =
        cost::ScheduleGraph(*index, table);
    if (!schedule.ok()) std::abort();
    benchmark::DoNotOptimize(cost::BuildReport(*schedule, 10).latency_ns);
  }
  state.SetItemsProcessed(state.iterations() * Count(traced.graph()));
}

#define NKIGRAPH_SIZES                \
  Arg(10000)                          \
      ->Arg(100000)                   \
      ->Arg(1000000)                  \
      ->Unit(benchmark::kMillisecond) \
      ->MeasureProcessCPUTime()       \
      ->UseRealTime()

BENCHMARK(BM_Index)->NKIGRAPH_SIZES;
BENCHMARK(BM_DependenciesForPictures)->NKIGRAPH_SIZES;
BENCHMARK(BM_DependenciesForScheduling)->NKIGRAPH_SIZES;
BENCHMARK(BM_ScheduleOnly)->NKIGRAPH_SIZES;
BENCHMARK(BM_ReportOnly)->NKIGRAPH_SIZES;
BENCHMARK(BM_Profile)->NKIGRAPH_SIZES;

}  // namespace
}  // namespace nkigraph

BENCHMARK_MAIN();
