// topk_reduce: the MoE combine.
//
//   index[t, r] = packed int32 index of row r, on every partition t
//                 (dma_transpose of the two bf16 columns per row tile, read
//                 as int32 through a bitcast and converted to fp32, then
//                 broadcast: partition 0 to each quadrant's first
//                 partition, nc_stream_shuffle within each quadrant)
//   ids[t, 0:8] = t                                   (iota)
//   rows[t, k]  = k-th row r with index[t, r] == t    (nc_find_index8)
//   acc = 0; for k < K: acc += input[rows[:, k], H-half]  (dma_compute,
//                       OOB_SKIP: a token without a k-th row adds nothing)
//   output[:, H-half] = acc
#include "kernels/topk_reduce.h"

#include <algorithm>
#include <vector>

#include "absl/strings/str_cat.h"
#include "kernels/dsl.h"
#include "kernels/two_cores.h"

namespace nkigraph::kernels {
namespace {

constexpr int64_t kMaxTokens = 128;
constexpr int64_t kMaxTopK = 8;  // the values nc_find_index8 matches at once
constexpr int64_t kMaxRows = 16384;
constexpr int64_t kMaxHidden = 65536;
// nc_stream_shuffle moves partitions within quadrants of this many.
constexpr int64_t kQuadrant = 32;
// The values one nc_find_index8 looks for per partition.
constexpr int64_t kFindValues = 8;

absl::Status ValidateTopkReduceParams(const TopkReduceParams& p) {
  if (p.hidden % 2 != 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "parameter 'hidden' is ", p.hidden,
        "; it must be even: the two cores split it, and the int32 index "
        "after it must start on a 4-byte boundary of the row"));
  }
  if (p.num_tokens * p.top_k > p.rows) {
    return absl::InvalidArgumentError(absl::StrCat(
        "parameter 'rows' is ", p.rows, "; it must be at least num_tokens * ",
        "top_k = ", p.num_tokens * p.top_k,
        " (one row per token and expert, padded)"));
  }
  return absl::OkStatus();
}

// Fills `index` [T, R] fp32 with the packed token index of every row, on
// each of its T partitions.
void BroadcastTokenIndex(const Tensor& input, const Tensor& index,
                         const TopkReduceParams& p) {
  Scope scope("token_index");
  const int64_t t = p.num_tokens;
  const int64_t width = p.hidden + 2;
  // The shuffle reads every partition of its quadrant, the ones it fills
  // included; give those defined contents first.
  isa::memset(index, 0.0f);
  for (const Tile tile : TiledRange(p.rows, kTopkReduceIndexTileRows)) {
    Scope tile_scope("row_tile");
    Tensor pairs = builder::ndarray({1, 2 * kTopkReduceIndexTileRows},
                                    proto::BFLOAT16, Buffer::kSbuf, "pairs");
    // src walks [column pair (2), rows (n), 1]; axes (2, 1, 0) lay it out
    // as [1 partition, n rows, 2 columns]: the column transposed into one
    // partition, each row's two bf16 halves side by side.
    const Tensor columns = input.Ap({{1, 2}, {width, tile.size}, {1, 1}},
                                    tile.offset * width + p.hidden);
    const Tensor staged = pairs.Slice(1, 0, 2 * tile.size);
    isa::dma_transpose(staged.Reshape({1, tile.size, 2}), columns, {2, 1, 0});
    // The two halves are one int32; the copy converts its value to fp32
    // (exact below 2^24, and no larger value rounds into [0, T)).
    isa::tensor_copy(index.Slice(0, 0, 1).Slice(1, tile.offset, tile.size),
                     staged.Bitcast(proto::INT32));
  }
  const int64_t quadrants = CeilDiv(t, kQuadrant);
  for (int64_t q = 1; q < quadrants; ++q) {
    isa::dma_copy(index.Slice(0, q * kQuadrant, 1), index.Slice(0, 0, 1));
  }
  const std::vector<int64_t> from_first(kQuadrant, 0);
  for (int64_t q = 0; q < quadrants; ++q) {
    const Tensor quadrant =
        index.Slice(0, q * kQuadrant, std::min(kQuadrant, t - q * kQuadrant));
    isa::nc_stream_shuffle(quadrant, quadrant, from_first);
  }
}

}  // namespace

void TopkReduce(const Tensor& input, const Tensor& output,
                const TopkReduceParams& p) {
  const int64_t t = p.num_tokens;
  const int64_t half = p.hidden / 2;
  const int64_t h0 = builder::program_id() * half;

  const Tensor index = builder::ndarray({t, p.rows}, proto::FLOAT32,
                                        Buffer::kSbuf, "token_index");
  BroadcastTokenIndex(input, index, p);
  Tensor ids =
      builder::ndarray({t, kFindValues}, proto::FLOAT32, Buffer::kSbuf, "ids");
  isa::iota(ids, {{0, kFindValues}}, /*offset=*/0, /*channel_multiplier=*/1);
  // Eight copies of t: the rows of its first eight occurrences, all ones
  // where it has fewer.
  Tensor token_rows = builder::ndarray({t, kFindValues}, proto::UINT32,
                                       Buffer::kSbuf, "token_rows");
  isa::nc_find_index8(token_rows, index, ids);

  Scope scope("reduce");
  Tensor reduced =
      builder::ndarray({t, half}, proto::BFLOAT16, Buffer::kSbuf, "reduced");
  isa::memset(reduced, 0.0f);
  // Row t of the gather is input row token_rows[t, k]; dim 0 of the view
  // only has to count T rows, which T <= R guarantees.
  const Tensor rows = input.Slice(0, 0, t).Slice(1, h0, half);
  for (int64_t k = 0; k < p.top_k; ++k) {
    isa::dma_compute(
        reduced,
        {rows.WithVectorOffset(token_rows.Slice(1, k, 1),
                               /*indirect_dim=*/0, builder::OobMode::kSkip)},
        /*accumulate=*/true);
  }
  isa::dma_copy(output.Slice(1, h0, half), reduced);
}

const KernelSpec<TopkReduceParams>& TopkReduceSpec() {
  using P = TopkReduceParams;
  static const auto* const spec = new KernelSpec<P>{
      .name = "topk_reduce",
      .summary =
          "MoE combine: per token, the sum of its first top_k rows of "
          "the sparse buffer, matched by the packed token index "
          "(nc_find_index8 against an iota) and gathered by "
          "dma_compute; H split across the cores",
      .params =
          {
              IntField<P>("num_tokens", &P::num_tokens, {1, kMaxTokens},
                          "tokens T: the partitions the index is "
                          "broadcast to")
                  .Required()
                  .Edges(AroundTiles({128})),
              IntField<P>("top_k", &P::top_k, {1, kMaxTopK},
                          "K: rows summed per token at most (one "
                          "nc_find_index8 finds 8)")
                  .Required()
                  .Edges(AroundTiles({8})),
              IntField<P>("hidden", &P::hidden, {2, kMaxHidden},
                          "hidden H (even: the cores split it)")
                  .Required()
                  .Edges({254, 256, 258, 1022, 1024, 1026}),
              IntField<P>("rows", &P::rows, {1, kMaxRows},
                          "rows R of the padded sparse buffer "
                          "(T * K <= R)")
                  .Required()
                  .Edges(AroundTiles({128, 512})),
          },
      .validate = ValidateTopkReduceParams,
      .io =
          {
              InputRow<P>("input", "[rows, hidden + 2]",
                          [](const P& p) {
                            return Shape{p.rows, p.hidden + 2};
                          })
                  .DType("bfloat16", [](const P&) { return proto::BFLOAT16; })
                  .RawBits()
                  .Note("columns hidden, hidden + 1: the int32 token index, "
                        "low 16 bits first; -1 pads"),
              OutputRow<P>("output", "[num_tokens, hidden]",
                           [](const P& p) {
                             return Shape{p.num_tokens, p.hidden};
                           })
                  .DType("bfloat16", [](const P&) { return proto::BFLOAT16; }),
          },
      .world = [](const P&) { return TwoCoreWorld(); },
      .body =
          [](KernelIo& io, const P& p) {
            const Tensor input = io.Input("input");
            const Tensor output = io.Output("output");
            builder::jit("topk_reduce", TopkReduce)(input, output, p);
          },
      .reference = TopkReduceReference,
      // The same adds in the same order, rounded alike: bit for bit.
      .tolerance = [](const P&) { return 0.0; },
      .make_inputs = MakeTopkReduceInputs,
      .example = {{"num_tokens", "40"},
                  {"top_k", "4"},
                  {"hidden", "256"},
                  {"rows", "700"}},
  };
  return *spec;
}

}  // namespace nkigraph::kernels
