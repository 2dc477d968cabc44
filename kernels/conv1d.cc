// conv1d: im2col-by-scatter + K-replication (design notes §4,
// conv1d.py:1160).
//
//   L_out = (L + pad_l + pad_r - dilation*(K-1) - 1) // stride + 1
//   for each block of this core's c_out (all of it unless the filters are
//   too big to stay resident):
//     filters_stacked[c_in tile][group] : rows j*PARTITION_STRIDE + i hold
//         filters[group*K_REP + j, i, c_out block]    # loaded once
//     for b, for each l tile (<= 512 output columns):
//       for each c_in tile:
//         x_window = x[b, c_in tile, window]          # one DMA; memset padding
//         _scatter_input_to_stacked: for each tap j of a group,
//           stacked[j*PARTITION_STRIDE + i, l] =
//               x_window[i, l*stride + tap_j*dilation]   # strided tensor_copy
//           (gaps between the tap blocks stay zero)
//       for each c_out tile (<= 128, the PSUM partitions):
//         psum[o, l] = sum over c_in tiles and tap groups of
//                      filters_stacked^T @ stacked    # ceil(K / K_REP) each
//         out_tile = act(psum + bias[o])              # fused evacuation
//         out[b, c_out tile, l tile] = out_tile
//
// A group of one tap needs no stacking: its moving operand is a strided
// view of x_window itself. Buffers are allocated once and reused: two
// window sets and two output tiles alternate between l tiles, two PSUM
// tiles (banks) between output tiles.
#include "kernels/conv1d.h"

#include <algorithm>
#include <array>

#include "absl/strings/str_cat.h"
#include "kernels/conv_common.h"
#include "kernels/dsl.h"
#include "kernels/two_cores.h"
#include "util/dtype.h"
#include "util/status_macros.h"

namespace nkigraph::kernels {
namespace {

// Per-partition SBUF split: the stacked filters of a c_out block, then the
// double-buffered input windows and output tiles; the bias columns (at
// most 2 KiB) fit in what is left of kConvSbufBudgetBytes.
constexpr int64_t kFilterBudgetBytes = 96 * 1024;
constexpr int64_t kWindowBudgetBytes = 56 * 1024;

// The taps of group `g` of a c_in tile: K_REP consecutive taps, fewer in
// the last group.
struct TapGroup {
  int64_t first_tap;
  int64_t num_taps;
};

TapGroup GroupOf(const CinTilePlan& ci, int64_t g, int64_t kernel_size) {
  const int64_t first = g * ci.rep.k_rep;
  return TapGroup{first, std::min(ci.rep.k_rep, kernel_size - first)};
}

// Contraction partitions of a group: the tap blocks and the gaps between.
int64_t StackedPartitions(const CinTilePlan& ci, const TapGroup& group) {
  return (group.num_taps - 1) * ci.rep.partition_stride + ci.tile.size;
}

// This core's c_out channels: all of them, or one half with lnc_shard.
Tile CoreCoutSlice(const Conv1dParams& params, int core) {
  if (!params.lnc_shard) return Tile{0, 0, params.c_out};
  const int64_t half = CeilDiv(params.c_out, 2);
  return core == 0 ? Tile{0, 0, half} : Tile{1, half, params.c_out - half};
}

// --- On-chip buffers --------------------------------------------------------

// Stacked filters (the stationary operands), per c_in tile and tap group:
// [StackedPartitions, co_block]; gap partitions zeroed once.
using StackedFilters = std::vector<std::vector<Tensor>>;

StackedFilters AllocateStackedFilters(const Conv1dPlan& plan,
                                      const Conv1dParams& params) {
  StackedFilters filters(plan.cin_tiles.size());
  for (size_t t = 0; t < plan.cin_tiles.size(); ++t) {
    const CinTilePlan& ci = plan.cin_tiles[t];
    for (int64_t g = 0; g < ci.num_groups; ++g) {
      const TapGroup group = GroupOf(ci, g, params.kernel_size);
      Tensor tile = builder::ndarray(
          {StackedPartitions(ci, group), plan.co_block}, params.dtype,
          Buffer::kSbuf, absl::StrCat("filters_stacked_", t, "_", g));
      if (group.num_taps > 1 && ci.tile.size < ci.rep.partition_stride) {
        isa::memset(tile, 0.0f);  // the gaps between tap blocks
      }
      filters[t].push_back(tile);
    }
  }
  return filters;
}

// The input of one l tile: per c_in tile the padded input window
// [c, window_width], and per group of more than one tap the stacked windows
// [StackedPartitions, l_tile] (invalid for one-tap groups, whose moving
// operand is a view of the window).
struct InputWindows {
  std::vector<Tensor> x_window;
  std::vector<std::vector<Tensor>> stacked;
};

InputWindows AllocateInputWindows(const Conv1dPlan& plan,
                                  const Conv1dParams& params, int set) {
  InputWindows windows;
  windows.stacked.resize(plan.cin_tiles.size());
  for (size_t t = 0; t < plan.cin_tiles.size(); ++t) {
    const CinTilePlan& ci = plan.cin_tiles[t];
    windows.x_window.push_back(builder::ndarray(
        {ci.tile.size, plan.window_width}, params.dtype, Buffer::kSbuf,
        absl::StrCat("x_window_", set, "_", t)));
    for (int64_t g = 0; g < ci.num_groups; ++g) {
      const TapGroup group = GroupOf(ci, g, params.kernel_size);
      Tensor stacked;
      if (group.num_taps > 1) {
        stacked = builder::ndarray(
            {StackedPartitions(ci, group), plan.l_tile}, params.dtype,
            Buffer::kSbuf, absl::StrCat("x_stacked_", set, "_", t, "_", g));
        // The gaps between tap blocks stay zero for the whole kernel: the
        // scatter below writes only the blocks.
        if (ci.tile.size < ci.rep.partition_stride) isa::memset(stacked, 0.0f);
      }
      windows.stacked[t].push_back(stacked);
    }
  }
  return windows;
}

// --- Stages
// -------------------------------------------------------------------

// bias[c_out slice] as float32 columns: column t holds the bias of the
// slice's c_out tile t, one value per PSUM partition.
Tensor LoadBiasColumns(const Tensor& bias, const Tile& co_slice) {
  const int64_t full = co_slice.size / Partitions();
  const int64_t tail = co_slice.size % Partitions();
  Tensor columns = builder::ndarray(
      {full > 0 ? Partitions() : tail, CeilDiv(co_slice.size, Partitions())},
      proto::FLOAT32, Buffer::kSbuf, "bias_columns");
  if (full > 0) {
    isa::dma_copy(columns.Slice(1, 0, full),
                  bias.Slice(0, co_slice.offset, full * Partitions())
                      .Reshape({full, Partitions()})
                      .Permute({1, 0}));
  }
  if (tail > 0) {
    isa::dma_copy(columns.Slice(0, 0, tail).Slice(1, full, 1),
                  bias.Slice(0, co_slice.offset + full * Partitions(), tail)
                      .Reshape({tail, 1}));
  }
  return columns;
}

// filters[tap, c_in tile, c_out block] into the tap blocks of the stacked
// filters: one DMA per tap and c_in tile.
void LoadStackedFilters(const Tensor& filters, const StackedFilters& stacked,
                        const Conv1dPlan& plan, const Conv1dParams& params,
                        const Tile& co_block) {
  Scope scope("load_stacked_filters");
  for (size_t t = 0; t < plan.cin_tiles.size(); ++t) {
    const CinTilePlan& ci = plan.cin_tiles[t];
    for (int64_t g = 0; g < ci.num_groups; ++g) {
      const TapGroup group = GroupOf(ci, g, params.kernel_size);
      for (int64_t j = 0; j < group.num_taps; ++j) {
        isa::dma_copy(stacked[t][g]
                          .Slice(0, j * ci.rep.partition_stride, ci.tile.size)
                          .Slice(1, 0, co_block.size),
                      filters.Select(0, group.first_tap + j)
                          .Slice(0, ci.tile.offset, ci.tile.size)
                          .Slice(1, co_block.offset, co_block.size));
      }
    }
  }
}

// x[b, c_in tile, positions under the l tile] into the window, the
// positions in the zero padding memset.
void LoadInputWindow(const Tensor& x_in, const Tensor& x_window,
                     const CinTilePlan& ci, int64_t b, const Tile& l_tile,
                     const Conv1dParams& params) {
  const int64_t width = (l_tile.size - 1) * params.stride +
                        params.dilation * (params.kernel_size - 1) + 1;
  const ClippedRun run = ClipRun(
      l_tile.offset * params.stride - params.pad_left, width, params.length);
  if (run.zeros_before > 0) {
    isa::memset(x_window.Slice(1, 0, run.zeros_before), 0.0f);
  }
  if (run.valid_size > 0) {
    isa::dma_copy(x_window.Slice(1, run.zeros_before, run.valid_size),
                  x_in.Select(0, b)
                      .Slice(0, ci.tile.offset, ci.tile.size)
                      .Slice(1, run.valid_start, run.valid_size));
  }
  if (run.zeros_after > 0) {
    isa::memset(
        x_window.Slice(1, run.zeros_before + run.valid_size, run.zeros_after),
        0.0f);
  }
}

// _scatter_input_to_stacked: tap j of a group into partition block
// j*PARTITION_STRIDE (starts 0/32/64/96 or 0/64), reading the window every
// `stride` columns from the tap's offset. The copies alternate between the
// vector and gpsimd engines.
void ScatterInputToStacked(const Tensor& x_window,
                           const std::vector<Tensor>& stacked,
                           const CinTilePlan& ci, const Tile& l_tile,
                           const Conv1dParams& params) {
  for (int64_t g = 0; g < ci.num_groups; ++g) {
    if (!stacked[g].valid()) continue;
    const TapGroup group = GroupOf(ci, g, params.kernel_size);
    for (int64_t j = 0; j < group.num_taps; ++j) {
      isa::tensor_copy(
          stacked[g]
              .Slice(0, j * ci.rep.partition_stride, ci.tile.size)
              .Slice(1, 0, l_tile.size),
          x_window.Slice(1, (group.first_tap + j) * params.dilation,
                         l_tile.size, params.stride),
          j % 2 == 0 ? isa::Engine::kVector : isa::Engine::kGpSimd);
    }
  }
}

// The moving operand of group g of c_in tile t: the stacked windows, or for
// a one-tap group the window read every `stride` columns from the tap.
Tensor MovingWindows(const InputWindows& windows, const CinTilePlan& ci,
                     size_t t, int64_t g, const Tile& l_tile,
                     const Conv1dParams& params) {
  const Tensor& stacked = windows.stacked[t][g];
  if (stacked.valid()) return stacked.Slice(1, 0, l_tile.size);
  const TapGroup group = GroupOf(ci, g, params.kernel_size);
  return windows.x_window[t].Slice(1, group.first_tap * params.dilation,
                                   l_tile.size, params.stride);
}

// psum[o, l] = sum over c_in tiles and tap groups of
// filters_stacked[.., co tile]^T @ moving: ceil(K / K_REP) matmuls per c_in
// tile into one accumulation group.
void AccumulateOutputTile(const Tensor& psum, const StackedFilters& filters,
                          const InputWindows& windows, const Conv1dPlan& plan,
                          const Tile& co_tile, const Tile& l_tile,
                          const Conv1dParams& params) {
  bool first = true;
  for (size_t t = 0; t < plan.cin_tiles.size(); ++t) {
    const CinTilePlan& ci = plan.cin_tiles[t];
    for (int64_t g = 0; g < ci.num_groups; ++g) {
      isa::nc_matmul(psum, filters[t][g].Slice(1, co_tile.offset, co_tile.size),
                     MovingWindows(windows, ci, t, g, l_tile, params),
                     /*accumulate=*/!first);
      first = false;
    }
  }
}

// What the fields' own limits cannot say: a non-empty output, two output
// channels to split, a tiling that fits.
absl::Status ValidateConv1dParams(const Conv1dParams& params) {
  if (params.l_out() < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("parameters kernel_size=", params.kernel_size,
                     ", dilation=", params.dilation,
                     ": the receptive field dilation*("
                     "kernel_size-1)+1 = ",
                     params.dilation * (params.kernel_size - 1) + 1,
                     " exceeds the padded length length+pad_left+pad_right = ",
                     params.length + params.pad_left + params.pad_right,
                     "; the output would be empty"));
  }
  if (params.lnc_shard && params.c_out < 2) {
    return absl::InvalidArgumentError(absl::StrCat(
        "parameter 'c_out' is ", params.c_out,
        "; lnc_shard=1 splits c_out between 2 cores and needs at least 2"));
  }
  return PlanConv1d(params).status();
}

void TraceConv1d(KernelIo& io, const Conv1dParams& p) {
  const Tensor x_in = io.Input("x_in");
  const Tensor filters = io.Input("filters");
  const Tensor bias = io.Input("bias");  // invalid when bias=0
  const Tensor out = io.Output("out");
  builder::jit("conv1d", Conv1d)(x_in, filters, bias, out, p);
}

}  // namespace

int64_t Conv1dParams::l_out() const { return OutputLength(length); }

KReplication GetKReplicationParams(int64_t c_in_tile, int64_t kernel_size) {
  if (c_in_tile <= 32)
    return KReplication{std::min<int64_t>(kernel_size, 4), 32};
  if (c_in_tile <= 64)
    return KReplication{std::min<int64_t>(kernel_size, 2), 64};
  return KReplication{1, c_in_tile};
}

absl::StatusOr<Conv1dPlan> PlanConv1d(const Conv1dParams& params) {
  Conv1dPlan plan;
  const int64_t es = DTypeSize(params.dtype);
  int64_t groups = 0;          // matmuls per output tile
  int64_t stacked_groups = 0;  // groups with a stacked window
  for (const Tile tile : TiledRange(params.c_in, Partitions())) {
    const KReplication rep =
        GetKReplicationParams(tile.size, params.kernel_size);
    const CinTilePlan ci{tile, rep, CeilDiv(params.kernel_size, rep.k_rep)};
    for (int64_t g = 0; g < ci.num_groups; ++g) {
      if (GroupOf(ci, g, params.kernel_size).num_taps > 1) ++stacked_groups;
    }
    groups += ci.num_groups;
    plan.cin_tiles.push_back(ci);
  }
  const int64_t cin_tiles = static_cast<int64_t>(plan.cin_tiles.size());

  // The stacked filters of a c_out block stay resident: whole 128-channel
  // tiles of them within kFilterBudgetBytes.
  const int64_t tile_filter_bytes = groups * Partitions() * es;
  const int64_t co_local = CoreCoutSlice(params, 0).size;
  const int64_t block_tiles = kFilterBudgetBytes / tile_filter_bytes;
  if (block_tiles < 1) {
    return absl::InvalidArgumentError(absl::StrCat(
        "parameters c_in=", params.c_in, ", kernel_size=", params.kernel_size,
        ": the stacked filters of one 128-channel c_out tile need ",
        tile_filter_bytes,
        " bytes per SBUF partition; conv1d keeps them "
        "resident within ",
        kFilterBudgetBytes, " (reduce c_in or kernel_size)"));
  }
  plan.co_block = std::min(co_local, block_tiles * Partitions());

  // Double-buffered windows and output tiles of l_tile columns:
  // bytes(l) = es * (2 * sum over c_in tiles of the window ((l-1)*stride +
  // receptive field) + 2 * stacked groups * l + 2 * l), linear in l.
  const int64_t receptive_field =
      params.dilation * (params.kernel_size - 1) + 1;
  const int64_t per_column =
      es * (2 * cin_tiles * params.stride + 2 * stacked_groups + 2);
  const int64_t fixed = es * 2 * cin_tiles * (receptive_field - params.stride);
  const int64_t max_l_tile = (kWindowBudgetBytes - fixed) / per_column;
  if (max_l_tile < 1) {
    return absl::InvalidArgumentError(absl::StrCat(
        "parameters c_in=", params.c_in, ", kernel_size=", params.kernel_size,
        ", dilation=", params.dilation, ", stride=", params.stride,
        ": the input windows of one output column need ", fixed + per_column,
        " bytes per SBUF partition; the limit is ", kWindowBudgetBytes,
        " (reduce c_in, kernel_size or dilation)"));
  }
  plan.l_tile = std::min({MovingFree(), params.l_out(), max_l_tile});
  plan.window_width = (plan.l_tile - 1) * params.stride + receptive_field;

  const int64_t matmuls = params.batch * CeilDiv(params.l_out(), plan.l_tile) *
                          CeilDiv(params.c_out, Partitions()) * groups;
  NKI_RETURN_IF_ERROR(CheckTraceSize({{"batch", params.batch},
                                      {"c_in", params.c_in},
                                      {"c_out", params.c_out},
                                      {"length", params.length},
                                      {"kernel_size", params.kernel_size}},
                                     matmuls, "matmuls", "conv1d",
                                     kConvMaxMatmuls,
                                     "reduce batch, length or the channels"));
  return plan;
}

void Conv1d(const Tensor& x_in, const Tensor& filters, const Tensor& bias,
            const Tensor& out, const Conv1dParams& params) {
  const absl::StatusOr<Conv1dPlan> plan_or = PlanConv1d(params);
  if (!TraceOk(plan_or.status())) return;
  const Conv1dPlan& plan = *plan_or;
  const Tile co_slice = CoreCoutSlice(params, builder::program_id());

  Tensor bias_columns;
  if (params.bias) bias_columns = LoadBiasColumns(bias, co_slice);
  const StackedFilters filters_stacked = AllocateStackedFilters(plan, params);
  const std::array<InputWindows, 2> windows = {
      AllocateInputWindows(plan, params, 0),
      AllocateInputWindows(plan, params, 1)};
  const std::array<Tensor, 2> out_tiles = {
      builder::ndarray({Partitions(), plan.l_tile}, params.dtype, Buffer::kSbuf,
                       "out_tile_0"),
      builder::ndarray({Partitions(), plan.l_tile}, params.dtype, Buffer::kSbuf,
                       "out_tile_1")};
  PsumRotation psum_tiles(Partitions(), PsumBankColumns());

  int64_t window_step = 0;
  int64_t out_step = 0;
  for (const Tile co_block : TiledRange(co_slice.size, plan.co_block)) {
    Scope block_scope("c_out_block");
    LoadStackedFilters(
        filters, filters_stacked, plan, params,
        Tile{co_block.index, co_slice.offset + co_block.offset, co_block.size});
    for (int64_t b = 0; b < params.batch; ++b) {
      for (const Tile l_tile : TiledRange(params.l_out(), plan.l_tile)) {
        Scope l_scope("l_tile");
        const InputWindows& win = windows[window_step++ % 2];
        for (size_t t = 0; t < plan.cin_tiles.size(); ++t) {
          LoadInputWindow(x_in, win.x_window[t], plan.cin_tiles[t], b, l_tile,
                          params);
          ScatterInputToStacked(win.x_window[t], win.stacked[t],
                                plan.cin_tiles[t], l_tile, params);
        }
        for (const Tile co_tile : TiledRange(co_block.size, Partitions())) {
          Scope co_scope("c_out_tile");
          const Tensor psum = psum_tiles.Next()
                                  .Slice(0, 0, co_tile.size)
                                  .Slice(1, 0, l_tile.size);
          AccumulateOutputTile(psum, filters_stacked, win, plan, co_tile,
                               l_tile, params);
          const Tensor out_tile = out_tiles[out_step++ % 2]
                                      .Slice(0, 0, co_tile.size)
                                      .Slice(1, 0, l_tile.size);
          Tensor bias_column;
          if (params.bias) {
            bias_column =
                bias_columns.Slice(0, 0, co_tile.size)
                    .Slice(1, (co_block.offset + co_tile.offset) / Partitions(),
                           1);
          }
          EvacuatePsum(out_tile, psum, params.activation, bias_column);
          isa::dma_copy(
              out.Select(0, b)
                  .Slice(0, co_slice.offset + co_block.offset + co_tile.offset,
                         co_tile.size)
                  .Slice(1, l_tile.offset, l_tile.size),
              out_tile);
        }
      }
    }
  }
}

const KernelSpec<Conv1dParams>& Conv1dSpec() {
  using P = Conv1dParams;
  static const auto* const spec = new KernelSpec<P>{
      .name = "conv1d",
      .summary =
          "1-D convolution as matmuls: K-replication (taps stacked on the "
          "contraction partitions), im2col by on-chip strided copies, bias and "
          "activation fused into the PSUM evacuation; lnc_shard splits c_out "
          "across 2 cores",
      .params = Concat(
          Concat(
              {
                  IntField<P>("batch", &P::batch, {1, kConvMaxBatch},
                              "B: batch size")
                      .Required()
                      .Edges({2}),
                  IntField<P>("c_in", &P::c_in, {1, kConvMaxChannels},
                              "input channels")
                      .Required()
                      // Taps stack 4 deep up to 32 channels, 2 up to 64.
                      .Edges(AroundTiles({32, 64, 128})),
                  IntField<P>("c_out", &P::c_out, {1, kConvMaxChannels},
                              "output channels")
                      .Required()
                      .Edges(AroundTiles({128})),
                  IntField<P>("length", &P::length, {1, kConvMaxLength},
                              "L: input length")
                      .Required()
                      .Edges(AroundTiles({512})),
              },
              ConvWindowFields<P>("K", "length")),
          {
              IntField<P>("dilation", &P::dilation, {1, kConvMaxKernelSize},
                          "distance between taps"),
              FlagField<P>("bias", &P::bias,
                           "1: add the float32 bias [c_out]; 0: no bias"),
              ActivationField<P>(),
              FlagField<P>("lnc_shard", &P::lnc_shard,
                           "1: two cores split c_out, each writing its slice"),
              DTypeField<P>(),
          }),
      .validate = ValidateConv1dParams,
      .io =
          {
              InputRow<P>("x_in", "[B, c_in, L]",
                          [](const P& p) {
                            return Shape{p.batch, p.c_in, p.length};
                          }),
              InputRow<P>("filters", "[K, c_in, c_out]",
                          [](const P& p) {
                            return Shape{p.kernel_size, p.c_in, p.c_out};
                          }),
              InputRow<P>("bias", "[c_out]",
                          [](const P& p) { return Shape{p.c_out}; })
                  .Float32()
                  .When("bias=1", &P::bias),
              OutputRow<P>("out", "[B, c_out, L_out]",
                           [](const P& p) {
                             return Shape{p.batch, p.c_out, p.l_out()};
                           }),
          },
      .world =
          [](const P& p) {
            return p.lnc_shard ? TwoCoreWorld() : builder::WorldConfig{};
          },
      .body = TraceConv1d,
      .reference = Conv1dReference,
      .tolerance = ToleranceByDType(1e-4, 2e-2),
      .example = {{"batch", "2"},
                  {"c_in", "64"},
                  {"c_out", "160"},
                  {"length", "600"},
                  {"kernel_size", "3"},
                  {"pad_left", "1"},
                  {"pad_right", "1"},
                  {"activation", "relu"}},
  };
  return *spec;
}

}  // namespace nkigraph::kernels
