// cross_entropy_backward: grad = s · (softmax − onehot) per vocabulary
// chunk, softmax rebuilt from the forward's lse_state and the one-hot built
// densely, no scatter (§4).
//
//   grad_scale = 1/P (mean) or 1 (sum); with ignore_index, mean counts the
//                non-ignored positions on device, ignored positions get 0
//   for each position tile (<= 128 positions on the partitions):
//     for chunk in vocab_chunks(V):
//       softmax_chunk = exp(logits_chunk - lse)      // no max/sum pass
//       grad_chunk    = grad_scale * softmax_chunk
//       indices       = iota(offset=chunk_start)      // fp32
//       mask          = (indices == targets) * grad_scale   // tensor_scalar
//       grad_chunk   -= mask                          // dense one-hot
//       store grad_chunk -> grad_logits               // over logits if inplace
#include "kernels/cross_entropy_backward.h"

#include "kernels/dsl.h"

namespace nkigraph::kernels {
namespace {

using isa::ActFunc;
using isa::Alu;

// The chunk-wide on-chip buffers, allocated once and reused by every
// position tile and chunk.
struct ChunkBuffers {
  Tensor logits_chunk;   // dtype; takes the gradient chunk in place
  Tensor softmax_chunk;  // float32; scaled in place into s · softmax
  Tensor indices;        // float32; compared in place into the scaled mask

  ChunkBuffers Rows(const Tile& pos) const {
    return {logits_chunk.Slice(0, 0, pos.size),
            softmax_chunk.Slice(0, 0, pos.size), indices.Slice(0, 0, pos.size)};
  }
};

// grad_scale [rows, 1] = 1 / max(1, number of non-ignored positions) on
// every partition. The count is a partition sum: a matmul with a ones
// stationary, accumulated over the position tiles in one PSUM column.
void ComputeMeanGradScale(const Tensor& grad_scale, const Tensor& targets,
                          const CrossEntropyParams& params) {
  Scope scope("mean_grad_scale");
  const int64_t rows = PositionRows(params);
  Tensor ones =
      builder::ndarray({rows, rows}, proto::FLOAT32, Buffer::kSbuf, "ones");
  isa::memset(ones, 1.0f);
  Tensor count =
      builder::ndarray({rows, 1}, proto::FLOAT32, Buffer::kPsum, "valid_count");
  for (const Tile pos : PositionTiles(params)) {
    Scope tile_scope("position_tile");
    Tensor targets_col = PositionColumn(pos, proto::INT32, "targets_col");
    LoadColumn(targets_col, targets, pos);
    Tensor valid = PositionColumn(pos, proto::FLOAT32, "valid");
    ValidPositionColumn(valid, targets_col, *params.ignore_index);
    isa::nc_matmul(count, ones.Slice(0, 0, pos.size), valid,
                   /*accumulate=*/pos.index > 0);
  }
  // No position counted: s = 1, and every position is ignored anyway.
  isa::tensor_scalar(grad_scale, count, Alu::kMaximum, 1.0f,
                     {.op1 = Alu::kDivide, .operand1 = 1.0f, .reverse1 = true});
}

// What every chunk of a position tile needs, one value per partition.
struct PositionColumns {
  Tensor target;           // float32 targets, for the one-hot compare
  Tensor neg_lse;          // -lse_state, the exp bias
  isa::Scalar grad_scale;  // s: an immediate, or a column with ignore_index
};

// Loads the tile's targets and lse_state and forms its grad_scale: 1/P
// (mean) or 1 (sum) as an immediate; with ignore_index a column holding
// mean_grad_scale (mean) or 1 (sum) where the target counts, 0 where it is
// ignored. The columns live in the caller's scope.
PositionColumns LoadPositionColumns(const Tensor& targets,
                                    const Tensor& lse_state,
                                    const Tensor& mean_grad_scale,
                                    const Tile& pos,
                                    const CrossEntropyBackwardParams& params) {
  const bool mean = params.reduction == CrossEntropyReduction::kMean;
  PositionColumns columns{
      .target = PositionColumn(pos, proto::FLOAT32, "target"),
      .neg_lse = PositionColumn(pos, proto::FLOAT32, "neg_lse"),
      .grad_scale =
          mean ? 1.0 / static_cast<double>(params.num_positions) : 1.0,
  };
  Tensor targets_col = PositionColumn(pos, proto::INT32, "targets_col");
  LoadColumn(targets_col, targets, pos);
  isa::tensor_copy(columns.target, targets_col);  // int32 -> fp32
  LoadColumn(columns.neg_lse, lse_state, pos);
  isa::tensor_scalar(columns.neg_lse, columns.neg_lse, Alu::kMultiply, -1.0f);
  if (params.ignore_index.has_value()) {
    Tensor row_scale = PositionColumn(pos, proto::FLOAT32, "grad_scale");
    ValidPositionColumn(row_scale, targets_col, *params.ignore_index,
                        mean
                            ? isa::Scalar(mean_grad_scale.Slice(0, 0, pos.size))
                            : isa::Scalar(1.0f));
    columns.grad_scale = row_scale;
  }
  return columns;
}

// One chunk of the gradient: grad_logits[pos tile, vocab chunk].
void ComputeGradChunk(const Tensor& grad_logits, const Tensor& logits,
                      const ChunkBuffers& buffers,
                      const PositionColumns& columns, const Tile& pos,
                      const Tile& vocab_chunk) {
  const isa::Scalar& grad_scale = columns.grad_scale;
  const Tensor& logits_chunk = buffers.logits_chunk;
  const Tensor& softmax_chunk = buffers.softmax_chunk;
  const Tensor& indices = buffers.indices;
  LoadLogitsChunk(logits_chunk, logits, pos, vocab_chunk);
  // softmax_chunk = exp(logits_chunk - lse), rebuilt from lse_state.
  isa::activation(softmax_chunk, ActFunc::kExp, logits_chunk,
                  {.bias = columns.neg_lse});
  // grad_chunk = grad_scale * softmax_chunk (in place, fp32).
  isa::tensor_scalar(softmax_chunk, softmax_chunk, Alu::kMultiply, grad_scale);
  // indices = iota(offset = chunk_start), in fp32; then, in place,
  // mask = (indices == target) * grad_scale: the dense, scaled one-hot.
  isa::iota(indices, {{1, indices.dim(1)}}, /*offset=*/vocab_chunk.offset);
  isa::tensor_scalar(indices, indices, Alu::kEqual, columns.target,
                     {.op1 = Alu::kMultiply, .operand1 = grad_scale});
  // grad_chunk -= mask, rounded to dtype into the logits chunk's buffer,
  // then stored (over the logits themselves when in place).
  const Tensor& grad_chunk = logits_chunk;
  isa::tensor_tensor(grad_chunk, softmax_chunk, indices, Alu::kSubtract);
  isa::dma_copy(grad_logits.Slice(0, pos.offset, pos.size)
                    .Slice(1, vocab_chunk.offset, vocab_chunk.size),
                grad_chunk.Slice(1, 0, vocab_chunk.size));
}

void TraceCrossEntropyBackward(KernelIo& io,
                               const CrossEntropyBackwardParams& p) {
  const Tensor logits = io.Input("logits");
  const Tensor targets = io.Input("targets");
  const Tensor lse_state = io.Input("lse_state");
  // In place, the logits tensor itself is published as grad_logits.
  const Tensor grad_logits =
      p.inplace ? io.Output("grad_logits", logits) : io.Output("grad_logits");
  builder::jit("cross_entropy_backward", CrossEntropyBackward)(
      logits, targets, lse_state, grad_logits, p);
}

}  // namespace

void CrossEntropyBackward(const Tensor& logits, const Tensor& targets,
                          const Tensor& lse_state, const Tensor& grad_logits,
                          const CrossEntropyBackwardParams& params) {
  const int64_t rows = PositionRows(params);
  const int64_t width = ChunkWidth(params);
  const ChunkBuffers buffers{
      builder::ndarray({rows, width}, params.dtype, Buffer::kSbuf,
                       "logits_chunk"),
      builder::ndarray({rows, width}, proto::FLOAT32, Buffer::kSbuf,
                       "softmax_chunk"),
      builder::ndarray({rows, width}, proto::FLOAT32, Buffer::kSbuf, "indices"),
  };
  const bool mean = params.reduction == CrossEntropyReduction::kMean;
  // s is known at trace time unless it depends on how many targets are
  // ignored: then it is counted on device before any gradient is written.
  Tensor mean_grad_scale;
  if (mean && params.ignore_index.has_value()) {
    mean_grad_scale = builder::ndarray({rows, 1}, proto::FLOAT32, Buffer::kSbuf,
                                       "mean_grad_scale");
    ComputeMeanGradScale(mean_grad_scale, targets, params);
  }
  for (const Tile pos : PositionTiles(params)) {
    Scope scope("position_tile");
    const PositionColumns columns =
        LoadPositionColumns(targets, lse_state, mean_grad_scale, pos, params);
    const ChunkBuffers rows_of_tile = buffers.Rows(pos);
    for (const Tile vocab_chunk : VocabChunks(params)) {
      ComputeGradChunk(grad_logits, logits, rows_of_tile, columns, pos,
                       vocab_chunk);
    }
  }
}

const KernelSpec<CrossEntropyBackwardParams>& CrossEntropyBackwardSpec() {
  using P = CrossEntropyBackwardParams;
  static const auto* const spec = new KernelSpec<P>{
      .name = "cross_entropy_backward",
      .summary =
          "gradient of the cross-entropy loss: softmax rebuilt from "
          "lse_state per vocabulary chunk minus a dense iota one-hot, "
          "optionally in place over logits",
      .params = Concat(
          CrossEntropyFields<P>(),
          {ChoiceField<P>("reduction", &P::reduction,
                          {{"mean", CrossEntropyReduction::kMean},
                           {"sum", CrossEntropyReduction::kSum}},
                          "mean: s = 1/P (1 / non-ignored positions with "
                          "ignore_index); sum: s = 1"),
           FlagField<P>(
               "inplace", &P::inplace,
               "1: write the gradient over logits (grad_logits is that "
               "tensor); 0: allocate grad_logits"),
           DTypeField<P>()}),
      .validate = ValidateCrossEntropyParams,
      .io =
          Concat(CrossEntropyInputRows<P>(),
                 {InputRow<P>("lse_state", "[P]",
                              [](const P& p) { return Shape{p.num_positions}; })
                      .Float32(),
                  OutputRow<P>("grad_logits", "[P, V]",
                               [](const P& p) {
                                 return Shape{p.num_positions, p.vocab_size};
                               })
                      .Note("the logits tensor itself when inplace=1")}),
      .body = TraceCrossEntropyBackward,
      .reference = CrossEntropyBackwardReference,
      // float32: the softmax is exp of an fp32 difference (a few ulps,
      // relative ~1e-6) times s, minus s at the target; 1e-5 relative to
      // the gradient's scale bounds it (every value is within [-s, s], and
      // with the mean reduction s is 1 / positions, so 1 + |value| would
      // bound nothing). bfloat16: the gradient is rounded to 8 mantissa
      // bits (relative 2^-9) on the way out; 1e-2 is the bf16 convention.
      .tolerance = ToleranceByDType(1e-5, 1e-2),
      .comparison = Comparison::kScale,
      .make_inputs =
          [](const P& p, uint64_t seed) {
            return MakeCrossEntropyInputs(p, seed, /*with_lse_state=*/true);
          },
      .example = CrossEntropyExample(),
  };
  return *spec;
}

}  // namespace nkigraph::kernels
