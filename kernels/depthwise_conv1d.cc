// depthwise_conv1d: implicit GEMM per channel (design notes §4,
// depthwise_conv1d.py:25).
//
//   kernel_assert(feature_group_count == C)      # true depthwise
//   kernel_assert(stride_h == 1 and dilation == 1)
//   for each channel tile (<= 128 channels):
//     filter_tile = filter[channel tile, :]       # one DMA
//     filter_T[s tile] = nc_transpose(filter_tile[:, s tile])   # (S, C_t)
//     for n, for each group of channels, for each q tile (<= 512):
//       input_tile[s, g, j] = img[n, c_g, q_start*stride + s + j - pad_l]
//           # one DMA whose partition s starts s elements further on (the
//           # slide); padding: memset zero columns, clipped copies
//       for each channel c of the group:
//         psum[1, q] = filter_T[s tile, c]^T @ input_tile[s tile, c, q*stride]
//           # stationary (S x 1), moving (S x Q), contraction over taps only
//         out_row[c] = psum                       # PSUM -> SBUF
//       out[n, channel group, q tile] = out_row   # one DMA per group
//
// S > 128 is tiled: each s tile is one accumulating matmul. Buffers are
// allocated once: two window sets and two output rows alternate between
// iterations, two PSUM tiles (banks) between channels.
#include "kernels/depthwise_conv1d.h"

#include <algorithm>
#include <array>
#include <limits>

#include "absl/strings/str_cat.h"
#include "kernels/conv_common.h"
#include "kernels/dsl.h"
#include "util/dtype.h"

namespace nkigraph::kernels {
namespace {

// Per-partition SBUF bytes for the double-buffered windows and output
// rows; the filters (at most 48 KiB for S = 4096 in float32) take the rest
// of kConvSbufBudgetBytes.
constexpr int64_t kWindowBudgetBytes = 96 * 1024;

// Buffers of one iteration: the windows of every s tile
// ([128, channel_group, window_columns] each) and the output row
// [1, channel_group, q_tile].
struct WindowSet {
  std::vector<Tensor> input_tiles;
  Tensor out_row;
};

WindowSet AllocateWindowSet(const DepthwiseConv1dPlan& plan,
                            const DepthwiseConv1dParams& params, int set) {
  WindowSet windows;
  for (const Tile s_tile : TiledRange(params.kernel_size, Partitions())) {
    windows.input_tiles.push_back(builder::ndarray(
        {s_tile.size, plan.channel_group, plan.window_columns}, params.dtype,
        Buffer::kSbuf, absl::StrCat("input_tile_", set, "_", s_tile.index)));
  }
  windows.out_row =
      builder::ndarray({1, plan.channel_group, plan.q_tile}, params.dtype,
                       Buffer::kSbuf, absl::StrCat("out_row_", set));
  return windows;
}

// filter[channel tile, :] transposed on chip into filter_T[s tile]
// ([s, c] = filter[c, s]): one DMA, then per s tile an nc_transpose into
// PSUM and a copy back to SBUF.
void LoadTransposedFilters(const Tensor& filter,
                           const std::vector<Tensor>& filter_t,
                           const Tensor& filter_tile,
                           const Tensor& transpose_psum, const Tile& c_tile,
                           const DepthwiseConv1dParams& params) {
  Scope scope("load_transposed_filters");
  isa::dma_copy(filter_tile.Slice(0, 0, c_tile.size),
                filter.Reshape({params.channels, params.kernel_size})
                    .Slice(0, c_tile.offset, c_tile.size));
  for (const Tile s_tile : TiledRange(params.kernel_size, Partitions())) {
    const Tensor transposed =
        transpose_psum.Slice(0, 0, s_tile.size).Slice(1, 0, c_tile.size);
    isa::nc_transpose(transposed, filter_tile.Slice(0, 0, c_tile.size)
                                      .Slice(1, s_tile.offset, s_tile.size));
    isa::tensor_copy(filter_t[s_tile.index]
                         .Slice(0, 0, s_tile.size)
                         .Slice(1, 0, c_tile.size),
                     transposed);
  }
}

// input_tile[s, g, j] = img[n, channels.offset + g, 0, start + s + j] for
// the s tile's partitions, zero where the position is in the padding. The
// columns where every partition is in range take one DMA whose access
// pattern encodes the slide; the few edge columns are memset and then
// filled by clipped copies of their in-range partitions.
void LoadInputWindows(const Tensor& img, const Tensor& input_tile, int64_t n,
                      const Tile& channels, const Tile& s_tile, int64_t start,
                      int64_t columns, const DepthwiseConv1dParams& params) {
  const int64_t w = params.width;
  const Tensor rows = img.Select(0, n)
                          .Slice(0, channels.offset, channels.size)
                          .Select(1, 0);  // [G, W]
  const Tensor window = input_tile.Slice(1, 0, channels.size)
                            .Slice(2, 0, columns);  // [s, G, columns]
  const int64_t interior_begin = std::clamp<int64_t>(-start, 0, columns);
  const int64_t interior_end =
      std::clamp<int64_t>(w - start - s_tile.size + 1, interior_begin, columns);
  if (interior_end > interior_begin) {
    isa::dma_copy(
        window.Slice(2, interior_begin, interior_end - interior_begin),
        SlidingWindows(rows, start + interior_begin, s_tile.size,
                       interior_end - interior_begin));
  }
  if (interior_begin > 0) {
    isa::memset(window.Slice(2, 0, interior_begin), 0.0f);
  }
  if (interior_end < columns) {
    isa::memset(window.Slice(2, interior_end, columns - interior_end), 0.0f);
  }
  for (int64_t j = 0; j < columns; ++j) {
    if (j == interior_begin) j = std::max(j, interior_end);
    if (j >= columns) break;
    const ClippedRun run = ClipRun(start + j, s_tile.size, w);
    if (run.valid_size == 0) continue;
    isa::dma_copy(
        window.Slice(0, run.zeros_before, run.valid_size).Slice(2, j, 1),
        SlidingWindows(rows, run.valid_start, run.valid_size, 1));
  }
}

// One output row per channel of the group: psum[1, q] = filter_T[:, c]^T @
// input_tile[:, c, q * stride], accumulated over the s tiles, then staged
// PSUM -> SBUF into the group's output row.
void ComputeChannelRows(const WindowSet& windows,
                        const std::vector<Tensor>& filter_t,
                        PsumRotation& psum_tiles, const Tile& group,
                        const Tile& q_tile,
                        const DepthwiseConv1dParams& params) {
  for (int64_t g = 0; g < group.size; ++g) {
    const Tensor psum = psum_tiles.Next().Slice(1, 0, q_tile.size);
    for (const Tile s_tile : TiledRange(params.kernel_size, Partitions())) {
      isa::nc_matmul(psum,
                     filter_t[s_tile.index]
                         .Slice(0, 0, s_tile.size)
                         .Slice(1, group.offset + g, 1),
                     windows.input_tiles[s_tile.index].Select(1, g).Slice(
                         1, 0, q_tile.size, params.stride),
                     /*accumulate=*/s_tile.index > 0);
    }
    isa::tensor_copy(windows.out_row.Select(1, g).Slice(1, 0, q_tile.size),
                     psum);
  }
}

// Checked only: what the original kernel asserts (kernel_assert), said
// in its terms rather than as a range.
constexpr IntLimits kAnyValue{std::numeric_limits<int64_t>::min(),
                              std::numeric_limits<int64_t>::max()};

absl::Status ValidateDepthwiseConv1dParams(
    const DepthwiseConv1dParams& params) {
  if (params.dilation != 1) {
    return absl::InvalidArgumentError(absl::StrCat(
        "parameter 'dilation' is ", params.dilation,
        "; depthwise_conv1d supports only dilation=1 (rhs_dilation (1, 1))"));
  }
  if (params.stride_h != 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("parameter 'stride_h' is ", params.stride_h,
                     "; depthwise_conv1d supports only stride_h=1"));
  }
  if (params.feature_group_count.has_value() &&
      *params.feature_group_count != params.channels) {
    return absl::InvalidArgumentError(absl::StrCat(
        "parameter 'feature_group_count' is ", *params.feature_group_count,
        "; it must equal channels (", params.channels,
        "): depthwise_conv1d is a true depthwise convolution"));
  }
  if (params.q_out() < 1) {
    return absl::InvalidArgumentError(absl::StrCat(
        "parameter 'kernel_size' is ", params.kernel_size,
        "; it exceeds the padded width width+pad_left+pad_right = ",
        params.width + params.pad_left + params.pad_right,
        " and the output would be empty"));
  }
  return PlanDepthwiseConv1d(params).status();
}

void TraceDepthwiseConv1d(KernelIo& io, const DepthwiseConv1dParams& p) {
  const Tensor img = io.Input("img");
  const Tensor filter = io.Input("filter");
  const Tensor out = io.Output("out");
  builder::jit("depthwise_conv1d", DepthwiseConv1d)(img, filter, out, p);
}

}  // namespace

int64_t DepthwiseConv1dParams::q_out() const {
  ConvWindow window = *this;
  window.dilation = 1;  // the kernel has none (any other value is refused)
  return window.OutputLength(width);
}

absl::StatusOr<DepthwiseConv1dPlan> PlanDepthwiseConv1d(
    const DepthwiseConv1dParams& params) {
  const int64_t es = DTypeSize(params.dtype);
  const int64_t s_tiles = CeilDiv(params.kernel_size, Partitions());
  DepthwiseConv1dPlan plan;
  plan.q_tile = std::min(MovingFree(), params.q_out());
  // Per channel of a group: two window sets of every s tile, two output
  // rows. Narrow the q tile until one channel fits.
  for (;;) {
    plan.window_columns = (plan.q_tile - 1) * params.stride + 1;
    const int64_t per_channel =
        es * 2 * (s_tiles * plan.window_columns + plan.q_tile);
    plan.channel_group = std::min(
        {Partitions(), params.channels, kWindowBudgetBytes / per_channel});
    if (plan.channel_group >= 1 || plan.q_tile == 1) break;
    plan.q_tile = CeilDiv(plan.q_tile, 2);
  }
  if (plan.channel_group < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("parameter 'kernel_size' is ", params.kernel_size,
                     ": the windows of one output column do not fit the ",
                     kWindowBudgetBytes, "-byte SBUF window budget"));
  }
  const int64_t matmuls = params.batch * params.channels *
                          CeilDiv(params.q_out(), plan.q_tile) * s_tiles;
  NKI_RETURN_IF_ERROR(CheckTraceSize({{"batch", params.batch},
                                      {"channels", params.channels},
                                      {"width", params.width},
                                      {"kernel_size", params.kernel_size}},
                                     matmuls, "matmuls", "depthwise_conv1d",
                                     kConvMaxMatmuls,
                                     "reduce batch, channels or width"));
  return plan;
}

void DepthwiseConv1d(const Tensor& img, const Tensor& filter, const Tensor& out,
                     const DepthwiseConv1dParams& params) {
  const absl::StatusOr<DepthwiseConv1dPlan> plan_or =
      PlanDepthwiseConv1d(params);
  if (!TraceOk(plan_or.status())) return;
  const DepthwiseConv1dPlan& plan = *plan_or;

  // Filters of one channel tile: staged as loaded, and transposed per s
  // tile.
  const Tensor filter_tile = builder::ndarray(
      {std::min(Partitions(), params.channels), params.kernel_size},
      params.dtype, Buffer::kSbuf, "filter_tile");
  std::vector<Tensor> filter_t;
  for (const Tile s_tile : TiledRange(params.kernel_size, Partitions())) {
    filter_t.push_back(builder::ndarray(
        {s_tile.size, std::min(Partitions(), params.channels)}, params.dtype,
        Buffer::kSbuf, absl::StrCat("filter_T_", s_tile.index)));
  }
  const Tensor transpose_psum =
      builder::ndarray({std::min(Partitions(), params.kernel_size),
                        std::min(Partitions(), params.channels)},
                       params.dtype, Buffer::kPsum, "filter_T_psum");
  const std::array<WindowSet, 2> windows = {AllocateWindowSet(plan, params, 0),
                                            AllocateWindowSet(plan, params, 1)};
  PsumRotation psum_tiles(1, PsumBankColumns());

  int64_t step = 0;
  for (const Tile c_tile : TiledRange(params.channels, Partitions())) {
    Scope c_scope("channel_tile");
    LoadTransposedFilters(filter, filter_t, filter_tile, transpose_psum, c_tile,
                          params);
    for (int64_t n = 0; n < params.batch; ++n) {
      for (const Tile group : TiledRange(c_tile.size, plan.channel_group)) {
        const Tile channels{group.index, c_tile.offset + group.offset,
                            group.size};
        for (const Tile q_tile : TiledRange(params.q_out(), plan.q_tile)) {
          Scope q_scope("q_tile");
          const WindowSet& set = windows[step++ % 2];
          const int64_t columns = (q_tile.size - 1) * params.stride + 1;
          for (const Tile s_tile :
               TiledRange(params.kernel_size, Partitions())) {
            LoadInputWindows(
                img, set.input_tiles[s_tile.index], n, channels, s_tile,
                q_tile.offset * params.stride - params.pad_left + s_tile.offset,
                columns, params);
          }
          ComputeChannelRows(set, filter_t, psum_tiles, group, q_tile, params);
          isa::dma_copy(
              out.Select(0, n)
                  .Slice(0, channels.offset, channels.size)
                  .Select(1, 0)
                  .Slice(1, q_tile.offset, q_tile.size),
              set.out_row.Slice(1, 0, channels.size).Slice(2, 0, q_tile.size));
        }
      }
    }
  }
}

const KernelSpec<DepthwiseConv1dParams>& DepthwiseConv1dSpec() {
  using P = DepthwiseConv1dParams;
  static const auto* const spec = new KernelSpec<P>{
      .name = "depthwise_conv1d",
      .summary =
          "depthwise 1-D convolution as an implicit GEMM per channel: (S x 1) "
          "filter column against (S x Q) windows loaded by a sliding access "
          "pattern, filters transposed on chip",
      .params = Concat(
          Concat(
              {
                  IntField<P>("batch", &P::batch, {1, kConvMaxBatch},
                              "N: batch size")
                      .Required()
                      .Edges({2}),
                  IntField<P>("channels", &P::channels, {1, kConvMaxChannels},
                              "C: channels (one filter each)")
                      .Required()
                      .Edges(AroundTiles({128})),
                  IntField<P>("width", &P::width, {1, kConvMaxLength},
                              "W: input width")
                      .Required()
                      .Edges(AroundTiles({512})),
              },
              ConvWindowFields<P>("S", "width")),
          {
              DTypeField<P>(),
              IntField<P>("dilation", &P::dilation, kAnyValue,
                          "must be 1 (checked: the kernel has no dilation)"),
              IntField<P>("stride_h", &P::stride_h, kAnyValue,
                          "must be 1 (checked: the kernel is 1-D)"),
              OptionalIntField<P>(
                  "feature_group_count", &P::feature_group_count, kAnyValue,
                  "must equal channels (the default); any other value is "
                  "refused"),
          }),
      .validate = ValidateDepthwiseConv1dParams,
      .io =
          {
              InputRow<P>("img", "[N, C, 1, W]",
                          [](const P& p) {
                            return Shape{p.batch, p.channels, 1, p.width};
                          }),
              InputRow<P>("filter", "[C, 1, 1, S]",
                          [](const P& p) {
                            return Shape{p.channels, 1, 1, p.kernel_size};
                          }),
              OutputRow<P>("out", "[N, C, 1, Q]",
                           [](const P& p) {
                             return Shape{p.batch, p.channels, 1, p.q_out()};
                           }),
          },
      .body = TraceDepthwiseConv1d,
      .reference = DepthwiseConv1dReference,
      .tolerance = ToleranceByDType(1e-4, 2e-2),
      .example = {{"batch", "2"},
                  {"channels", "160"},
                  {"width", "700"},
                  {"kernel_size", "4"},
                  {"pad_left", "2"},
                  {"pad_right", "1"}},
  };
  return *spec;
}

}  // namespace nkigraph::kernels
