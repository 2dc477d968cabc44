// Semantic diff of two ~1M-instruction graphs that differ in a few places.
//
// BM_DiffGraphs times diff::Diff alone (graphs in memory); BM_DiffGraphsText
// adds formatting the result as `nkigraph diff` prints it. Both graphs come
// from one streaming kernel of 200k steps x 5 instructions; B has one
// instruction removed near the start, one inserted in the middle and one
// attribute changed near the end, so trimming the common prefix and suffix
// leaves almost the whole stream to align.
//
// With NKIGRAPH_DIFF_BENCH_OUT=DIR set, also writes the two graphs to
// DIR/a.pb and DIR/b.pb, to time `nkigraph diff DIR/a.pb DIR/b.pb`.
#include <benchmark/benchmark.h>

#include <cstdio>
#include <cstdlib>
#include <memory>

#include "bench/streaming_kernel.h"
#include "builder/isa.h"
#include "builder/tracer.h"
#include "diff/diff.h"
#include "diff/format.h"
#include "diff/model.h"
#include "diff/streams.h"
#include "diff/tensors.h"
#include "util/graph_io.h"

namespace nkigraph {
namespace {

constexpr int64_t kSteps = 200'000;  // x 5 instructions

proto::Graph TraceStreamingKernel(int64_t steps) {
  return bench::TraceStreamingKernel(steps).graph();
}

struct GraphPair {
  proto::Graph a;
  proto::Graph b;
};

const GraphPair& Graphs() {
  static const GraphPair* pair = [] {
    auto* p = new GraphPair;
    p->a = TraceStreamingKernel(kSteps);
    p->b = p->a;
    proto::Stream* stream = p->b.mutable_streams(0);
    const int n = stream->instructions_size();
    stream->mutable_instructions()->DeleteSubrange(1'000, 1);  // removed
    // An extra tensor_scalar in the middle (a copy of the next one, with
    // another immediate).
    int at = n / 2;
    while (stream->instructions(at).opcode() != proto::TENSOR_SCALAR) ++at;
    proto::Instruction extra = stream->instructions(at);
    for (proto::Attr& attr : *extra.mutable_attrs()) {
      if (attr.value_case() == proto::Attr::kF) attr.set_f(2.0);
    }
    *stream->add_instructions() = extra;
    for (int k = stream->instructions_size() - 1; k > at; --k) {
      stream->mutable_instructions()->SwapElements(k, k - 1);
    }
    // A changed operand near the end.
    proto::AccessPattern* ap =
        stream->mutable_instructions(n - 1'000)->mutable_operands(0);
    ap->set_offset(ap->offset() + 1);
    if (const char* dir = std::getenv("NKIGRAPH_DIFF_BENCH_OUT")) {
      for (const auto& [graph, name] :
           {std::pair{&p->a, "/a.pb"}, std::pair{&p->b, "/b.pb"}}) {
        if (absl::Status status = WriteGraph(*graph, std::string(dir) + name);
            !status.ok()) {
          std::fprintf(stderr, "%s\n", status.ToString().c_str());
        }
      }
    }
    return p;
  }();
  return *pair;
}

void BM_DiffGraphs(benchmark::State& state) {
  const GraphPair& graphs = Graphs();
  int64_t changes = 0;
  for (auto _ : state) {
    absl::StatusOr<diff::DiffResult> result =
        diff::Diff(graphs.a, graphs.b, {});
    if (!result.ok()) {
      state.SkipWithError(std::string(result.status().message()).c_str());
      return;
    }
    changes = result->total().total();
    benchmark::DoNotOptimize(result);
  }
  const int64_t instructions = graphs.a.streams(0).instructions_size() +
                               graphs.b.streams(0).instructions_size();
  state.SetItemsProcessed(state.iterations() * instructions);
  state.counters["instructions_a"] =
      static_cast<double>(graphs.a.streams(0).instructions_size());
  state.counters["changes"] = static_cast<double>(changes);
}
BENCHMARK(BM_DiffGraphs)->Unit(benchmark::kMillisecond)->UseRealTime();

// The phases of BM_DiffGraphs: normalising both graphs to keys, matching
// the tensor tables, aligning and reporting the streams.
void BM_PhaseBuildModels(benchmark::State& state) {
  const GraphPair& graphs = Graphs();
  for (auto _ : state) {
    diff::KeyTable keys;
    auto a = diff::BuildModel(graphs.a, "A", false, keys);
    auto b = diff::BuildModel(graphs.b, "B", false, keys);
    benchmark::DoNotOptimize(a);
    benchmark::DoNotOptimize(b);
    state.counters["keys"] = static_cast<double>(keys.size());
  }
}
BENCHMARK(BM_PhaseBuildModels)->Unit(benchmark::kMillisecond)->UseRealTime();

void BM_PhaseTensors(benchmark::State& state) {
  const GraphPair& graphs = Graphs();
  for (auto _ : state) {
    diff::DiffResult result;
    diff::DiffTensors(graphs.a, graphs.b, 0, &result);
    benchmark::DoNotOptimize(result);
  }
  state.counters["tensors_a"] = static_cast<double>(graphs.a.tensors_size());
}
BENCHMARK(BM_PhaseTensors)->Unit(benchmark::kMillisecond)->UseRealTime();

void BM_PhaseStreams(benchmark::State& state) {
  const GraphPair& graphs = Graphs();
  diff::KeyTable keys;
  auto a = diff::BuildModel(graphs.a, "A", false, keys);
  auto b = diff::BuildModel(graphs.b, "B", false, keys);
  for (auto _ : state) {
    diff::DiffResult result;
    diff::DiffStreams(*a, *b, {}, &result);
    benchmark::DoNotOptimize(result);
  }
}
BENCHMARK(BM_PhaseStreams)->Unit(benchmark::kMillisecond)->UseRealTime();

void BM_DiffGraphsText(benchmark::State& state) {
  const GraphPair& graphs = Graphs();
  for (auto _ : state) {
    absl::StatusOr<diff::DiffResult> result =
        diff::Diff(graphs.a, graphs.b, {});
    std::string text = diff::FormatText(*result, {});
    benchmark::DoNotOptimize(text);
  }
}
BENCHMARK(BM_DiffGraphsText)->Unit(benchmark::kMillisecond)->UseRealTime();

}  // namespace
}  // namespace nkigraph

BENCHMARK_MAIN();
