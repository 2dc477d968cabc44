#ifndef NKIGRAPH_BENCH_STREAMING_KERNEL_H_
#define NKIGRAPH_BENCH_STREAMING_KERNEL_H_

// The streaming elementwise kernel the tracing, serialization and diff
// benchmarks share: per step, load a tile, two vector ops, an activation,
// store, each step allocating its tiles in its own scope.

#include <cstdio>
#include <cstdlib>
#include <memory>

#include "builder/isa.h"
#include "builder/tracer.h"
#include "util/graph_io.h"

namespace nkigraph::bench {

inline constexpr int64_t kStreamingInstructionsPerStep = 5;

// Traces `steps` steps into a binary graph.
inline builder::SerializedGraph SerializeStreamingKernel(int64_t steps) {
  using builder::Buffer;
  using builder::Tensor;
  namespace isa = builder::isa;
  builder::Tracer tracer(builder::TraceConfig{"streaming", {}, {}});
  absl::StatusOr<builder::SerializedGraph> graph =
      tracer.TraceSerialized([&](builder::Tracer& t) {
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
    std::fprintf(stderr, "trace failed: %s\n",
                 graph.status().ToString().c_str());
    std::abort();
  }
  return *std::move(graph);
}

// The same graph, parsed onto an arena.
inline ArenaGraph TraceStreamingKernel(int64_t steps) {
  absl::StatusOr<ArenaGraph> graph =
      ParseGraph(SerializeStreamingKernel(steps).bytes, "streaming");
  if (!graph.ok()) std::abort();
  return *std::move(graph);
}

}  // namespace nkigraph::bench

#endif  // NKIGRAPH_BENCH_STREAMING_KERNEL_H_
