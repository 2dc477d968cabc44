// blockwise_mm_bwd: the MoE expert FFN backward (blockwise_mm_bwd_dropless),
// store-not-recompute: the forward's gate/up and down matmuls are never
// re-run; g, u and y come from the checkpoints bwmm_shard_on_H wrote.
//
//   core c owns: hidden columns Hc (H/2 each), intermediate rows Ic (a half
//   of I), and, on core 0, the affinity gradient
//   zero the gradient slices this core owns
//   for n in range(N):                    # sequential; e = block_to_expert[n]
//     for each tile of <= 128 slots b:
//       STEP 1 _compute_down_projection_output_grad:
//         dO = output_hidden_states_grad[token_ids]       # gather, oob skip
//         dY = affinity · dO;  dY_T = transpose(dY)
//         d(affinity)[t·E + e] = Σ_H dO ⊙ y, y = down_proj_act_checkpoint[n]
//       STEP 2 _compute_gate_up_projection_output_grad:  (rows Ic)
//         g, u = gate_up_proj_act_checkpoint_T[n]         # replay: no matmul
//         s = act(g);  m = s · u → gate_up_multiply (for STEP 3)
//         dM_T = Σ_H Wd[e]^T · dY_T
//         up_grad = dM · s;  gate_grad = dM · u · act_dx(g)   # ISA silu_dx
//         gate_up_grad[{0, 1}, Ic] = (gate_grad, up_grad)  # shared HBM
//         (bias) gate_up_proj_bias_grad[e, :, Ic] += Σ_b   # RMW
//       STEP 3 _compute_down_projection_weight_grad:    (rows Ic)
//         down_proj_weight_grad[e, Ic] += m^T · dY         # RMW
//         (bias) down_proj_bias_grad[e, Hc] += Σ_b dY      # RMW
//       core_barrier(gate_up_grad)                        # RAW fence
//       STEP 4 _compute_hidden_states_grad:              (columns Hc)
//         hidden_states_grad[t, Hc] += gate_grad · W[e, Hc, 0]^T
//                                     + up_grad · W[e, Hc, 1]^T     # RMW
//       STEP 5 _compute_gate_up_projection_weight_grad:  (rows Hc)
//         gate_up_proj_weight_grad[e, Hc] += x^T · (gate_grad | up_grad)  # RMW
//       core_barrier(gate_up_grad)                        # WAR fence
//
// Every RMW is dma_copy (the expert's rows by the scalar offset
// expert_idx, or the tokens' rows by a vector offset) → tensor_tensor add
// → dma_copy back. The blocks run in order, and the two cores never write
// the same bytes, so no sendrecv is needed anywhere.
#include "kernels/blockwise_mm_bwd.h"

#include <algorithm>
#include <cstdint>
#include <random>
#include <string>
#include <utility>

#include "kernels/bwmm_shard_on_h.h"
#include "kernels/dsl.h"
#include "kernels/epilogue.h"
#include "kernels/input_draws.h"
#include "kernels/two_cores.h"
#include "util/dtype.h"
#include "util/status_macros.h"

namespace nkigraph::kernels {
namespace {

// One tile of slots of one block of the backward, and the stages that
// compute it, STEP 1 to STEP 5.
struct BackwardBlock : MoeBlock<BlockwiseMmBwdInputs, BlockwiseMmBwdOutputs> {
  void ComputeDownProjectionOutputGrad(const Tensor& down_output_grad,
                                       const Tensor& down_output_grad_T) const;
  void ComputeGateUpProjectionOutputGrad(const Tensor& down_output_grad_T,
                                         const Tensor& gate_up_multiply,
                                         const Tensor& gate_up_grad) const;
  void ComputeDownProjectionWeightGrad(const Tensor& gate_up_multiply,
                                       const Tensor& down_output_grad) const;
  void ComputeDownProjectionBiasGrad(const Tensor& down_output_grad) const;
  void ComputeHiddenStatesGrad(const Tensor& gate_up_grad) const;
  void ComputeGateUpProjectionWeightGrad(const Tensor& gate_up_grad) const;
};

bool OwnsAffinityGrad(int core) { return core == 0; }

void ZeroInitGradients(const BlockwiseMmBwdOutputs& out, const MoeCoreShards& s,
                       const MoeParams& p) {
  Scope scope("ZeroInitGradients");
  const CoreShard& h = s.hidden;
  const CoreShard& i = s.intermediate;
  ZeroFill(out.hidden_states_grad.Slice(1, h.offset, h.size));
  ZeroFill(out.gate_up_proj_weight_grad.Slice(1, h.offset, h.size)
               .Reshape({p.num_experts, h.size * 2 * p.intermediate}));
  if (OwnsAffinityGrad(builder::program_id())) {
    ZeroFill(out.expert_affinities_masked_grad.Reshape(
        {1, p.num_tokens * p.num_experts}));
  }
  if (i.size > 0) {
    ZeroFill(out.down_proj_weight_grad.Slice(1, i.offset, i.size)
                 .Reshape({p.num_experts, i.size * p.hidden}));
  }
  if (p.bias) {
    ZeroFill(out.down_proj_bias_grad.Slice(1, h.offset, h.size));
    if (i.size > 0) {
      ZeroFill(out.gate_up_proj_bias_grad.Slice(2, i.offset, i.size));
    }
  }
}

// STEP 1. dY = affinity · dO, the gradient of the down output y, in both
// layouts ([b, H] and, 128 columns at a time, [h, b]); and on the owning
// core d(affinity)[t·E + e] = Σ_H dO ⊙ y with y the down checkpoint.
void BackwardBlock::ComputeDownProjectionOutputGrad(
    const Tensor& down_output_grad, const Tensor& down_output_grad_T) const {
  Scope scope("ComputeDownProjectionOutputGrad");
  const int64_t b = slots();
  Tensor output_grad =
      builder::ndarray({b, p.hidden}, p.dtype, Buffer::kSbuf, "output_grad");
  GatherTokenRows(output_grad, in.output_hidden_states_grad, routing.token_ids,
                  0);
  isa::tensor_scalar(down_output_grad, output_grad, isa::Alu::kMultiply,
                     routing.affinity);
  TransposeToPartitionTiles(down_output_grad_T, down_output_grad,
                            "down_output_grad_T_psum");
  if (!OwnsAffinityGrad(builder::program_id())) return;
  const Tensor down_output =
      in.down_proj_act_checkpoint.Select(0, routing.block)
          .Slice(0, routing.slots.offset, b);
  Tensor partial_sums =
      builder::ndarray({b, CeilDiv(p.hidden, MovingFree())}, proto::FLOAT32,
                       Buffer::kSbuf, "affinity_grad_partial");
  for (const Tile k : TiledRange(p.hidden, MovingFree())) {
    Scope chunk("h_chunk");
    Tensor y =
        builder::ndarray({b, k.size}, p.dtype, Buffer::kSbuf, "down_output");
    isa::dma_copy(y, down_output.Slice(1, k.offset, k.size));
    Tensor product = builder::ndarray({b, k.size}, proto::FLOAT32,
                                      Buffer::kSbuf, "output_grad_times_y");
    isa::tensor_tensor(product, output_grad.Slice(1, k.offset, k.size), y,
                       isa::Alu::kMultiply);
    isa::tensor_reduce(partial_sums.Slice(1, k.index, 1), isa::Alu::kAdd,
                       product);
  }
  Tensor affinity_grad =
      builder::ndarray({b, 1}, proto::FLOAT32, Buffer::kSbuf, "affinity_grad");
  isa::tensor_reduce(affinity_grad, isa::Alu::kAdd, partial_sums);
  isa::dma_copy(
      TokenRows(out.expert_affinities_masked_grad, routing.affinity_idx, 0, 1),
      affinity_grad);
}

// STEP 2, on this core's rows of I. Replays s = act(g) and m = s · u from
// the gate/up checkpoint (m goes to gate_up_multiply for STEP 3), takes
// dM_T = Wd[e] · dY_T over H, and splits it by the chain rule into
// up_grad = dM · s and gate_grad = dM · u · act'(g), act' from the ISA's
// derivative function. The gradients go to the shared gate_up_grad buffer.
void BackwardBlock::ComputeGateUpProjectionOutputGrad(
    const Tensor& down_output_grad_T, const Tensor& gate_up_multiply,
    const Tensor& gate_up_grad) const {
  Scope scope("ComputeGateUpProjectionOutputGrad");
  const int64_t b = slots();
  const Tensor down_weight =
      ExpertSlice(in.forward.down_proj_weight, routing.expert_idx);
  const Tensor checkpoint =
      in.gate_up_proj_act_checkpoint_T.Select(0, routing.block);
  for (const Tile i : ShardTiles(shards.intermediate, StationaryFree())) {
    Scope i_scope("i_tile");
    // (a) The replay: one activation, one multiply.
    Tensor gate_up_T =
        builder::ndarray({i.size, 2, b}, p.dtype, Buffer::kSbuf, "gate_up_T");
    isa::dma_copy(gate_up_T, checkpoint.Slice(1, i.offset, i.size)
                                 .Slice(2, routing.slots.offset, b)
                                 .Permute({1, 0, 2}));
    Tensor gate_act = builder::ndarray({i.size, b}, proto::FLOAT32,
                                       Buffer::kSbuf, "gate_act");
    isa::activation(gate_act, MoeActFunc(p.activation), gate_up_T.Select(1, 0));
    Tensor gate_up_multiply_T = builder::ndarray(
        {i.size, b}, p.dtype, Buffer::kSbuf, "gate_up_multiply_T");
    isa::tensor_tensor(gate_up_multiply_T, gate_act, gate_up_T.Select(1, 1),
                       isa::Alu::kMultiply);
    isa::dma_copy(gate_up_multiply.Slice(0, i.offset, i.size).Slice(1, 0, b),
                  gate_up_multiply_T);

    // (b) dM_T[i, b] = Σ_h Wd[e, i, h] · dY_T[h, b].
    Tensor psum = builder::ndarray({i.size, b}, proto::FLOAT32, Buffer::kPsum,
                                   "gate_up_multiply_grad_psum");
    for (const Tile k : TiledRange(p.hidden, Partitions())) {
      Scope k_scope("h_tile");
      Tensor weight_T = builder::ndarray({k.size, i.size}, p.dtype,
                                         Buffer::kSbuf, "down_weight_T_tile");
      isa::dma_copy(weight_T, down_weight.Slice(0, i.offset, i.size)
                                  .Slice(1, k.offset, k.size)
                                  .Permute({1, 0}));
      isa::nc_matmul(psum, weight_T, PartitionTile(down_output_grad_T, k),
                     /*accumulate=*/k.index > 0);
    }
    const Tensor multiply_grad =
        EvacuatePsum(psum, proto::FLOAT32, "gate_up_multiply_grad");

    // (c) The chain rule through m = act(g) · u.
    Tensor grad = builder::ndarray({i.size, 2, b}, proto::FLOAT32,
                                   Buffer::kSbuf, "gate_up_grad_tile");
    isa::tensor_tensor(grad.Select(1, 1), multiply_grad, gate_act,
                       isa::Alu::kMultiply);  // up_grad
    Tensor act_grad = builder::ndarray({i.size, b}, proto::FLOAT32,
                                       Buffer::kSbuf, "gate_act_grad");
    isa::tensor_tensor(act_grad, multiply_grad, gate_up_T.Select(1, 1),
                       isa::Alu::kMultiply);
    Tensor act_dx = builder::ndarray({i.size, b}, proto::FLOAT32, Buffer::kSbuf,
                                     "gate_act_dx");
    isa::activation(act_dx, MoeActDerivativeFunc(p.activation),
                    gate_up_T.Select(1, 0));
    isa::tensor_tensor(grad.Select(1, 0), act_grad, act_dx,
                       isa::Alu::kMultiply);  // gate_grad
    isa::dma_copy(gate_up_grad.Slice(1, i.offset, i.size)
                      .Slice(2, 0, b)
                      .Permute({1, 0, 2}),
                  grad);
    if (p.bias) {
      Tensor bias_grad = builder::ndarray({i.size, 2}, proto::FLOAT32,
                                          Buffer::kSbuf, "gate_up_bias_grad");
      isa::tensor_reduce(bias_grad, isa::Alu::kAdd, grad);
      AccumulateIntoExpertRows(
          ExpertSlice(out.gate_up_proj_bias_grad, routing.expert_idx)
              .Slice(1, i.offset, i.size)
              .Permute({1, 0}),
          bias_grad);
    }
  }
}

// STEP 3, on this core's rows of I: dW_down[e, i, h] += Σ_b m[b, i] ·
// dY[b, h], m read back transposed from gate_up_multiply.
void BackwardBlock::ComputeDownProjectionWeightGrad(
    const Tensor& gate_up_multiply, const Tensor& down_output_grad) const {
  Scope scope("ComputeDownProjectionWeightGrad");
  const int64_t b = slots();
  const Tensor weight_grad =
      ExpertSlice(out.down_proj_weight_grad, routing.expert_idx);
  for (const Tile i : ShardTiles(shards.intermediate, StationaryFree())) {
    Scope i_scope("i_tile");
    Tensor multiply = builder::ndarray({b, i.size}, p.dtype, Buffer::kSbuf,
                                       "gate_up_multiply");
    isa::dma_copy(multiply, gate_up_multiply.Slice(0, i.offset, i.size)
                                .Slice(1, 0, b)
                                .Permute({1, 0}));
    for (const Tile h : TiledRange(p.hidden, MovingFree())) {
      Scope h_scope("h_tile");
      AccumulateMatmulIntoExpertRows(
          weight_grad.Slice(0, i.offset, i.size).Slice(1, h.offset, h.size),
          multiply, down_output_grad.Slice(1, h.offset, h.size),
          "down_weight_grad");
    }
  }
}

// d(down bias)[e, Hc] += Σ_b dY[b, Hc]: the partition sum as a matmul with
// a ones column.
void BackwardBlock::ComputeDownProjectionBiasGrad(
    const Tensor& down_output_grad) const {
  Scope scope("ComputeDownProjectionBiasGrad");
  Tensor ones = builder::ndarray({slots(), 1}, p.dtype, Buffer::kSbuf, "ones");
  isa::memset(ones, 1.0f);
  const Tensor bias_grad =
      ExpertSlice(out.down_proj_bias_grad, routing.expert_idx);
  for (const Tile h : ShardTiles(shards.hidden, MovingFree())) {
    Scope h_scope("h_tile");
    AccumulateMatmulIntoExpertRows(
        bias_grad.Slice(0, h.offset, h.size).Reshape({1, h.size}), ones,
        down_output_grad.Slice(1, h.offset, h.size), "down_bias_grad");
  }
}

// STEP 4, on this core's columns of H: dX[b, h] = Σ_i gate_grad[b, i] ·
// W[e, h, 0, i] + up_grad[b, i] · W[e, h, 1, i], accumulated into the
// tokens' rows of hidden_states_grad.
void BackwardBlock::ComputeHiddenStatesGrad(const Tensor& gate_up_grad) const {
  Scope scope("ComputeHiddenStatesGrad");
  const int64_t b = slots();
  const int64_t i_tiles = CeilDiv(p.intermediate, Partitions());
  Tensor grad_T =
      builder::ndarray({std::min(p.intermediate, Partitions()), 2, i_tiles, b},
                       p.dtype, Buffer::kSbuf, "gate_up_grad_T");
  for (const Tile i : TiledRange(p.intermediate, Partitions())) {
    isa::dma_copy(PartitionTile(grad_T, i, /*tile_dim=*/2),
                  gate_up_grad.Slice(1, i.offset, i.size)
                      .Slice(2, 0, b)
                      .Permute({1, 0, 2}));
  }
  const Tensor weight =
      ExpertSlice(in.forward.gate_up_proj_weight, routing.expert_idx);
  for (const Tile h : ShardTiles(shards.hidden, MovingFree())) {
    Scope h_scope("h_tile");
    Tensor psum = builder::ndarray({b, h.size}, proto::FLOAT32, Buffer::kPsum,
                                   "hidden_grad_psum");
    bool first = true;
    for (int j = 0; j < 2; ++j) {
      for (const Tile i : TiledRange(p.intermediate, Partitions())) {
        Scope i_scope("i_tile");
        Tensor weight_T = builder::ndarray(
            {i.size, h.size}, p.dtype, Buffer::kSbuf, "gate_up_weight_T_tile");
        isa::dma_copy(weight_T, weight.Slice(0, h.offset, h.size)
                                    .Select(1, j)
                                    .Slice(1, i.offset, i.size)
                                    .Permute({1, 0}));
        isa::nc_matmul(psum, PartitionTile(grad_T.Select(1, j), i), weight_T,
                       /*accumulate=*/!first);
        first = false;
      }
    }
    AccumulateIntoTokenRows(out.hidden_states_grad, routing.token_ids, h.offset,
                            EvacuatePsum(psum, proto::FLOAT32, "hidden_grad"));
  }
}

// STEP 5, on this core's rows of H: dW_gate_up[e, h, j, i] += Σ_b x[b, h] ·
// grad_j[b, i], x the gathered hidden rows (zero for empty slots).
void BackwardBlock::ComputeGateUpProjectionWeightGrad(
    const Tensor& gate_up_grad) const {
  Scope scope("ComputeGateUpProjectionWeightGrad");
  const CoreShard& hc = shards.hidden;
  const int64_t b = slots();
  Tensor hidden =
      builder::ndarray({b, hc.size}, p.dtype, Buffer::kSbuf, "hidden_rows");
  GatherTokenRows(hidden, in.forward.hidden_states, routing.token_ids,
                  hc.offset);
  Tensor grad = builder::ndarray({b, 2, p.intermediate}, p.dtype, Buffer::kSbuf,
                                 "gate_up_grad");
  isa::dma_copy(grad, gate_up_grad.Slice(2, 0, b).Permute({2, 0, 1}));
  const Tensor weight_grad =
      ExpertSlice(out.gate_up_proj_weight_grad, routing.expert_idx);
  for (const Tile h : ShardTiles(hc, StationaryFree())) {
    for (int j = 0; j < 2; ++j) {
      for (const Tile i : TiledRange(p.intermediate, MovingFree())) {
        Scope tile_scope("tile");
        AccumulateMatmulIntoExpertRows(
            weight_grad.Slice(0, h.offset, h.size)
                .Select(1, j)
                .Slice(1, i.offset, i.size),
            hidden.Slice(1, h.offset - hc.offset, h.size),
            grad.Select(1, j).Slice(1, i.offset, i.size),
            "gate_up_weight_grad");
      }
    }
  }
}

// The backward's I/O: the forward's inputs, its checkpoints as it wrote
// them and the output gradient in; the gradient of every floating forward
// input out, named after it and of its shape.
std::vector<IoEntry<MoeParams>> BlockwiseMmBwdRows() {
  using P = MoeParams;
  std::vector<IoEntry<P>> rows = MoeInputRows();
  for (IoEntry<P> row : BwmmShardOnHOutputRows()) {
    if (row.name == "output") continue;
    row.role = IoRole::kInput;
    rows.push_back(std::move(row));
  }
  rows.push_back(
      InputRow<P>("output_hidden_states_grad", "[T, H]", [](const P& p) {
        return Shape{p.num_tokens, p.hidden};
      }));
  for (IoEntry<P> row : MoeInputRows()) {
    // The routing tables have no gradient.
    if (row.name == "token_position_to_id" || row.name == "block_to_expert") {
      continue;
    }
    row.name += "_grad";
    row.role = IoRole::kOutput;
    rows.push_back(std::move(row));
  }
  return rows;
}

void TraceRegistered(KernelIo& io, const MoeParams& p) {
  TraceBlockwiseMmBwd(io, p);
}

}  // namespace

void BlockwiseMmBwd(const BlockwiseMmBwdInputs& in,
                    const BlockwiseMmBwdOutputs& out, const MoeParams& p,
                    const BlockwiseMmBwdFences& fences) {
  const MoeCoreShards shards = CoreShardsOf(p, builder::program_id());
  ZeroInitGradients(out, shards, p);
  const int64_t width = std::min(p.block_size, Partitions());
  // The gate/up gradient of the current tile of slots: each core writes
  // its rows of I, both read all of it (STEP 4, STEP 5).
  Tensor gate_up_grad =
      builder::ndarray({2, p.intermediate, width}, p.dtype, Buffer::kSharedHbm,
                       "gate_up_grad_hbm");
  // m = act(g) · u of the current tile, this core's rows (STEP 2 → 3).
  Tensor gate_up_multiply = builder::ndarray(
      {p.intermediate, width}, p.dtype, Buffer::kHbm, "gate_up_multiply_hbm");
  for (int64_t n = 0; n < p.num_blocks; ++n) {
    for (const Tile slots : TiledRange(p.block_size, Partitions())) {
      Scope block("block");
      const BlockRouting routing = LoadBlockRouting(in.forward, p, n, slots);
      const BackwardBlock blk{{in, out, p, shards, routing}};
      Tensor down_output_grad = builder::ndarray(
          {slots.size, p.hidden}, p.dtype, Buffer::kSbuf, "down_output_grad");
      Tensor down_output_grad_T = builder::ndarray(
          PartitionTiledShape(p.hidden, Partitions(), {slots.size}), p.dtype,
          Buffer::kSbuf, "down_output_grad_T");
      blk.ComputeDownProjectionOutputGrad(down_output_grad, down_output_grad_T);
      blk.ComputeGateUpProjectionOutputGrad(down_output_grad_T,
                                            gate_up_multiply, gate_up_grad);
      blk.ComputeDownProjectionWeightGrad(gate_up_multiply, down_output_grad);
      if (p.bias) blk.ComputeDownProjectionBiasGrad(down_output_grad);
      if (fences.after_gate_up_grad) isa::core_barrier(gate_up_grad);
      blk.ComputeHiddenStatesGrad(gate_up_grad);
      blk.ComputeGateUpProjectionWeightGrad(gate_up_grad);
      if (fences.before_next_tile) isa::core_barrier(gate_up_grad);
    }
  }
}

void TraceBlockwiseMmBwd(KernelIo& io, const MoeParams& p,
                         const BlockwiseMmBwdFences& fences) {
  BlockwiseMmBwdInputs in;
  in.forward = DeclareMoeInputs(io);
  in.gate_up_proj_act_checkpoint_T = io.Input("gate_up_proj_act_checkpoint_T");
  in.down_proj_act_checkpoint = io.Input("down_proj_act_checkpoint");
  in.output_hidden_states_grad = io.Input("output_hidden_states_grad");
  BlockwiseMmBwdOutputs out;
  out.hidden_states_grad = io.Output("hidden_states_grad");
  out.expert_affinities_masked_grad =
      io.Output("expert_affinities_masked_grad");
  out.gate_up_proj_weight_grad = io.Output("gate_up_proj_weight_grad");
  out.down_proj_weight_grad = io.Output("down_proj_weight_grad");
  out.gate_up_proj_bias_grad = io.Output("gate_up_proj_bias_grad");  // bias
  out.down_proj_bias_grad = io.Output("down_proj_bias_grad");        // bias
  builder::jit("blockwise_mm_bwd", BlockwiseMmBwd)(in, out, p, fences);
}

HostOutputs MakeBlockwiseMmBwdInputs(const MoeParams& p, uint64_t seed,
                                     int64_t top_k) {
  NKI_ASSIGN_OR_RETURN(std::vector<HostArray> inputs,
                       MakeMoeInputs(p, seed, top_k));
  NKI_ASSIGN_OR_RETURN(std::vector<HostArray> forward,
                       BwmmShardOnHReference(p, inputs));
  for (HostArray& array : forward) {
    if (array.name == "output") continue;
    for (float& v : array.f32) v = RoundLikeDevice(p.dtype, v);
    inputs.push_back(std::move(array));
  }
  // A gradient independent of the routing: seeded apart from the rest.
  std::mt19937_64 rng(seed ^ 0x9e3779b97f4a7c15u);
  HostArray output_grad =
      ZeroHostArray("output_hidden_states_grad", {p.num_tokens, p.hidden});
  FillUniform(output_grad, -1.0, 1.0, p.dtype, rng);
  inputs.push_back(std::move(output_grad));
  return inputs;
}

const KernelSpec<MoeParams>& BlockwiseMmBwdSpec() {
  static const auto* const spec = new KernelSpec<MoeParams>{
      .name = "blockwise_mm_bwd",
      .summary =
          "blockwise MoE expert FFN backward: replays the forward's "
          "checkpoints (no forward matmul re-run), per-expert RMW "
          "weight gradients, two cores on disjoint slices fenced by "
          "core_barriers, no sendrecv",
      .params = MoeFields(),
      .validate = ValidateMoeParams,
      .io = BlockwiseMmBwdRows(),
      .world = [](const MoeParams&) { return TwoCoreWorld(); },
      .body = TraceRegistered,
      .reference = BlockwiseMmBwdReference,
      .tolerance = [](const MoeParams& p) { return ScaleTolerance(p.dtype); },
      .comparison = Comparison::kScale,
      .make_inputs =
          [](const MoeParams& p, uint64_t seed) {
            return MakeBlockwiseMmBwdInputs(p, seed);
          },
  };
  return *spec;
}

}  // namespace nkigraph::kernels
