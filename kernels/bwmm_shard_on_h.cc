// bwmm_shard_on_H: the blockwise MoE forward with H sharded over the two
// logical cores, writing the activation checkpoints the backward replays.
//
//   core c owns the hidden columns Hc = [c·H/2, (c+1)·H/2)
//   output[:, Hc] = 0
//   for n in range(N):                                e = block_to_expert[n]
//     for each tile of <= 128 slots b:
//       hidden_T = transpose(hidden_states[token_ids, Hc])   # gather, oob skip
//       compute_gate_and_up_projections_shard:
//         for each i tile of I:
//           partial[i, {g, u}, b] = Σ over Hc of W[e, h, {0, 1}, i] ·
//           hidden_T[h, b] recv = sendrecv(partial, send_to = recv_from = 1 −
//           c)  # THE call gate_up_T = partial + recv (+ bias) # the all-reduce
//           gate_up_proj_act_checkpoint_T[n, c, i, b] = gate_up_T[c]  # g | u
//           gate_up_multiply_T[i, b] = act(g) · u
//       compute_block_output_shard:                           # no collective
//         for each h tile of Hc:
//           y[b, h] = Σ over I of gate_up_multiply_T[i, b] · Wd[e, i, h] (+ bd)
//           down_proj_act_checkpoint[n, b, h] = y
//           output[token, h] += affinity[token·E + e] · y      # RMW, oob skip
//
// Every matmul result goes PSUM → SBUF (tensor_copy or activation) before
// any DMA: a DMA cannot read PSUM.
#include "kernels/bwmm_shard_on_h.h"

#include <algorithm>
#include <cstdint>

#include "kernels/dsl.h"
#include "kernels/epilogue.h"
#include "kernels/two_cores.h"

namespace nkigraph::kernels {
namespace {

// One tile of slots of one block of the forward, and the stages that
// compute it.
struct ForwardBlock : MoeBlock<MoeInputs, BwmmShardOnHOutputs> {
  void LoadHiddenStatesTransposed(const Tensor& hidden_T) const;
  Tensor LoadGateUpBiasColumn(int j, const Tile& i) const;
  void ComputeGateAndUpProjectionsShard(const Tensor& hidden_T,
                                        const Tensor& gate_up_multiply_T) const;
  void ComputeBlockOutputShard(const Tensor& gate_up_multiply_T) const;
};

void ZeroInitOutput(const Tensor& output, const CoreShard& h) {
  Scope scope("ZeroInitOutput");
  ZeroFill(output.Slice(1, h.offset, h.size));
}

// hidden_T[:, k, b] = hidden_states[token_ids[b], chunk k of Hc]^T: the
// gathered rows (zero for empty slots), transposed 128 columns at a time on
// the tensor engine.
void ForwardBlock::LoadHiddenStatesTransposed(const Tensor& hidden_T) const {
  Scope scope("LoadHiddenStatesTransposed");
  const CoreShard& h = shards.hidden;
  Tensor hidden = builder::ndarray({slots(), h.size}, p.dtype, Buffer::kSbuf,
                                   "hidden_rows");
  GatherTokenRows(hidden, in.hidden_states, routing.token_ids, h.offset);
  TransposeToPartitionTiles(hidden_T, hidden, "hidden_T_psum");
}

// gate_up_proj_bias[e, j, i tile] as a float32 [i, 1] column.
Tensor ForwardBlock::LoadGateUpBiasColumn(int j, const Tile& i) const {
  Tensor column = builder::ndarray({i.size, 1}, proto::FLOAT32, Buffer::kSbuf,
                                   "gate_up_bias_col");
  isa::dma_copy(column, ExpertSlice(in.gate_up_proj_bias, routing.expert_idx)
                            .Select(0, j)
                            .Slice(0, i.offset, i.size)
                            .Reshape({i.size, 1}));
  return column;
}

// The gate and up projections, contraction over H: this core's partial sum
// over its half, all-reduced with the other core's by one sendrecv and an
// add. Writes this core's half of the gate/up checkpoint and
// gate_up_multiply_T = act(g) · u for the down projection.
void ForwardBlock::ComputeGateAndUpProjectionsShard(
    const Tensor& hidden_T, const Tensor& gate_up_multiply_T) const {
  Scope scope("ComputeGateAndUpProjectionsShard");
  const int core = builder::program_id();
  const int64_t b = slots();
  const Tensor weight = ExpertSlice(in.gate_up_proj_weight, routing.expert_idx);
  for (const Tile i : TiledRange(p.intermediate, StationaryFree())) {
    Scope i_scope("i_tile");
    Tensor psum = builder::ndarray({i.size, 2, b}, proto::FLOAT32,
                                   Buffer::kPsum, "gate_up_T_psum");
    for (int j = 0; j < 2; ++j) {
      for (const Tile k : ShardTiles(shards.hidden, Partitions())) {
        Scope k_scope("h_tile");
        Tensor weight_tile = builder::ndarray(
            {k.size, i.size}, p.dtype, Buffer::kSbuf, "gate_up_weight_tile");
        isa::dma_copy(weight_tile, weight.Slice(0, k.offset, k.size)
                                       .Select(1, j)
                                       .Slice(1, i.offset, i.size));
        isa::nc_matmul(psum.Select(1, j), weight_tile,
                       PartitionTile(hidden_T, k),
                       /*accumulate=*/k.index > 0);
      }
    }
    // The all-reduce of the two partial sums: one exchange, one add.
    const Tensor partial =
        EvacuatePsum(psum, proto::FLOAT32, "gate_up_partial");
    const Tensor full = SumWithOtherCore(
        partial, {.pipe = 0, .received_name = "gate_up_received"},
        "gate_up_full");

    Tensor gate_up_T =
        builder::ndarray({i.size, 2, b}, p.dtype, Buffer::kSbuf, "gate_up_T");
    if (p.bias) {
      for (int j = 0; j < 2; ++j) {
        isa::ActivationArgs args;
        args.bias = LoadGateUpBiasColumn(j, i);
        isa::activation(gate_up_T.Select(1, j), isa::ActFunc::kCopy,
                        full.Select(1, j), args);
      }
    } else {
      isa::tensor_copy(gate_up_T, full);
    }
    // Both cores hold the whole projection; each writes its half of the
    // checkpoint: the gate on core 0, the up projection on core 1.
    isa::dma_copy(out.gate_up_proj_act_checkpoint_T.Select(0, routing.block)
                      .Select(0, core)
                      .Slice(0, i.offset, i.size)
                      .Slice(1, routing.slots.offset, b),
                  gate_up_T.Select(1, core));
    Tensor gate_act = builder::ndarray({i.size, b}, proto::FLOAT32,
                                       Buffer::kSbuf, "gate_act");
    isa::activation(gate_act, MoeActFunc(p.activation), gate_up_T.Select(1, 0));
    isa::tensor_tensor(PartitionTile(gate_up_multiply_T, i), gate_act,
                       gate_up_T.Select(1, 1), isa::Alu::kMultiply);
  }
}

// The down projection, H the output dim: this core's columns only, no
// collective. y is checkpointed before the affinity, then accumulated into
// the tokens' output rows.
void ForwardBlock::ComputeBlockOutputShard(
    const Tensor& gate_up_multiply_T) const {
  Scope scope("ComputeBlockOutputShard");
  const int64_t b = slots();
  const Tensor down_weight =
      ExpertSlice(in.down_proj_weight, routing.expert_idx);
  for (const Tile h : ShardTiles(shards.hidden, MovingFree())) {
    Scope h_scope("h_tile");
    Tensor psum = builder::ndarray({b, h.size}, proto::FLOAT32, Buffer::kPsum,
                                   "down_psum");
    for (const Tile i : TiledRange(p.intermediate, Partitions())) {
      Scope i_scope("i_tile");
      Tensor weight_tile = builder::ndarray({i.size, h.size}, p.dtype,
                                            Buffer::kSbuf, "down_weight_tile");
      isa::dma_copy(
          weight_tile,
          down_weight.Slice(0, i.offset, i.size).Slice(1, h.offset, h.size));
      isa::nc_matmul(psum, PartitionTile(gate_up_multiply_T, i), weight_tile,
                     /*accumulate=*/i.index > 0);
    }
    Tensor down_output;
    if (p.bias) {
      down_output =
          builder::ndarray({b, h.size}, p.dtype, Buffer::kSbuf, "down_output");
      const Tensor unbiased =
          EvacuatePsum(psum, proto::FLOAT32, "down_output_f32");
      Tensor bias_rows = builder::ndarray({b, h.size}, proto::FLOAT32,
                                          Buffer::kSbuf, "down_bias_rows");
      isa::dma_copy(bias_rows,
                    ExpertSlice(in.down_proj_bias, routing.expert_idx)
                        .Slice(0, h.offset, h.size)
                        .Broadcast(0, b));
      isa::tensor_tensor(down_output, unbiased, bias_rows, isa::Alu::kAdd);
    } else {
      down_output = EvacuatePsum(psum, p.dtype, "down_output");
    }
    isa::dma_copy(out.down_proj_act_checkpoint.Select(0, routing.block)
                      .Slice(0, routing.slots.offset, b)
                      .Slice(1, h.offset, h.size),
                  down_output);
    Tensor weighted = builder::ndarray({b, h.size}, proto::FLOAT32,
                                       Buffer::kSbuf, "weighted_output");
    isa::tensor_scalar(weighted, down_output, isa::Alu::kMultiply,
                       routing.affinity);
    AccumulateIntoTokenRows(out.output, routing.token_ids, h.offset, weighted);
  }
}

void TraceBwmmShardOnH(KernelIo& io, const MoeParams& p) {
  const MoeInputs in = DeclareMoeInputs(io);
  BwmmShardOnHOutputs out;
  out.output = io.Output("output");
  out.gate_up_proj_act_checkpoint_T =
      io.Output("gate_up_proj_act_checkpoint_T");
  out.down_proj_act_checkpoint = io.Output("down_proj_act_checkpoint");
  builder::jit("bwmm_shard_on_H", BwmmShardOnH)(in, out, p);
}

}  // namespace

void BwmmShardOnH(const MoeInputs& in, const BwmmShardOnHOutputs& out,
                  const MoeParams& p) {
  const MoeCoreShards shards = CoreShardsOf(p, builder::program_id());
  const CoreShard& h = shards.hidden;
  ZeroInitOutput(out.output, h);
  for (int64_t n = 0; n < p.num_blocks; ++n) {
    for (const Tile slots : TiledRange(p.block_size, Partitions())) {
      Scope block("block");
      const BlockRouting routing = LoadBlockRouting(in, p, n, slots);
      const ForwardBlock blk{{in, out, p, shards, routing}};
      Tensor hidden_T = builder::ndarray(
          PartitionTiledShape(h.size, Partitions(), {slots.size}), p.dtype,
          Buffer::kSbuf, "hidden_T");
      blk.LoadHiddenStatesTransposed(hidden_T);
      Tensor gate_up_multiply_T = builder::ndarray(
          PartitionTiledShape(p.intermediate, Partitions(), {slots.size}),
          p.dtype, Buffer::kSbuf, "gate_up_multiply_T");
      blk.ComputeGateAndUpProjectionsShard(hidden_T, gate_up_multiply_T);
      blk.ComputeBlockOutputShard(gate_up_multiply_T);
    }
  }
}

std::vector<IoEntry<MoeParams>> BwmmShardOnHOutputRows() {
  using P = MoeParams;
  return {
      OutputRow<P>("output", "[T, H]",
                   [](const P& p) {
                     return Shape{p.num_tokens, p.hidden};
                   }),
      OutputRow<P>(
          "gate_up_proj_act_checkpoint_T", "[N, 2, I, B]",
          [](const P& p) {
            return Shape{p.num_blocks, 2, p.intermediate, p.block_size};
          }),
      OutputRow<P>("down_proj_act_checkpoint", "[N, B, H]",
                   [](const P& p) {
                     return Shape{p.num_blocks, p.block_size, p.hidden};
                   }),
  };
}

const KernelSpec<MoeParams>& BwmmShardOnHSpec() {
  static const auto* const spec = new KernelSpec<MoeParams>{
      .name = "bwmm_shard_on_H",
      .summary =
          "blockwise MoE expert FFN forward, H split across two cores "
          "(gate/up partial sums all-reduced by one sendrecv + add); "
          "writes the activation checkpoints blockwise_mm_bwd replays",
      .params = MoeFields(),
      .validate = ValidateMoeParams,
      .io = Concat(MoeInputRows(), BwmmShardOnHOutputRows()),
      .world = [](const MoeParams&) { return TwoCoreWorld(); },
      .body = TraceBwmmShardOnH,
      .reference = BwmmShardOnHReference,
      .tolerance = [](const MoeParams& p) { return ScaleTolerance(p.dtype); },
      .comparison = Comparison::kScale,
      .make_inputs = [](const MoeParams& p,
                        uint64_t seed) { return MakeMoeInputs(p, seed); },
  };
  return *spec;
}

}  // namespace nkigraph::kernels
