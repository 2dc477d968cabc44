#ifndef NKIGRAPH_BENCH_COMPOSER_H_
#define NKIGRAPH_BENCH_COMPOSER_H_

// A synthetic decode-like composer on two cores for the benchmarks of
// whole-graph analyses (pictures, the cost model): per layer, an "attn"
// and an "mlp" stage, each loading activations, accumulating matmuls over
// k tiles (one scope per tile), evacuating PSUM through an activation and
// storing; the cores meet at a barrier after every layer.

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <memory>

#include "absl/strings/str_cat.h"
#include "builder/isa.h"
#include "builder/tracer.h"
#include "util/graph_io.h"

namespace nkigraph::bench {

using builder::Buffer;
using builder::Tensor;
namespace isa = builder::isa;

// Instructions per layer, both cores: 2 x (attn 11 + mlp 19 + barrier 1).
inline constexpr int64_t kPerLayer = 62;

inline void Stage(const char* name, int k_tiles, const Tensor& src,
                  const Tensor& dst, const Tensor& weights) {
  builder::Scope scope(name);
  Tensor x = builder::ndarray({128, 512}, proto::BFLOAT16, Buffer::kSbuf, "x");
  Tensor psum =
      builder::ndarray({128, 512}, proto::FLOAT32, Buffer::kPsum, "psum");
  Tensor y = builder::ndarray({128, 512}, proto::BFLOAT16, Buffer::kSbuf, "y");
  isa::dma_copy(x, src);
  for (int k = 0; k < k_tiles; ++k) {
    builder::Scope tile("k_tile");
    Tensor w =
        builder::ndarray({128, 128}, proto::BFLOAT16, Buffer::kSbuf, "w");
    isa::dma_copy(w, weights.Slice(0, 128 * k, 128));
    isa::nc_matmul(psum, w, x, /*accumulate=*/k > 0);
  }
  isa::activation(y, isa::ActFunc::kSilu, psum);
  isa::dma_copy(dst, y);
}

// The composer's graph, parsed onto an arena.
inline ArenaGraph TraceComposer(int64_t instructions) {
  const int64_t layers = std::max<int64_t>(1, instructions / kPerLayer);
  builder::WorldConfig world;
  world.num_cores = 2;
  builder::Tracer tracer(builder::TraceConfig{"composer", {}, world});
  absl::StatusOr<builder::SerializedGraph> graph =
      tracer.TraceSerialized([&](builder::Tracer& t) {
        Tensor in = t.Input("in", {128, 512}, proto::BFLOAT16);
        Tensor w = t.Input("w", {1024, 128}, proto::BFLOAT16);
        Tensor flag = t.Allocate({1}, proto::INT32, Buffer::kSharedHbm, "flag");
        Tensor h = t.Allocate({128, 512}, proto::BFLOAT16, Buffer::kHbm, "h");
        Tensor a = t.Allocate({128, 512}, proto::BFLOAT16, Buffer::kHbm, "a");
        Tensor src = in;
        for (int64_t l = 0; l < layers; ++l) {
          builder::Scope layer(absl::StrCat("layer_", l));
          Stage("attn", 4, src, a, w);
          Stage("mlp", 8, a, h, w);
          isa::core_barrier(flag);
          src = h;
        }
      });
  if (!graph.ok()) {
    std::fprintf(stderr, "trace failed: %s\n",
                 graph.status().ToString().c_str());
    std::abort();
  }
  absl::StatusOr<ArenaGraph> parsed = ParseGraph(graph->bytes, "composer");
  if (!parsed.ok()) std::abort();
  return *std::move(parsed);
}

inline int64_t Count(const proto::Graph& graph) {
  int64_t n = 0;
  for (const proto::Stream& stream : graph.streams()) {
    n += stream.instructions_size();
  }
  return n;
}

}  // namespace nkigraph::bench

#endif  // NKIGRAPH_BENCH_COMPOSER_H_
