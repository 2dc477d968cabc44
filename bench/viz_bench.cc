// Render time of `nkigraph dot` on kernel-like graphs of 1k, 10k and 100k
// instructions: dependency analysis, collapse to the node budget (1,000,
// the default), dot layout and SVG rendering by libgvc. Also the analysis
// alone (no Graphviz) and the barrier view.
//
// The synthetic kernel is bench/composer.h's decode-like composer.
#include <benchmark/benchmark.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>

#include "bench/composer.h"
#include "viz/viz.h"

namespace nkigraph {
namespace {

using bench::Count;
using bench::TraceComposer;

void Render(benchmark::State& state, viz::View view, viz::Format format) {
  const ArenaGraph traced = TraceComposer(state.range(0));
  const proto::Graph& graph = traced.graph();
  viz::DotOptions options;
  options.view = view;
  int64_t nodes = 0;
  for (auto _ : state) {
    absl::StatusOr<viz::VizGraph> picture = viz::BuildView(graph, options);
    if (!picture.ok()) {
      state.SkipWithError(std::string(picture.status().message()).c_str());
      return;
    }
    nodes = static_cast<int64_t>(picture->nodes.size());
    absl::StatusOr<std::string> out = viz::Render(*picture, format);
    if (!out.ok()) {
      state.SkipWithError(std::string(out.status().message()).c_str());
      return;
    }
    benchmark::DoNotOptimize(out->data());
  }
  state.counters["instructions"] = static_cast<double>(Count(graph));
  state.counters["drawn_nodes"] = static_cast<double>(nodes);
  state.SetItemsProcessed(state.iterations() * Count(graph));
}

void BM_DataflowSvg(benchmark::State& state) {
  Render(state, viz::View::kDataflow, viz::Format::kSvg);
}
void BM_BarrierSvg(benchmark::State& state) {
  Render(state, viz::View::kBarrier, viz::Format::kSvg);
}

// The picture without Graphviz: index, dependencies, collapse, labels.
void BM_DataflowModelOnly(benchmark::State& state) {
  const ArenaGraph traced = TraceComposer(state.range(0));
  const proto::Graph& graph = traced.graph();
  for (auto _ : state) {
    absl::StatusOr<viz::VizGraph> picture =
        viz::BuildView(graph, viz::DotOptions());
    benchmark::DoNotOptimize(picture.ok());
  }
  state.SetItemsProcessed(state.iterations() * Count(graph));
}

BENCHMARK(BM_DataflowSvg)
    ->Arg(1000)
    ->Arg(10000)
    ->Arg(100000)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();
BENCHMARK(BM_BarrierSvg)
    ->Arg(1000)
    ->Arg(10000)
    ->Arg(100000)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();
BENCHMARK(BM_DataflowModelOnly)
    ->Arg(1000)
    ->Arg(10000)
    ->Arg(100000)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

}  // namespace
}  // namespace nkigraph

BENCHMARK_MAIN();
