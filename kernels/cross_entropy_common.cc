#include "kernels/cross_entropy_common.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <random>
#include <utility>

#include "absl/strings/str_cat.h"
#include "kernels/dsl.h"
#include "util/dtype.h"

namespace nkigraph::kernels {
namespace {

constexpr float kNegInf = -std::numeric_limits<float>::infinity();

}  // namespace

absl::Status ValidateCrossEntropyParams(const CrossEntropyParams& params) {
  const int64_t pairs =
      PositionTiles(params).size() * VocabChunks(params).size();
  return CheckTraceSize({{"num_positions", params.num_positions},
                         {"vocab_size", params.vocab_size},
                         {"chunk_size", params.chunk_size}},
                        pairs, "(position tile, vocabulary chunk) steps",
                        "cross-entropy", kCrossEntropyMaxChunkTiles,
                        "raise chunk_size or reduce the sizes");
}

Settings CrossEntropyExample() {
  return {{"num_positions", "200"},
          {"vocab_size", "5000"},
          {"ignore_index", "-100"}};
}

int64_t PositionRows(const CrossEntropyParams& params) {
  return std::min(params.num_positions, Partitions());
}

int64_t ChunkWidth(const CrossEntropyParams& params) {
  return std::min(params.vocab_size, params.chunk_size);
}

builder::TiledRange PositionTiles(const CrossEntropyParams& params) {
  return builder::TiledRange(params.num_positions, Partitions());
}

builder::TiledRange VocabChunks(const CrossEntropyParams& params) {
  return builder::TiledRange(params.vocab_size, params.chunk_size);
}

Tensor PositionColumn(const Tile& pos, proto::DType dtype, const char* name) {
  return builder::ndarray({pos.size, 1}, dtype, Buffer::kSbuf, name);
}

void LoadColumn(const Tensor& dst, const Tensor& src, const Tile& pos) {
  isa::dma_copy(dst, src.Slice(0, pos.offset, pos.size).Reshape({pos.size, 1}));
}

void LoadLogitsChunk(const Tensor& chunk, const Tensor& logits, const Tile& pos,
                     const Tile& vocab_chunk) {
  const int64_t width = chunk.dim(1);
  if (vocab_chunk.size < width) {
    isa::memset(chunk.Slice(1, vocab_chunk.size, width - vocab_chunk.size),
                kNegInf);
  }
  isa::dma_copy(chunk.Slice(1, 0, vocab_chunk.size),
                logits.Slice(0, pos.offset, pos.size)
                    .Slice(1, vocab_chunk.offset, vocab_chunk.size));
}

void ValidPositionColumn(const Tensor& dst, const Tensor& targets_col,
                         int64_t ignore_index, const isa::Scalar& scale) {
  isa::tensor_scalar(dst, targets_col, isa::Alu::kNotEqual,
                     static_cast<float>(ignore_index),
                     {.op1 = isa::Alu::kMultiply, .operand1 = scale});
}

void StoreColumn(const Tensor& dst, const Tensor& column, const Tile& pos) {
  isa::dma_copy(dst.Slice(0, pos.offset, pos.size).Reshape({pos.size, 1}),
                column);
}

absl::StatusOr<bool> ReferenceIgnored(const CrossEntropyParams& params,
                                      const HostArray& targets, int64_t i) {
  const int64_t target = targets.i32[i];
  if (params.ignore_index.has_value() && target == *params.ignore_index) {
    return true;
  }
  if (target < 0 || target >= params.vocab_size) {
    return absl::InvalidArgumentError(absl::StrCat(
        "targets[", i, "] is ", target, "; it must be in [0, ",
        params.vocab_size, ")",
        params.ignore_index.has_value()
            ? absl::StrCat(" or equal ignore_index ", *params.ignore_index)
            : ""));
  }
  return false;
}

std::vector<HostArray> MakeCrossEntropyInputs(const CrossEntropyParams& params,
                                              uint64_t seed,
                                              bool with_lse_state) {
  const int64_t p = params.num_positions;
  const int64_t v = params.vocab_size;
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<float> logit(-4.0f, 4.0f);
  std::uniform_int_distribution<int64_t> target(0, v - 1);
  std::uniform_int_distribution<int> one_in_five(0, 4);

  HostArray logits = ZeroHostArray("logits", {p, v});
  for (int64_t i = 0; i < p; ++i) {
    const float shift = i % 7 == 3 ? 100.0f : 0.0f;
    for (int64_t j = 0; j < v; ++j) {
      logits.f32[i * v + j] = RoundLikeDevice(params.dtype, logit(rng) + shift);
    }
  }
  HostArray targets;
  targets.name = "targets";
  targets.dtype = proto::INT32;
  targets.shape = {p};
  targets.i32.resize(p);
  for (int64_t i = 0; i < p; ++i) {
    const bool ignored =
        params.ignore_index.has_value() && one_in_five(rng) == 0;
    targets.i32[i] =
        static_cast<int32_t>(ignored ? *params.ignore_index : target(rng));
  }
  std::vector<HostArray> inputs;
  inputs.push_back(std::move(logits));
  inputs.push_back(std::move(targets));
  if (with_lse_state) {
    HostArray lse = ZeroHostArray("lse_state", {p});
    const float* x = inputs[0].f32.data();
    for (int64_t i = 0; i < p; ++i) {
      const float* row = x + i * v;
      const double m = *std::max_element(row, row + v);
      double sum = 0.0;
      for (int64_t j = 0; j < v; ++j) sum += std::exp(row[j] - m);
      lse.f32[i] = static_cast<float>(m + std::log(sum));
    }
    inputs.push_back(std::move(lse));
  }
  return inputs;
}

}  // namespace nkigraph::kernels
