#include "kernels/cross_entropy_common.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <random>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "builder/tracer.h"
#include "kernels/params.h"
#include "util/dtype.h"
#include "util/status_macros.h"

namespace nkigraph::kernels {
namespace {

namespace isa = builder::isa;
using builder::Tensor;
using builder::Tile;

constexpr float kNegInf = -std::numeric_limits<float>::infinity();

}  // namespace

std::vector<ParamSpec> CrossEntropyParamSpecs() {
  ParamSpec ignore_index;
  ignore_index.name = "ignore_index";
  ignore_index.type = ParamType::kInt;
  ignore_index.help =
      "positions whose target equals it get loss 0 and gradient 0 (unset: "
      "every target must be in [0, V))";
  return {
      RequiredIntParam("num_positions", "P: positions (rows of logits)"),
      RequiredIntParam("vocab_size", "V: vocabulary size (columns of logits)"),
      IntParam("chunk_size", 2048,
               "vocabulary columns streamed through SBUF at a time"),
      std::move(ignore_index),
  };
}

absl::Status ValidateCrossEntropyParams(const CrossEntropyParams& params) {
  NKI_RETURN_IF_ERROR(CheckRange("num_positions", params.num_positions, 1,
                                 kCrossEntropyMaxPositions));
  NKI_RETURN_IF_ERROR(CheckRange("vocab_size", params.vocab_size, 1,
                                 kCrossEntropyMaxVocab,
                                 "indices are compared in float32"));
  NKI_RETURN_IF_ERROR(
      CheckRange("chunk_size", params.chunk_size, 1, kCrossEntropyMaxChunkSize,
                 "three chunk-wide buffers must fit one SBUF partition"));
  if (params.ignore_index.has_value()) {
    NKI_RETURN_IF_ERROR(
        CheckRange("ignore_index", *params.ignore_index, -kCrossEntropyMaxVocab,
                   kCrossEntropyMaxVocab, "targets are compared in float32"));
  }
  if (params.dtype != proto::FLOAT32 && params.dtype != proto::BFLOAT16) {
    return absl::InvalidArgumentError(
        "parameter 'dtype' must be float32 or bfloat16");
  }
  const int64_t pairs =
      PositionTiles(params).size() * VocabChunks(params).size();
  if (pairs > kCrossEntropyMaxChunkTiles) {
    return absl::InvalidArgumentError(absl::StrCat(
        "parameters num_positions=", params.num_positions,
        ", vocab_size=", params.vocab_size, ", chunk_size=", params.chunk_size,
        " need ", pairs, " (position tile, vocabulary chunk) steps; at most ",
        kCrossEntropyMaxChunkTiles,
        " are traced (raise chunk_size or reduce the sizes)"));
  }
  return absl::OkStatus();
}

absl::StatusOr<CrossEntropyParams> CrossEntropyParamsFrom(
    const ParamValues& values) {
  CrossEntropyParams params;
  params.num_positions = values.Int("num_positions");
  params.vocab_size = values.Int("vocab_size");
  params.chunk_size = values.Int("chunk_size");
  if (values.Given("ignore_index")) {
    params.ignore_index = values.Int("ignore_index");
  }
  NKI_ASSIGN_OR_RETURN(params.dtype, DTypeParamValue(values));
  NKI_RETURN_IF_ERROR(ValidateCrossEntropyParams(params));
  return params;
}

int64_t PositionRows(const CrossEntropyParams& params) {
  return std::min(params.num_positions, kCrossEntropyPositionTile);
}

int64_t ChunkWidth(const CrossEntropyParams& params) {
  return std::min(params.vocab_size, params.chunk_size);
}

builder::TiledRange PositionTiles(const CrossEntropyParams& params) {
  return builder::TiledRange(params.num_positions, kCrossEntropyPositionTile);
}

builder::TiledRange VocabChunks(const CrossEntropyParams& params) {
  return builder::TiledRange(params.vocab_size, params.chunk_size);
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

HostArray ZeroFloat32Array(const std::string& name,
                           std::vector<int64_t> shape) {
  HostArray array;
  array.name = name;
  array.dtype = proto::FLOAT32;
  array.shape = std::move(shape);
  array.f32.assign(array.num_elements(), 0.0f);
  return array;
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

  HostArray logits = ZeroFloat32Array("logits", {p, v});
  for (int64_t i = 0; i < p; ++i) {
    const float shift = i % 7 == 3 ? 100.0f : 0.0f;
    for (int64_t j = 0; j < v; ++j) {
      logits.f32[i * v + j] =
          RoundTo(params.dtype, logit(rng) + shift, /*fp8_max=*/240.0f);
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
    HostArray lse = ZeroFloat32Array("lse_state", {p});
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
