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
#include "kernels/registry.h"
#include "proto/nkigraph.pb.h"
#include "util/host_array.h"

namespace nkigraph::kernels {

// Positions sit on the partitions, 128 to a tile.
inline constexpr int64_t kCrossEntropyPositionTile = 128;
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
// default), in contract order; the kernels add dtype (and the backward
// reduction and inplace).
std::vector<ParamSpec> CrossEntropyParamSpecs();

// Reads the shared parameters and validates them once, up front: sizes in
// range, chunk_size within what SBUF holds, a bounded trace; messages name
// the parameter and the limit.
absl::StatusOr<CrossEntropyParams> CrossEntropyParamsFrom(
    const ParamValues& values);
absl::Status ValidateCrossEntropyParams(const CrossEntropyParams& params);

// --- Tiling ---------------------------------------------------------------

// Partitions of the on-chip buffers: min(P, 128).
int64_t PositionRows(const CrossEntropyParams& params);
// Columns of the chunk buffers: chunk_size, or V when the vocabulary is
// smaller (then there is one chunk and no padding).
int64_t ChunkWidth(const CrossEntropyParams& params);
builder::TiledRange PositionTiles(const CrossEntropyParams& params);
builder::TiledRange VocabChunks(const CrossEntropyParams& params);

// --- Device helpers -------------------------------------------------------

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

// A zero-filled float32 array.
HostArray ZeroFloat32Array(const std::string& name, std::vector<int64_t> shape);

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
