#include "kernels/moe_common.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <random>
#include <utility>

#include "absl/strings/str_cat.h"
#include "kernels/dsl.h"
#include "kernels/epilogue.h"
#include "kernels/input_draws.h"
#include "util/dtype.h"
#include "util/status_macros.h"

namespace nkigraph::kernels {
namespace {

using builder::OobMode;

constexpr double kSwishAlpha = 1.702;
// token·E + e is computed in int32 on the device.
static_assert(kMoeMaxTokens * kMoeMaxExperts <=
              std::numeric_limits<int32_t>::max());
// Columns of the zero tile ZeroFill copies from.
constexpr int64_t kZeroTileCols = 2048;

double Sigmoid(double x) { return 1.0 / (1.0 + std::exp(-x)); }

}  // namespace

// --- Parameters -------------------------------------------------------------

std::vector<ParamField<MoeParams>> MoeFields() {
  using P = MoeParams;
  return {
      IntField<P>("num_tokens", &P::num_tokens, {1, kMoeMaxTokens},
                  "T: tokens (rows of hidden_states)")
          .Edges(AroundTiles({128})),
      IntField<P>("hidden", &P::hidden, {2, kMoeMaxHidden},
                  "H: hidden size (even: split across the two cores)")
          // Each core's half in tiles of 128.
          .Edges({254, 256, 258}),
      IntField<P>("num_experts", &P::num_experts, {1, kMoeMaxExperts},
                  "E: experts")
          .Edges({2}),
      IntField<P>("intermediate", &P::intermediate, {1, kMoeMaxIntermediate},
                  "I: intermediate size per rank (I_TP)")
          .Edges(AroundTiles({128, 512})),
      IntField<P>("block_size", &P::block_size, {1, kMoeMaxBlockSize},
                  "B: token slots per block")
          .Edges(AroundTiles({128})),
      IntField<P>("num_blocks", &P::num_blocks, {1, kMoeMaxBlocks}, "N: blocks")
          .Edges({2}),
      ChoiceField<P>(
          "activation", &P::activation,
          {{"silu", MoeActivation::kSilu}, {"swish", MoeActivation::kSwish}},
          "gate activation: silu, or swish = x*sigmoid(1.702x) "
          "(gelu_apprx_sigmoid)"),
      FlagField<P>(
          "bias", &P::bias,
          "1: gate_up_proj_bias and down_proj_bias are added; 0: none"),
      DTypeField<P>(),
  };
}

absl::Status ValidateMoeParams(const MoeParams& p) {
  if (p.hidden % 2 != 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "parameter 'hidden' is ", p.hidden,
        "; it must be even: H is split in two halves across the two cores"));
  }
  return absl::OkStatus();
}

ops::ActFunc MoeActFunc(MoeActivation activation) {
  return activation == MoeActivation::kSilu ? ops::ActFunc::kSilu
                                            : ops::ActFunc::kGeluApprxSigmoid;
}

ops::ActFunc MoeActDerivativeFunc(MoeActivation activation) {
  return activation == MoeActivation::kSilu ? ops::ActFunc::kSiluDx
                                            : ops::ActFunc::kGeluApprxSigmoidDx;
}

double MoeReferenceAct(MoeActivation activation, double x) {
  const double alpha = activation == MoeActivation::kSilu ? 1.0 : kSwishAlpha;
  return x * Sigmoid(alpha * x);
}

double MoeReferenceActDerivative(MoeActivation activation, double x) {
  const double alpha = activation == MoeActivation::kSilu ? 1.0 : kSwishAlpha;
  const double s = Sigmoid(alpha * x);
  return s + alpha * x * s * (1.0 - s);
}

// --- Device side
// --------------------------------------------------------------

std::vector<IoEntry<MoeParams>> MoeInputRows() {
  using P = MoeParams;
  return {
      InputRow<P>("hidden_states", "[T, H]",
                  [](const P& p) {
                    return Shape{p.num_tokens, p.hidden};
                  }),
      InputRow<P>("expert_affinities_masked", "[T*E, 1]",
                  [](const P& p) {
                    return Shape{p.num_tokens * p.num_experts, 1};
                  }),
      InputRow<P>("gate_up_proj_weight", "[E, H, 2, I]",
                  [](const P& p) {
                    return Shape{p.num_experts, p.hidden, 2, p.intermediate};
                  }),
      InputRow<P>("down_proj_weight", "[E, I, H]",
                  [](const P& p) {
                    return Shape{p.num_experts, p.intermediate, p.hidden};
                  }),
      InputRow<P>("token_position_to_id", "[N*B]",
                  [](const P& p) { return Shape{p.num_blocks * p.block_size}; })
          .Int32()
          .Values("[-1, T)",
                  [](const P& p) {
                    return ValueRange{-1, p.num_tokens - 1};
                  })
          .Note("-1: empty slot"),
      InputRow<P>("block_to_expert", "[N]",
                  [](const P& p) { return Shape{p.num_blocks}; })
          .Int32()
          .Values("[0, E)",
                  [](const P& p) {
                    return ValueRange{0, p.num_experts - 1};
                  }),
      InputRow<P>("gate_up_proj_bias", "[E, 2, I]",
                  [](const P& p) {
                    return Shape{p.num_experts, 2, p.intermediate};
                  })
          .When("bias=1", &P::bias),
      InputRow<P>("down_proj_bias", "[E, H]",
                  [](const P& p) {
                    return Shape{p.num_experts, p.hidden};
                  })
          .When("bias=1", &P::bias),
  };
}

MoeInputs DeclareMoeInputs(KernelIo& io) {
  MoeInputs in;
  in.hidden_states = io.Input("hidden_states");
  in.expert_affinities_masked = io.Input("expert_affinities_masked");
  in.gate_up_proj_weight = io.Input("gate_up_proj_weight");
  in.down_proj_weight = io.Input("down_proj_weight");
  in.token_position_to_id = io.Input("token_position_to_id");
  in.block_to_expert = io.Input("block_to_expert");
  in.gate_up_proj_bias = io.Input("gate_up_proj_bias");  // bias only
  in.down_proj_bias = io.Input("down_proj_bias");        // bias only
  return in;
}

MoeCoreShards CoreShardsOf(const MoeParams& p, int core) {
  return MoeCoreShards{ShardOf(p.hidden, core), ShardOf(p.intermediate, core)};
}

BlockRouting LoadBlockRouting(const MoeInputs& in, const MoeParams& p,
                              int64_t block, const Tile& slots) {
  const int64_t b = slots.size;
  BlockRouting r{block, slots, Tensor(), Tensor(), Tensor(), Tensor()};
  // expert_idx = block_to_expert[n]: the scalar offset of every expert-row
  // access of this block.
  r.expert_idx =
      builder::ndarray({1, 1}, proto::INT32, Buffer::kSbuf, "expert_idx");
  isa::dma_copy(r.expert_idx,
                in.block_to_expert.Slice(0, block, 1).Reshape({1, 1}));
  r.token_ids =
      builder::ndarray({b, 1}, proto::INT32, Buffer::kSbuf, "token_ids");
  isa::dma_copy(
      r.token_ids,
      in.token_position_to_id.Slice(0, block * p.block_size + slots.offset, b)
          .Reshape({b, 1}));
  // affinity_idx = token·E + expert, negative for an empty slot (−1).
  Tensor expert_col =
      builder::ndarray({b, 1}, proto::INT32, Buffer::kSbuf, "expert_col");
  isa::dma_copy(expert_col,
                in.block_to_expert.Slice(0, block, 1).Broadcast(0, b));
  r.affinity_idx =
      builder::ndarray({b, 1}, proto::INT32, Buffer::kSbuf, "affinity_idx");
  isa::tensor_scalar(r.affinity_idx, r.token_ids, isa::Alu::kMultiply,
                     static_cast<int>(p.num_experts),
                     {.op1 = isa::Alu::kAdd, .operand1 = expert_col});
  r.affinity =
      builder::ndarray({b, 1}, proto::FLOAT32, Buffer::kSbuf, "affinity");
  GatherTokenRows(r.affinity, in.expert_affinities_masked, r.affinity_idx, 0);
  return r;
}

void TransposeToPartitionTiles(const Tensor& dst_T, const Tensor& src,
                               const char* psum_name) {
  const int64_t b = src.dim(0);
  for (const Tile k : TiledRange(src.dim(1), Partitions())) {
    Scope chunk("h_chunk");
    Tensor psum =
        builder::ndarray({k.size, b}, src.dtype(), Buffer::kPsum, psum_name);
    isa::nc_transpose(psum, src.Slice(1, k.offset, k.size));
    EvacuatePsum(PartitionTile(dst_T, k), psum);
  }
}

Tensor TokenRows(const Tensor& table, const Tensor& token_ids, int64_t col,
                 int64_t size) {
  return table.Select(0, 0)
      .Slice(0, col, size)
      .Broadcast(0, token_ids.num_elements())
      .WithVectorOffset(token_ids, 0, OobMode::kSkip);
}

void GatherTokenRows(const Tensor& dst, const Tensor& table,
                     const Tensor& token_ids, int64_t col) {
  // Skipped rows keep what dst held: zero them first.
  isa::memset(dst, 0.0f);
  isa::dma_copy(dst, TokenRows(table, token_ids, col, dst.dim(1)));
}

void AccumulateIntoTokenRows(const Tensor& table, const Tensor& token_ids,
                             int64_t col, const Tensor& contribution) {
  Scope scope("accumulate_token_rows");
  const int64_t b = contribution.dim(0), cols = contribution.dim(1);
  const Tensor rows = TokenRows(table, token_ids, col, cols);
  Tensor existing = builder::ndarray({b, cols}, table.dtype(), Buffer::kSbuf,
                                     "existing_rows");
  GatherTokenRows(existing, table, token_ids, col);
  Tensor sum =
      builder::ndarray({b, cols}, table.dtype(), Buffer::kSbuf, "summed_rows");
  isa::tensor_tensor(sum, existing, contribution, isa::Alu::kAdd);
  isa::dma_copy(rows, sum);
}

Tensor ExpertSlice(const Tensor& weight, const Tensor& expert_idx) {
  return weight.Select(0, 0).WithScalarOffset(expert_idx, 0);
}

void AccumulateIntoExpertRows(const Tensor& grad_rows, const Tensor& result) {
  Scope scope("accumulate_expert_rows");
  Tensor existing_weight_grad = builder::ndarray(
      result.shape(), grad_rows.dtype(), Buffer::kSbuf, "existing_weight_grad");
  isa::dma_copy(existing_weight_grad, grad_rows);
  isa::tensor_tensor(result, existing_weight_grad, result, isa::Alu::kAdd);
  isa::dma_copy(grad_rows, result);
}

void AccumulateMatmulIntoExpertRows(const Tensor& rows,
                                    const Tensor& stationary,
                                    const Tensor& moving,
                                    absl::string_view name) {
  Tensor psum =
      builder::ndarray({stationary.dim(1), moving.dim(1)}, proto::FLOAT32,
                       Buffer::kPsum, absl::StrCat(name, "_psum"));
  isa::nc_matmul(psum, stationary, moving);
  AccumulateIntoExpertRows(rows, EvacuatePsum(psum, proto::FLOAT32, name));
}

void ZeroFill(const Tensor& view) {
  if (view.rank() > 2) {
    for (int64_t i = 0; i < view.dim(0); ++i) ZeroFill(view.Select(0, i));
    return;
  }
  const Tensor grid =
      view.rank() == 2 ? view : view.Reshape({1, view.num_elements()});
  Scope scope("zero_fill");
  const int64_t rows = std::min(grid.dim(0), Partitions());
  const int64_t cols = std::min(grid.dim(1), kZeroTileCols);
  Tensor zeros =
      builder::ndarray({rows, cols}, view.dtype(), Buffer::kSbuf, "zeros");
  isa::memset(zeros, 0.0f);
  for (const Tile r : TiledRange(grid.dim(0), Partitions())) {
    for (const Tile c : TiledRange(grid.dim(1), kZeroTileCols)) {
      isa::dma_copy(grid.Slice(0, r.offset, r.size).Slice(1, c.offset, c.size),
                    zeros.Slice(0, 0, r.size).Slice(1, 0, c.size));
    }
  }
}

// --- Host side (references)
// ---------------------------------------------------

int64_t MoeHostInputs::Token(const MoeParams& p, int64_t n, int64_t b) const {
  const int64_t t = token_position_to_id->i32[n * p.block_size + b];
  return t >= 0 && t < p.num_tokens ? t : -1;
}

absl::StatusOr<MoeHostInputs> MoeHostInputsOf(const HostIo& io,
                                              const MoeParams& p) {
  const int64_t E = p.num_experts, N = p.num_blocks;
  const MoeHostInputs in{
      .hidden_states = &io.In("hidden_states"),
      .expert_affinities_masked = &io.In("expert_affinities_masked"),
      .gate_up_proj_weight = &io.In("gate_up_proj_weight"),
      .down_proj_weight = &io.In("down_proj_weight"),
      .token_position_to_id = &io.In("token_position_to_id"),
      .block_to_expert = &io.In("block_to_expert"),
      .gate_up_proj_bias = io.Optional("gate_up_proj_bias"),
      .down_proj_bias = io.Optional("down_proj_bias"),
  };
  for (int64_t n = 0; n < N; ++n) {
    const int64_t e = in.block_to_expert->i32[n];
    if (e < 0 || e >= E) {
      return absl::InvalidArgumentError(absl::StrCat(
          "block_to_expert[", n, "] is ", e, "; it must be in [0, ", E, ")"));
    }
  }
  return in;
}

namespace {

// Portable draws (std distributions differ between libraries).
int64_t Below(std::mt19937_64& rng, int64_t n) {
  return static_cast<int64_t>(rng() % static_cast<uint64_t>(n));
}

// MakeMoeInputs' random routing (no affinities): each block's expert is
// random, each expert hands out its tokens in a random order, each once,
// and about a quarter of the slots stay empty.
MoeRouting RandomRouting(const MoeParams& p, std::mt19937_64& rng) {
  const int64_t T = p.num_tokens, E = p.num_experts, B = p.block_size,
                N = p.num_blocks;
  MoeRouting routing;
  std::vector<std::vector<int32_t>> order(E);
  std::vector<size_t> next(E, 0);
  for (int64_t n = 0; n < N; ++n) {
    const int64_t e = Below(rng, E);
    routing.block_to_expert.push_back(static_cast<int32_t>(e));
    if (order[e].empty()) {
      for (int64_t t = 0; t < T; ++t)
        order[e].push_back(static_cast<int32_t>(t));
      for (int64_t k = T - 1; k > 0; --k)
        std::swap(order[e][k], order[e][Below(rng, k + 1)]);
    }
    for (int64_t b = 0; b < B; ++b) {
      int32_t token = -1;
      if (Below(rng, 4) != 0 && next[e] < order[e].size())
        token = order[e][next[e]++];
      routing.token_position_to_id.push_back(token);
    }
  }
  return routing;
}

// The inputs around `routing`, the values drawn from `rng`; affinities too
// when the routing has none.
std::vector<HostArray> InputsWithRouting(const MoeParams& p,
                                         std::mt19937_64& rng,
                                         MoeRouting routing) {
  std::vector<IoDecl> decls;
  for (const IoEntry<MoeParams>& row : MoeInputRows()) {
    decls.push_back(row.Resolve(p));
  }
  const HostIo io(std::move(decls), /*num_ranks=*/1);
  const InputDraws draw(io, p.dtype, rng);
  const auto ints = [&](const char* name, std::vector<int32_t> values) {
    HostArray array = io.Zeros(name);
    array.i32 = std::move(values);
    return array;
  };
  std::vector<HostArray> inputs;
  inputs.push_back(draw.Uniform("hidden_states", -1.0, 1.0));
  if (routing.expert_affinities_masked.empty()) {
    inputs.push_back(draw.Uniform("expert_affinities_masked", 0.0, 1.0));
  } else {
    HostArray affinities = io.Zeros("expert_affinities_masked");
    affinities.f32 = std::move(routing.expert_affinities_masked);
    for (float& v : affinities.f32) v = RoundLikeDevice(p.dtype, v);
    inputs.push_back(std::move(affinities));
  }
  inputs.push_back(draw.FanInWeights("gate_up_proj_weight", p.hidden));
  inputs.push_back(draw.FanInWeights("down_proj_weight", p.intermediate));
  inputs.push_back(
      ints("token_position_to_id", std::move(routing.token_position_to_id)));
  inputs.push_back(ints("block_to_expert", std::move(routing.block_to_expert)));
  if (p.bias) {
    inputs.push_back(draw.Uniform("gate_up_proj_bias", -0.5, 0.5));
    inputs.push_back(draw.Uniform("down_proj_bias", -0.5, 0.5));
  }
  return inputs;
}

}  // namespace

std::vector<HostArray> MakeMoeInputs(const MoeParams& p, uint64_t seed) {
  std::mt19937_64 rng(seed);
  MoeRouting routing = RandomRouting(p, rng);
  return InputsWithRouting(p, rng, std::move(routing));
}

absl::StatusOr<MoeRouting> MakeTopKRouting(const MoeParams& p, int64_t k,
                                           uint64_t seed) {
  const int64_t T = p.num_tokens, E = p.num_experts, B = p.block_size,
                N = p.num_blocks;
  if (k < 1 || k > E) {
    return absl::InvalidArgumentError(absl::StrCat(
        "top-k routing: k is ", k, "; it must be between 1 and E = ", E));
  }
  std::mt19937_64 rng(seed);
  MoeRouting routing;
  routing.expert_affinities_masked.assign(T * E, 0.0f);
  std::vector<std::vector<int32_t>> tokens_of(E);
  std::vector<double> logits(E);
  std::vector<int64_t> experts(E);
  for (int64_t t = 0; t < T; ++t) {
    for (double& l : logits) l = Uniform(rng, -2.0, 2.0);
    for (int64_t e = 0; e < E; ++e) experts[e] = e;
    // The k largest logits, ties to the lower expert index.
    std::partial_sort(experts.begin(), experts.begin() + k, experts.end(),
                      [&](int64_t a, int64_t b) {
                        return logits[a] > logits[b] ||
                               (logits[a] == logits[b] && a < b);
                      });
    const double top = logits[experts[0]];
    double sum = 0;
    for (int64_t j = 0; j < k; ++j) sum += std::exp(logits[experts[j]] - top);
    for (int64_t j = 0; j < k; ++j) {
      const int64_t e = experts[j];
      routing.expert_affinities_masked[t * E + e] =
          static_cast<float>(std::exp(logits[e] - top) / sum);
      tokens_of[e].push_back(static_cast<int32_t>(t));
    }
  }
  int64_t needed = 0;
  for (const std::vector<int32_t>& tokens : tokens_of) {
    needed += (static_cast<int64_t>(tokens.size()) + B - 1) / B;
  }
  if (needed > N) {
    return absl::InvalidArgumentError(
        absl::StrCat("top-", k, " routing of ", T, " tokens needs ", needed,
                     " blocks of ", B, " slots; num_blocks is ", N));
  }
  routing.token_position_to_id.reserve(N * B);
  for (int64_t e = 0; e < E; ++e) {
    const std::vector<int32_t>& tokens = tokens_of[e];
    for (size_t i = 0; i < tokens.size(); i += B) {
      routing.block_to_expert.push_back(static_cast<int32_t>(e));
      for (int64_t b = 0; b < B; ++b) {
        const size_t slot = i + static_cast<size_t>(b);
        routing.token_position_to_id.push_back(
            slot < tokens.size() ? tokens[slot] : -1);
      }
    }
  }
  routing.block_to_expert.resize(N, static_cast<int32_t>(E - 1));
  routing.token_position_to_id.resize(N * B, -1);
  return routing;
}

HostOutputs MakeMoeInputs(const MoeParams& p, uint64_t seed, int64_t top_k) {
  if (top_k == 0) return MakeMoeInputs(p, seed);
  NKI_ASSIGN_OR_RETURN(MoeRouting routing, MakeTopKRouting(p, top_k, seed));
  // The values apart from the routing's draws.
  std::mt19937_64 rng(seed ^ 0x6a09e667f3bcc909u);
  return InputsWithRouting(p, rng, std::move(routing));
}

}  // namespace nkigraph::kernels
