#ifndef NKIGRAPH_KERNELS_CROSS_ENTROPY_COMMON_H_
#define NKIGRAPH_KERNELS_CROSS_ENTROPY_COMMON_H_

// What cross_entropy_forward and cross_entropy_backward (§4) share: their
// parameters and validation, the position tiling and vocabulary chunking,
// the chunk loader that pads the tail chunk with -inf (so exp -> 0), the
// per-position target column and the ignore_index mask — and, for the
// references, input lookup and the same rules in plain C++.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "builder/isa.h"
#include "builder/tensor.h"
#include "builder/tiling.h"
#include "kernels/device.h"
#include "kernels/kernel_spec.h"
#include "proto/nkigraph.pb.h"
#include "util/host_array.h"

namespace nkigraph::kernels {

// The largest vocabulary chunk. The backward keeps three chunk-wide buffers
// on chip (the logits chunk in dtype, softmax and indices in float32): 12
// bytes per column at float32, 196,608 bytes per partition at 16384
// columns, which fits a trn2 SBUF partition (229,376 bytes).
inline constexpr int64_t kCrossEntropyMaxChunkSize = 16384;
// Vocabulary indices and targets are compared in float32, exact below 2^24.
inline constexpr int64_t kCrossEntropyMaxVocab = int64_t{1} << 24;
inline constexpr int64_t kCrossEntropyMaxPositions = int64_t{1} << 24;
// A trace emits about eight instructions per (position tile, chunk) pair;
// 2^18 pairs (e.g. P = 262144 positions x V = 131072 at chunk_size 2048)
// trace in a few hundred MB. Larger problems are refused.
inline constexpr int64_t kCrossEntropyMaxChunkTiles = int64_t{1} << 18;

// The forward's parameters (KERNELS.md); the backward adds two.
struct CrossEntropyParams {
  int64_t num_positions = 0;  // P
  int64_t vocab_size = 0;     // V
  int64_t chunk_size = 2048;
  std::optional<int64_t> ignore_index;  // none by default
  proto::DType dtype = proto::BFLOAT16;
};

enum class CrossEntropyReduction { kMean, kSum };

struct CrossEntropyBackwardParams : CrossEntropyParams {
  CrossEntropyReduction reduction = CrossEntropyReduction::kMean;
  bool inplace = true;
};

// num_positions, vocab_size, chunk_size=2048, ignore_index (optional, no
// default), in contract order, with their limits (sizes in range,
// chunk_size within what SBUF holds); the kernels add dtype (and the
// backward reduction and inplace). P is CrossEntropyParams or derived.
template <typename P>
std::vector<ParamField<P>> CrossEntropyFields() {
  return {
      IntField<P>("num_positions", &P::num_positions,
                  {1, kCrossEntropyMaxPositions},
                  "P: positions (rows of logits)")
          .Required()
          .Edges(AroundTiles({128})),
      IntField<P>("vocab_size", &P::vocab_size,
                  {1, kCrossEntropyMaxVocab, "indices are compared in float32"},
                  "V: vocabulary size (columns of logits)")
          .Required()
          // Either side of the default chunk of 2048 and of a small one.
          .Edges(AroundTiles({512, 2048})),
      IntField<P>("chunk_size", &P::chunk_size,
                  {1, kCrossEntropyMaxChunkSize,
                   "three chunk-wide buffers must fit one SBUF partition"},
                  "vocabulary columns streamed through SBUF at a time")
          .Edges({512}),
      OptionalIntField<P>(
          "ignore_index", &P::ignore_index,
          {-kCrossEntropyMaxVocab, kCrossEntropyMaxVocab,
           "targets are compared in float32"},
          "positions whose target equals it get loss 0 and gradient 0 (unset: "
          "every target must be in [0, V))")
          .Edges({-100, 0}),
  };
}

// The configuration both kernels' `verify --all` and main-job runs trace:
// 200 positions over a 5000-word vocabulary (a tail chunk), ignore_index
// set.
Settings CrossEntropyExample();

// A bounded trace: what the fields' own limits cannot say.
absl::Status ValidateCrossEntropyParams(const CrossEntropyParams& params);

// logits [P, V] and targets [P] in [0, V): the inputs both kernels take
// first.
template <typename P>
std::vector<IoEntry<P>> CrossEntropyInputRows() {
  return {
      InputRow<P>("logits", "[P, V]",
                  [](const P& p) {
                    return Shape{p.num_positions, p.vocab_size};
                  }),
      InputRow<P>("targets", "[P]",
                  [](const P& p) { return Shape{p.num_positions}; })
          .Int32()
          .Values("[0, V)",
                  [](const P& p) {
                    return ValueRange{0, p.vocab_size - 1};
                  })
          .Note("or ignore_index when set"),
  };
}

// --- Tiling ---------------------------------------------------------------

// Partitions of the on-chip buffers: min(P, 128).
int64_t PositionRows(const CrossEntropyParams& params);
// Columns of the chunk buffers: chunk_size, or V when the vocabulary is
// smaller (then there is one chunk and no padding).
int64_t ChunkWidth(const CrossEntropyParams& params);
builder::TiledRange PositionTiles(const CrossEntropyParams& params);
builder::TiledRange VocabChunks(const CrossEntropyParams& params);

// --- Device helpers -------------------------------------------------------

// A [pt, 1] SBUF column of the position tile: one value per partition.
builder::Tensor PositionColumn(const builder::Tile& pos, proto::DType dtype,
                               const char* name);

// dst [pt, 1] = src[pos tile] for a [P] input (targets, lse_state): one
// value per partition.
void LoadColumn(const builder::Tensor& dst, const builder::Tensor& src,
                const builder::Tile& pos);

// chunk [pt, ChunkWidth] = logits[pos tile, vocab chunk]; the columns of a
// tail chunk past the vocabulary are set to -inf, so the max ignores them
// and exp turns them into 0.
void LoadLogitsChunk(const builder::Tensor& chunk,
                     const builder::Tensor& logits, const builder::Tile& pos,
                     const builder::Tile& vocab_chunk);

// dst [pt, 1] float32 = (targets != ignore_index) * scale: 1 (or scale) for
// a position that counts, 0 for an ignored one.
void ValidPositionColumn(const builder::Tensor& dst,
                         const builder::Tensor& targets_col,
                         int64_t ignore_index,
                         const builder::isa::Scalar& scale = 1.0f);

// dst[pos tile] = column [pt, 1]: a per-position result to its [P] output.
void StoreColumn(const builder::Tensor& dst, const builder::Tensor& column,
                 const builder::Tile& pos);

// --- Reference helpers ----------------------------------------------------

// Whether position `i` is ignored; an error if its target is neither
// ignore_index nor in [0, V).
absl::StatusOr<bool> ReferenceIgnored(const CrossEntropyParams& params,
                                      const HostArray& targets, int64_t i);

// Valid inputs for a run: logits uniform in [-4, 4) (a few rows shifted by
// +60, where exp would overflow without the running max) rounded to dtype,
// targets in [0, V) with about one in five set to ignore_index when it is
// given; with `with_lse_state`, lse_state computed from the logits as the
// forward would.
std::vector<HostArray> MakeCrossEntropyInputs(const CrossEntropyParams& params,
                                              uint64_t seed,
                                              bool with_lse_state);

}  // namespace nkigraph::kernels

#endif  // NKIGRAPH_KERNELS_CROSS_ENTROPY_COMMON_H_
