// The MoE family (§1): bwmm_shard_on_H (the H-sharded forward) and
// blockwise_mm_bwd (its backward). Interpreted graphs against the
// references, and the mechanisms the contract says the graphs show.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <map>
#include <random>
#include <set>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "interp/interpreter.h"
#include "kernels/blockwise_mm_bwd.h"
#include "kernels/bwmm_shard_on_h.h"
#include "kernels/compare.h"
#include "kernels/moe_common.h"
#include "kernels/registry.h"
#include "ops/instr_facts.h"
#include "ops/op_def.h"
#include "proto/nkigraph.pb.h"
#include "tests/test_util.h"
#include "util/dtype.h"
#include "util/graph_io.h"

namespace nkigraph::kernels {
namespace {

using nkigraph::testing::IntAttr;
using nkigraph::testing::OperandOf;
using nkigraph::testing::OperandTensor;
using nkigraph::testing::StrAttr;
using nkigraph::testing::TensorOf;
using ::testing::HasSubstr;
using Settings = std::vector<std::pair<std::string, std::string>>;
using Outputs = std::map<std::string, HostArray>;

constexpr char kForward[] = "bwmm_shard_on_H";
constexpr char kBackward[] = "blockwise_mm_bwd";

// --- Parameters, inputs, runs ------------------------------------------------

MoeParams Params(int64_t T, int64_t H, int64_t E, int64_t I, int64_t B,
                 int64_t N, MoeActivation activation, bool bias,
                 proto::DType dtype) {
  MoeParams p;
  p.num_tokens = T;
  p.hidden = H;
  p.num_experts = E;
  p.intermediate = I;
  p.block_size = B;
  p.num_blocks = N;
  p.activation = activation;
  p.bias = bias;
  p.dtype = dtype;
  return p;
}

Settings SettingsOf(const MoeParams& p) {
  return {
      {"num_tokens", absl::StrCat(p.num_tokens)},
      {"hidden", absl::StrCat(p.hidden)},
      {"num_experts", absl::StrCat(p.num_experts)},
      {"intermediate", absl::StrCat(p.intermediate)},
      {"block_size", absl::StrCat(p.block_size)},
      {"num_blocks", absl::StrCat(p.num_blocks)},
      {"activation", p.activation == MoeActivation::kSilu ? "silu" : "swish"},
      {"bias", p.bias ? "1" : "0"},
      {"dtype", p.dtype == proto::FLOAT32 ? "float32" : "bfloat16"}};
}

std::string Describe(const MoeParams& p) {
  std::string s;
  for (const auto& [k, v] : SettingsOf(p)) absl::StrAppend(&s, k, "=", v, " ");
  return s;
}

double Tolerance(const MoeParams& p) {
  return p.dtype == proto::FLOAT32 ? 1e-4 : 3e-2;
}

absl::StatusOr<proto::Graph> TraceKernel(const std::string& name,
                                         const MoeParams& p) {
  return KernelRegistry::Global().Trace(name, SettingsOf(p));
}

HostArray& Find(std::vector<HostArray>& arrays, const std::string& name) {
  for (HostArray& a : arrays) {
    if (a.name == name) return a;
  }
  ADD_FAILURE() << "no array " << name;
  static HostArray none;
  return none;
}

Outputs ByName(std::vector<HostArray> arrays) {
  Outputs out;
  for (HostArray& a : arrays) out[a.name] = std::move(a);
  return out;
}

// Replaces the routing of MakeMoeInputs' inputs.
void SetRouting(std::vector<HostArray>& inputs,
                const std::vector<int32_t>& block_to_expert,
                const std::vector<int32_t>& token_position_to_id) {
  Find(inputs, "block_to_expert").i32 = block_to_expert;
  Find(inputs, "token_position_to_id").i32 = token_position_to_id;
}

// The backward's inputs for given forward inputs: the reference forward's
// checkpoints (rounded to dtype) and an output gradient in [−1, 1).
std::vector<HostArray> BackwardInputsFor(const MoeParams& p,
                                         std::vector<HostArray> inputs,
                                         uint64_t seed) {
  absl::StatusOr<std::vector<HostArray>> forward =
      BwmmShardOnHReference(p, inputs);
  EXPECT_TRUE(forward.ok()) << forward.status();
  if (!forward.ok()) return inputs;
  for (HostArray& a : *forward) {
    if (a.name == "output") continue;
    for (float& v : a.f32) v = RoundTo(p.dtype, v, 240.0f);
    inputs.push_back(std::move(a));
  }
  std::mt19937 rng(static_cast<uint32_t>(seed));
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  HostArray grad =
      ZeroHostArray("output_hidden_states_grad", {p.num_tokens, p.hidden});
  for (float& v : grad.f32) v = RoundTo(p.dtype, dist(rng), 240.0f);
  inputs.push_back(std::move(grad));
  return inputs;
}

// Every output of `graph` run on `inputs` (race detection is on: the
// worlds here have two cores).
Outputs RunOk(const proto::Graph& graph, const std::vector<HostArray>& inputs) {
  EXPECT_EQ(graph.world().num_cores(), 2u);
  absl::StatusOr<Outputs> outputs = testing::RunGraph(graph, inputs);
  EXPECT_TRUE(outputs.ok()) << outputs.status();
  return outputs.ok() ? *std::move(outputs) : Outputs();
}

// got ≈ want within tol relative to want's scale (its largest magnitude),
// as the family's kernels declare (Comparison::kScale) and verify compares.
void ExpectClose(const HostArray& got, const HostArray& want, double tol) {
  absl::StatusOr<OutputComparison> c =
      CompareOutput(got, want, Comparison::kScale, tol);
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->failures, 0)
      << want.name << ": " << c->failures << " of " << want.num_elements()
      << " elements off by more than " << tol << " x scale " << c->scale
      << " (max error " << c->max_abs_error << "); first at "
      << c->first_failure << ": got " << c->first_got << ", want "
      << c->first_want;
}

void ExpectAllClose(const Outputs& got, const std::vector<HostArray>& want,
                    double tol) {
  ASSERT_EQ(got.size(), want.size());
  for (const HostArray& w : want) {
    auto it = got.find(w.name);
    ASSERT_NE(it, got.end()) << "missing output " << w.name;
    ExpectClose(it->second, w, tol);
  }
}

// Runs the registered forward on MakeMoeInputs(p, seed) (or `inputs`) and
// compares with the reference.
void CheckForwardAgainstReference(const MoeParams& p,
                                  std::vector<HostArray> inputs) {
  SCOPED_TRACE(Describe(p));
  absl::StatusOr<proto::Graph> graph = TraceKernel(kForward, p);
  ASSERT_TRUE(graph.ok()) << graph.status();
  const Outputs got = RunOk(*graph, inputs);
  absl::StatusOr<std::vector<HostArray>> want =
      BwmmShardOnHReference(p, inputs);
  ASSERT_TRUE(want.ok()) << want.status();
  ExpectAllClose(got, *want, Tolerance(p));
}

void CheckBackwardAgainstReference(const MoeParams& p,
                                   const std::vector<HostArray>& inputs) {
  SCOPED_TRACE(Describe(p));
  absl::StatusOr<proto::Graph> graph = TraceKernel(kBackward, p);
  ASSERT_TRUE(graph.ok()) << graph.status();
  const Outputs got = RunOk(*graph, inputs);
  absl::StatusOr<std::vector<HostArray>> want =
      BlockwiseMmBwdReference(p, inputs);
  ASSERT_TRUE(want.ok()) << want.status();
  ExpectAllClose(got, *want, Tolerance(p));
}

// Small shapes with a tail on every dim: H (per core half), I and B not
// multiples of 128, one case each with B > 128 and H > 128.
std::vector<MoeParams> TailCases(proto::DType dtype) {
  return {
      Params(/*T=*/37, /*H=*/262, /*E=*/3, /*I=*/136, /*B=*/24, /*N=*/6,
             MoeActivation::kSilu, /*bias=*/true, dtype),
      Params(/*T=*/150, /*H=*/60, /*E=*/2, /*I=*/40, /*B=*/130, /*N=*/3,
             MoeActivation::kSwish, /*bias=*/false, dtype),
      Params(/*T=*/9, /*H=*/6, /*E=*/4, /*I=*/3, /*B=*/5, /*N=*/8,
             MoeActivation::kSwish, /*bias=*/true, dtype),
  };
}

// --- Graph inspection
// -----------------------------------------------------------

// Whether `instr` writes tensor `id` (through an operand whose role is not
// read-only).
bool Writes(const proto::Instruction& instr, uint32_t id) {
  for (int i = 0; i < instr.operands_size(); ++i) {
    const ops::OperandRole* role = ops::RoleOf(instr, i);
    if (instr.operands(i).tensor_id() == id && role != nullptr &&
        role->access != ops::Access::kRead) {
      return true;
    }
  }
  return false;
}

const std::string& ScopeOf(const proto::Graph& g,
                           const proto::Instruction& instr) {
  return g.scopes(static_cast<int>(instr.scope()));
}

std::vector<const proto::Instruction*> Instrs(const proto::Stream& stream,
                                              proto::Opcode opcode) {
  std::vector<const proto::Instruction*> found;
  for (const proto::Instruction& instr : stream.instructions()) {
    if (instr.opcode() == opcode) found.push_back(&instr);
  }
  return found;
}

// Waits for or talks to another program: a sync op or a collective-engine
// one.
bool IsCommunication(const proto::Instruction& instr) {
  return ops::FindOp(instr.opcode())->sync != ops::SyncKind::kNone ||
         ops::EngineOf(instr) == ops::Engine::kCollective;
}

// The last-dim columns a 2-or-more-D HBM access pattern touches, as
// [first, last] within a row of `row` elements.
std::pair<int64_t, int64_t> ColumnExtent(const proto::AccessPattern& ap,
                                         int64_t row) {
  const int n = ap.pattern_size();
  const int64_t stride = ap.pattern(n - 2), count = ap.pattern(n - 1);
  const int64_t first = ap.offset() % row;
  return {first, first + stride * (count - 1)};
}

// Which kernel inputs each tensor's contents derive from (dynamic-offset
// indices not counted), following every instruction's reads into its
// writes over both streams until nothing changes.
std::map<uint32_t, std::set<std::string>> Provenance(const proto::Graph& g) {
  std::map<uint32_t, std::set<std::string>> from;
  for (const proto::Tensor& t : g.tensors()) {
    if (t.role() == proto::ROLE_INPUT || t.role() == proto::ROLE_INPUT_OUTPUT) {
      from[t.id()].insert(t.name());
    }
  }
  for (bool changed = true; changed;) {
    changed = false;
    for (const proto::Stream& stream : g.streams()) {
      for (const proto::Instruction& instr : stream.instructions()) {
        std::set<std::string> read;
        std::vector<uint32_t> written;
        for (int i = 0; i < instr.operands_size(); ++i) {
          const uint32_t id = instr.operands(i).tensor_id();
          if (id == 0) continue;
          if (ops::ReadsOperand(instr, i)) {
            read.insert(from[id].begin(), from[id].end());
          }
          if (ops::WritesOperand(instr, i)) written.push_back(id);
        }
        for (uint32_t id : written) {
          const size_t before = from[id].size();
          from[id].insert(read.begin(), read.end());
          changed |= from[id].size() != before;
        }
      }
    }
  }
  return from;
}

struct ProjectionMatmuls {
  int gate_up = 0;  // hidden_states x gate_up_proj_weight
  int down = 0;     // (the gate/up checkpoint or its inputs) x down_proj_weight
  int total = 0;
};

// Classifies every nc_matmul by where its two operands come from.
ProjectionMatmuls ClassifyMatmuls(const proto::Graph& g) {
  const auto from = Provenance(g);
  const auto has = [&](uint32_t id, const char* name) {
    auto it = from.find(id);
    return it != from.end() && it->second.count(name) > 0;
  };
  const auto gate_up_input = [&](uint32_t id) {
    return has(id, "gate_up_proj_act_checkpoint_T") ||
           (has(id, "hidden_states") && has(id, "gate_up_proj_weight"));
  };
  ProjectionMatmuls m;
  for (const proto::Stream& stream : g.streams()) {
    for (const proto::Instruction* mm : Instrs(stream, proto::NC_MATMUL)) {
      const uint32_t a = OperandOf(*mm, "stationary").tensor_id();
      const uint32_t b = OperandOf(*mm, "moving").tensor_id();
      ++m.total;
      if ((has(a, "hidden_states") && has(b, "gate_up_proj_weight")) ||
          (has(b, "hidden_states") && has(a, "gate_up_proj_weight"))) {
        ++m.gate_up;
      }
      if ((gate_up_input(a) && has(b, "down_proj_weight")) ||
          (gate_up_input(b) && has(a, "down_proj_weight"))) {
        ++m.down;
      }
    }
  }
  return m;
}

int64_t CeilDiv(int64_t a, int64_t b) { return (a + b - 1) / b; }

// =============================================================================
// bwmm_shard_on_H
// =============================================================================

TEST(BwmmShardOnHTest, MatchesReferenceFloat32WithTails) {
  uint64_t seed = 11;
  for (const MoeParams& p : TailCases(proto::FLOAT32)) {
    CheckForwardAgainstReference(p, MakeMoeInputs(p, seed++));
  }
}

TEST(BwmmShardOnHTest, MatchesReferenceBfloat16WithTails) {
  uint64_t seed = 21;
  for (MoeParams p : TailCases(proto::BFLOAT16)) {
    // The other activation and bias setting than the float32 cases.
    p.activation = p.activation == MoeActivation::kSilu ? MoeActivation::kSwish
                                                        : MoeActivation::kSilu;
    p.bias = !p.bias;
    CheckForwardAgainstReference(p, MakeMoeInputs(p, seed++));
  }
}

// Tokens routed to two experts through blocks of each (several blocks per
// expert): every block's contribution lands in the token's row by
// read-modify-write. Tokens never routed get exact zero rows; empty slots
// (−1) are skipped by the DMA.
TEST(BwmmShardOnHTest, AccumulatesOverBlocksAndLeavesUnroutedRowsZero) {
  const MoeParams p =
      Params(/*T=*/10, /*H=*/8, /*E=*/2, /*I=*/5, /*B=*/4,
             /*N=*/4, MoeActivation::kSilu, true, proto::FLOAT32);
  std::vector<HostArray> inputs = MakeMoeInputs(p, 5);
  // Tokens 0..5 on both experts; 6..9 never routed.
  SetRouting(inputs, {0, 1, 0, 1},
             {0, -1, 2, 4, 1, 3, -1, 5, 1, 3, -1, 5, 0, -1, 2, 4});
  // Rows of unrouted tokens hold large values: a stray read would show.
  HostArray& hidden = Find(inputs, "hidden_states");
  for (int64_t k = 6 * p.hidden; k < 10 * p.hidden; ++k) hidden.f32[k] = 1e6f;
  CheckForwardAgainstReference(p, inputs);

  absl::StatusOr<proto::Graph> graph = TraceKernel(kForward, p);
  ASSERT_TRUE(graph.ok()) << graph.status();
  const Outputs got = RunOk(*graph, inputs);
  const HostArray& output = got.at("output");
  for (int64_t t = 0; t < p.num_tokens; ++t) {
    double norm = 0.0;
    for (int64_t h = 0; h < p.hidden; ++h) {
      norm += std::fabs(output.f32[t * p.hidden + h]);
    }
    if (t >= 6) {
      EXPECT_EQ(norm, 0.0) << "token " << t << " was never routed";
    } else {
      EXPECT_GT(norm, 0.0) << "token " << t;
    }
  }
  // Each routed token's row is the sum of its two experts' weighted y.
  const HostArray& y = got.at("down_proj_act_checkpoint");
  const HostArray& aff = Find(inputs, "expert_affinities_masked");
  const HostArray& routing = Find(inputs, "token_position_to_id");
  std::vector<double> expect(p.num_tokens * p.hidden, 0.0);
  for (int64_t n = 0; n < p.num_blocks; ++n) {
    const int64_t e = n % 2;
    for (int64_t b = 0; b < p.block_size; ++b) {
      const int32_t t = routing.i32[n * p.block_size + b];
      if (t < 0) continue;
      for (int64_t h = 0; h < p.hidden; ++h) {
        expect[t * p.hidden + h] +=
            aff.f32[t * p.num_experts + e] *
            y.f32[(n * p.block_size + b) * p.hidden + h];
      }
    }
  }
  for (int64_t k = 0; k < p.num_tokens * p.hidden; ++k) {
    EXPECT_NEAR(output.f32[k], expect[k], 1e-5) << "element " << k;
  }
}

TEST(BwmmShardOnHTest, AllSlotsOfABlockEmpty) {
  const MoeParams p =
      Params(6, 4, 2, 3, 3, 2, MoeActivation::kSwish, false, proto::FLOAT32);
  std::vector<HostArray> inputs = MakeMoeInputs(p, 8);
  SetRouting(inputs, {1, 0}, {-1, -1, -1, 2, -1, 5});
  CheckForwardAgainstReference(p, inputs);
}

TEST(BwmmShardOnHTest, GateUpAllReduceIsOneSendrecvSitePerExchangeThenAdd) {
  const MoeParams p = Params(20, 262, 2, 136, 130, 2, MoeActivation::kSilu,
                             true, proto::BFLOAT16);
  absl::StatusOr<proto::Graph> graph = TraceKernel(kForward, p);
  ASSERT_TRUE(graph.ok()) << graph.status();
  // One exchange per block, tile of slots and i tile.
  const int64_t exchanges =
      p.num_blocks * CeilDiv(p.block_size, 128) * CeilDiv(p.intermediate, 128);
  std::set<std::pair<uint32_t, uint32_t>> sites;
  for (const proto::Stream& stream : graph->streams()) {
    const int core = static_cast<int>(stream.core());
    const auto sendrecvs = Instrs(stream, proto::SENDRECV);
    EXPECT_EQ(static_cast<int64_t>(sendrecvs.size()), exchanges);
    for (int k = 0; k < stream.instructions_size(); ++k) {
      const proto::Instruction& sr = stream.instructions(k);
      if (sr.opcode() != proto::SENDRECV) continue;
      sites.insert({sr.file(), sr.line()});
      EXPECT_THAT(ScopeOf(*graph, sr),
                  HasSubstr("ComputeGateAndUpProjectionsShard"));
      EXPECT_EQ(IntAttr(sr, "send_to"), 1 - core);
      EXPECT_EQ(IntAttr(sr, "recv_from"), 1 - core);
      // The next tensor_tensor adds what was received to what was sent.
      const uint32_t received = OperandOf(sr, "dst").tensor_id();
      const uint32_t partial = OperandOf(sr, "src").tensor_id();
      const proto::Instruction* add = nullptr;
      for (int j = k + 1; j < stream.instructions_size() && add == nullptr;
           ++j) {
        if (stream.instructions(j).opcode() == proto::TENSOR_TENSOR) {
          add = &stream.instructions(j);
        }
      }
      ASSERT_NE(add, nullptr);
      EXPECT_EQ(StrAttr(*add, "op"), "add");
      const std::set<uint32_t> reads = {OperandOf(*add, "data1").tensor_id(),
                                        OperandOf(*add, "data2").tensor_id()};
      EXPECT_EQ(reads, (std::set<uint32_t>{received, partial}));
      EXPECT_EQ(OperandTensor(*graph, sr, "src").dtype(), proto::FLOAT32);
    }
  }
  // Exactly one call site in the kernel source.
  EXPECT_EQ(sites.size(), 1u);
}

TEST(BwmmShardOnHTest, DownProjectionWritesOwnHColumnsWithoutCollectives) {
  const MoeParams p =
      Params(20, 262, 2, 40, 24, 3, MoeActivation::kSilu, true, proto::FLOAT32);
  absl::StatusOr<proto::Graph> graph = TraceKernel(kForward, p);
  ASSERT_TRUE(graph.ok()) << graph.status();
  const int64_t half = p.hidden / 2;
  for (const proto::Stream& stream : graph->streams()) {
    const int core = static_cast<int>(stream.core());
    int in_down = 0, hbm_writes = 0;
    for (const proto::Instruction& instr : stream.instructions()) {
      if (ScopeOf(*graph, instr).find("ComputeBlockOutputShard") ==
          std::string::npos) {
        continue;
      }
      ++in_down;
      EXPECT_FALSE(IsCommunication(instr))
          << "instruction #" << instr.id() << " in " << ScopeOf(*graph, instr);
      if (instr.opcode() != proto::DMA_COPY) continue;
      const proto::Tensor& dst = OperandTensor(*graph, instr, "dst");
      if (dst.space() != proto::SHARED_HBM) continue;
      ++hbm_writes;
      const auto [first, last] =
          ColumnExtent(OperandOf(instr, "dst"), p.hidden);
      EXPECT_GE(first, core * half) << dst.name();
      EXPECT_LT(last, (core + 1) * half) << dst.name();
    }
    EXPECT_GT(in_down, 0);
    // Per block: the checkpoint store and the output scatter.
    EXPECT_EQ(hbm_writes, 2 * p.num_blocks);
  }
}

TEST(BwmmShardOnHTest, EveryMatmulResultIsEvacuatedToSbufBeforeAnyDma) {
  const MoeParams p = Params(20, 262, 2, 136, 130, 2, MoeActivation::kSwish,
                             true, proto::BFLOAT16);
  absl::StatusOr<proto::Graph> graph = TraceKernel(kForward, p);
  ASSERT_TRUE(graph.ok()) << graph.status();
  int results = 0;
  for (const proto::Stream& stream : graph->streams()) {
    std::set<uint32_t> psum_results;
    for (const proto::Instruction& instr : stream.instructions()) {
      if (instr.opcode() == proto::DMA_COPY) {
        for (const char* role : {"dst", "src"}) {
          EXPECT_NE(OperandTensor(*graph, instr, role).space(), proto::PSUM);
        }
      }
      if (instr.opcode() == proto::NC_MATMUL ||
          instr.opcode() == proto::NC_TRANSPOSE) {
        EXPECT_EQ(OperandTensor(*graph, instr, "dst").space(), proto::PSUM);
        psum_results.insert(OperandOf(instr, "dst").tensor_id());
      }
    }
    results += static_cast<int>(psum_results.size());
    std::set<uint32_t> evacuated;
    for (const proto::Instruction& instr : stream.instructions()) {
      if (instr.opcode() == proto::NC_MATMUL) continue;
      for (int i = 0; i < instr.operands_size(); ++i) {
        const uint32_t id = instr.operands(i).tensor_id();
        if (ops::RoleOf(instr, i)->access != ops::Access::kRead ||
            psum_results.count(id) == 0) {
          continue;
        }
        EXPECT_TRUE(instr.opcode() == proto::TENSOR_COPY ||
                    instr.opcode() == proto::ACTIVATION)
            << "psum result read by opcode " << instr.opcode();
        EXPECT_EQ(OperandTensor(*graph, instr, "dst").space(), proto::SBUF);
        evacuated.insert(id);
      }
    }
    EXPECT_EQ(evacuated, psum_results);
  }
  EXPECT_GT(results, 0);
}

TEST(BwmmShardOnHTest, EveryMatmulIsAForwardProjection) {
  // The check the backward relies on must recognise the forward's matmuls.
  const MoeParams p = Params(20, 262, 2, 136, 24, 2, MoeActivation::kSilu, true,
                             proto::FLOAT32);
  absl::StatusOr<proto::Graph> graph = TraceKernel(kForward, p);
  ASSERT_TRUE(graph.ok()) << graph.status();
  const ProjectionMatmuls m = ClassifyMatmuls(*graph);
  const int64_t gate_up = 2 * p.num_blocks * 2 * CeilDiv(p.intermediate, 128) *
                          CeilDiv(p.hidden / 2, 128);
  const int64_t down = 2 * p.num_blocks * CeilDiv(p.hidden / 2, 512) *
                       CeilDiv(p.intermediate, 128);
  EXPECT_EQ(m.gate_up, gate_up);
  EXPECT_EQ(m.down, down);
  EXPECT_EQ(m.total, gate_up + down);
}

TEST(BwmmShardOnHTest, InvalidParametersAreRefusedNamingTheParameter) {
  for (const auto& [name, value, expect] :
       std::vector<std::tuple<std::string, std::string, std::string>>{
           {"hidden", "7", "parameter 'hidden' is 7; it must be even"},
           {"hidden", "4098", "parameter 'hidden' is 4098"},
           {"num_tokens", "0", "parameter 'num_tokens' is 0"},
           {"num_experts", "0", "parameter 'num_experts' is 0"},
           {"intermediate", "0", "parameter 'intermediate' is 0"},
           {"intermediate", "5000", "parameter 'intermediate' is 5000"},
           {"block_size", "0", "parameter 'block_size' is 0"},
           {"num_blocks", "-1", "parameter 'num_blocks' is -1"},
           {"bias", "2", "parameter 'bias' is 2"},
       }) {
    for (const char* kernel : {kForward, kBackward}) {
      absl::StatusOr<proto::Graph> graph =
          KernelRegistry::Global().Trace(kernel, {{name, value}});
      ASSERT_FALSE(graph.ok()) << kernel << " " << name << "=" << value;
      EXPECT_THAT(graph.status().message(), HasSubstr(expect));
    }
  }
}

TEST(BwmmShardOnHTest, LargestAcceptedShapesTraceWithinTheHardwareLimits) {
  // hidden and intermediate at their limits, B beyond one tile: every
  // on-chip buffer fits and every matmul respects the tile limits (the
  // ops' trace-time checks).
  for (const char* kernel : {kForward, kBackward}) {
    const MoeParams p = Params(4, kMoeMaxHidden, 1, kMoeMaxIntermediate, 130, 1,
                               MoeActivation::kSilu, true, proto::FLOAT32);
    absl::StatusOr<proto::Graph> graph = TraceKernel(kernel, p);
    ASSERT_TRUE(graph.ok()) << kernel << ": " << graph.status();
  }
}

// The routing gather alone: an empty slot (−1) leaves its row as the
// memset made it and every other row is transferred, also when the empty
// slot is the first row the program ever skipped.
TEST(BwmmShardOnHRoutingTest, GatherSkipsExactlyTheEmptySlots) {
  constexpr int64_t kTokens = 6, kCols = 16, kSlots = 8;
  absl::StatusOr<proto::Graph> graph =
      testing::TraceWorld(1, 1, [&](builder::Tracer& t) {
        builder::Tensor table =
            t.Input("table", {kTokens, kCols}, proto::FLOAT32);
        builder::Tensor ids_in = t.Input("ids", {kSlots}, proto::INT32);
        builder::Tensor ids = builder::ndarray(
            {kSlots, 1}, proto::INT32, builder::Buffer::kSbuf, "token_ids");
        builder::isa::dma_copy(ids, ids_in.Reshape({kSlots, 1}));
        builder::Tensor rows = builder::ndarray({kSlots, kCols}, proto::FLOAT32,
                                                builder::Buffer::kSbuf, "rows");
        GatherTokenRows(rows, table, ids, 0);
        builder::Tensor out = t.Allocate({kSlots, kCols}, proto::FLOAT32,
                                         builder::Buffer::kHbm, "out");
        builder::isa::dma_copy(out, rows);
        t.Output("out", out);
      });
  ASSERT_TRUE(graph.ok()) << graph.status();
  const std::vector<int32_t> ids = {-1, 5, 0, 3, -1, 2, 1, 4};
  std::vector<float> table(kTokens * kCols);
  for (size_t k = 0; k < table.size(); ++k) table[k] = 1.0f + k;
  absl::StatusOr<Outputs> out = testing::RunGraph(
      *graph, {testing::Floats("table", {kTokens, kCols}, table),
               testing::Ints("ids", {kSlots}, ids)});
  ASSERT_TRUE(out.ok()) << out.status();
  for (int64_t b = 0; b < kSlots; ++b) {
    for (int64_t c = 0; c < kCols; ++c) {
      const float want = ids[b] < 0 ? 0.0f : table[ids[b] * kCols + c];
      EXPECT_EQ(out->at("out").f32[b * kCols + c], want) << b << "," << c;
    }
  }
}

// =============================================================================
// Top-k dropless routing (MakeTopKRouting)
// =============================================================================

// Every token in exactly k slots, at k distinct experts; each block one
// expert's tokens (each once), in consecutive blocks per expert with only
// the expert's last block padded (−1 at its tail), then empty blocks; the
// affinities nonzero exactly at the routed (token, expert) pairs, summing
// to 1 per token.
void ExpectTopKRouting(const MoeParams& p, int64_t k, const MoeRouting& r) {
  const int64_t T = p.num_tokens, E = p.num_experts, B = p.block_size,
                N = p.num_blocks;
  ASSERT_EQ(static_cast<int64_t>(r.token_position_to_id.size()), N * B);
  ASSERT_EQ(static_cast<int64_t>(r.block_to_expert.size()), N);
  ASSERT_EQ(static_cast<int64_t>(r.expert_affinities_masked.size()), T * E);
  std::set<std::pair<int64_t, int64_t>> routed;  // (token, expert)
  std::vector<int64_t> times(T, 0);
  int64_t previous_expert = -1;
  bool seen_empty_block = false;
  bool previous_block_full = true;
  for (int64_t n = 0; n < N; ++n) {
    const int64_t e = r.block_to_expert[n];
    ASSERT_GE(e, 0);
    ASSERT_LT(e, E);
    int64_t filled = 0;
    for (int64_t b = 0; b < B; ++b) {
      const int32_t t = r.token_position_to_id[n * B + b];
      if (t < 0) {
        EXPECT_EQ(t, -1) << "block " << n << " slot " << b;
        continue;
      }
      ASSERT_LT(t, T);
      EXPECT_EQ(b, filled) << "block " << n << ": padding before slot " << b;
      ++filled;
      ++times[t];
      EXPECT_TRUE(routed.insert({t, e}).second)
          << "token " << t << " twice at expert " << e;
    }
    if (filled == 0) {
      seen_empty_block = true;
      continue;
    }
    EXPECT_FALSE(seen_empty_block) << "block " << n << " after an empty one";
    // A new expert starts a block; a block of the same expert follows only
    // a full one.
    EXPECT_GE(e, previous_expert) << "block " << n;
    if (e == previous_expert) {
      EXPECT_TRUE(previous_block_full) << "block " << n;
    }
    previous_expert = e;
    previous_block_full = filled == B;
  }
  EXPECT_EQ(static_cast<int64_t>(routed.size()), T * k);
  for (int64_t t = 0; t < T; ++t) {
    EXPECT_EQ(times[t], k) << "token " << t;
    double sum = 0;
    for (int64_t e = 0; e < E; ++e) {
      const float a = r.expert_affinities_masked[t * E + e];
      if (routed.count({t, e}) > 0) {
        EXPECT_GT(a, 0.0f) << "token " << t << " expert " << e;
      } else {
        EXPECT_EQ(a, 0.0f) << "token " << t << " expert " << e;
      }
      sum += a;
    }
    EXPECT_NEAR(sum, 1.0, 1e-6) << "token " << t;
  }
}

TEST(MoeTopKRoutingTest, EveryTokenAtKExpertsInPaddedPerExpertBlocks) {
  for (const auto& [T, E, B, k] :
       std::vector<std::tuple<int64_t, int64_t, int64_t, int64_t>>{
           {300, 5, 64, 2}, {37, 4, 8, 1}, {64, 3, 16, 3}, {200, 8, 32, 2}}) {
    // Enough blocks for any routing: T·k / B + E, plus spare empty ones.
    const int64_t N = T * k / B + E + 2;
    const MoeParams p =
        Params(T, 32, E, 16, B, N, MoeActivation::kSilu, false, proto::FLOAT32);
    SCOPED_TRACE(Describe(p) + absl::StrCat("k=", k));
    absl::StatusOr<MoeRouting> routing = MakeTopKRouting(p, k, 11);
    ASSERT_TRUE(routing.ok()) << routing.status();
    ExpectTopKRouting(p, k, *routing);
    // The spare blocks are empty.
    for (int64_t b = (N - 2) * B; b < N * B; ++b) {
      EXPECT_EQ(routing->token_position_to_id[b], -1);
    }
    // Deterministic in the seed.
    absl::StatusOr<MoeRouting> again = MakeTopKRouting(p, k, 11);
    ASSERT_TRUE(again.ok());
    EXPECT_EQ(again->token_position_to_id, routing->token_position_to_id);
    EXPECT_EQ(again->block_to_expert, routing->block_to_expert);
    EXPECT_EQ(again->expert_affinities_masked,
              routing->expert_affinities_masked);
  }
}

TEST(MoeTopKRoutingTest, InputsCarryTheRoutingAndItsRoundedAffinities) {
  const MoeParams p = Params(96, 64, 4, 32, 32, 10, MoeActivation::kSilu, false,
                             proto::BFLOAT16);
  absl::StatusOr<MoeRouting> routing = MakeTopKRouting(p, 2, 3);
  ASSERT_TRUE(routing.ok()) << routing.status();
  absl::StatusOr<std::vector<HostArray>> inputs = MakeMoeInputs(p, 3, 2);
  ASSERT_TRUE(inputs.ok()) << inputs.status();
  EXPECT_EQ(Find(*inputs, "token_position_to_id").i32,
            routing->token_position_to_id);
  EXPECT_EQ(Find(*inputs, "block_to_expert").i32, routing->block_to_expert);
  const std::vector<float>& affinities =
      Find(*inputs, "expert_affinities_masked").f32;
  ASSERT_EQ(affinities.size(), routing->expert_affinities_masked.size());
  for (size_t i = 0; i < affinities.size(); ++i) {
    EXPECT_EQ(affinities[i],
              RoundTo(p.dtype, routing->expert_affinities_masked[i], 240.0f))
        << i;
  }
  // top_k 0: the random routing.
  absl::StatusOr<std::vector<HostArray>> random = MakeMoeInputs(p, 3, 0);
  ASSERT_TRUE(random.ok());
  std::vector<HostArray> want = MakeMoeInputs(p, 3);
  EXPECT_EQ(Find(*random, "token_position_to_id").i32,
            Find(want, "token_position_to_id").i32);
}

TEST(MoeTopKRoutingTest, RefusesKOutOfRangeAndTooFewBlocks) {
  const MoeParams p =
      Params(64, 32, 4, 16, 16, 7, MoeActivation::kSilu, false, proto::FLOAT32);
  EXPECT_THAT(MakeTopKRouting(p, 0, 1).status().message(),
              HasSubstr("between 1 and E = 4"));
  EXPECT_THAT(MakeTopKRouting(p, 5, 1).status().message(),
              HasSubstr("between 1 and E = 4"));
  // 128 pairs need at least 8 blocks of 16.
  EXPECT_THAT(MakeTopKRouting(p, 2, 1).status().message(),
              HasSubstr("num_blocks is 7"));
}

// =============================================================================
// blockwise_mm_bwd
// =============================================================================

TEST(BlockwiseMmBwdTest, MatchesReferenceFloat32WithTails) {
  uint64_t seed = 31;
  for (const MoeParams& p : TailCases(proto::FLOAT32)) {
    absl::StatusOr<std::vector<HostArray>> inputs =
        MakeBlockwiseMmBwdInputs(p, seed++);
    ASSERT_TRUE(inputs.ok()) << inputs.status();
    CheckBackwardAgainstReference(p, *inputs);
  }
}

TEST(BlockwiseMmBwdTest, MatchesReferenceBfloat16WithTails) {
  uint64_t seed = 41;
  for (MoeParams p : TailCases(proto::BFLOAT16)) {
    p.activation = p.activation == MoeActivation::kSilu ? MoeActivation::kSwish
                                                        : MoeActivation::kSilu;
    p.bias = !p.bias;
    absl::StatusOr<std::vector<HostArray>> inputs =
        MakeBlockwiseMmBwdInputs(p, seed++);
    ASSERT_TRUE(inputs.ok()) << inputs.status();
    CheckBackwardAgainstReference(p, *inputs);
  }
}

// Several blocks on one expert accumulate into its weight gradient by
// read-modify-write; tokens, (token, expert) pairs and experts never routed
// get exact zero gradients.
TEST(BlockwiseMmBwdTest, AccumulatesPerExpertAndLeavesUnroutedRowsZero) {
  const MoeParams p =
      Params(/*T=*/10, /*H=*/8, /*E=*/3, /*I=*/5, /*B=*/4,
             /*N=*/4, MoeActivation::kSwish, true, proto::FLOAT32);
  std::vector<HostArray> forward = MakeMoeInputs(p, 6);
  // Expert 0 has three blocks, expert 1 one, expert 2 none; tokens 6..9
  // are never routed.
  SetRouting(forward, {0, 1, 0, 0},
             {0, -1, 2, 4, 1, 3, -1, 5, 1, 3, -1, 5, -1, -1, -1, -1});
  std::vector<HostArray> inputs = BackwardInputsFor(p, forward, 7);
  CheckBackwardAgainstReference(p, inputs);

  absl::StatusOr<proto::Graph> graph = TraceKernel(kBackward, p);
  ASSERT_TRUE(graph.ok()) << graph.status();
  const Outputs got = RunOk(*graph, inputs);
  const auto all_zero = [](const HostArray& a, int64_t begin, int64_t end) {
    for (int64_t k = begin; k < end; ++k) {
      if (a.f32[k] != 0.0f) return false;
    }
    return true;
  };
  const int64_t H = p.hidden, I = p.intermediate, E = p.num_experts;
  EXPECT_TRUE(all_zero(got.at("hidden_states_grad"), 6 * H, 10 * H));
  EXPECT_FALSE(all_zero(got.at("hidden_states_grad"), 0, 6 * H));
  const HostArray& daff = got.at("expert_affinities_masked_grad");
  const std::set<std::pair<int, int>> routed = {
      {0, 0}, {2, 0}, {4, 0}, {1, 0}, {3, 0}, {5, 0}, {1, 1}, {3, 1}, {5, 1}};
  for (int t = 0; t < p.num_tokens; ++t) {
    for (int e = 0; e < E; ++e) {
      if (routed.count({t, e}) > 0) {
        EXPECT_NE(daff.f32[t * E + e], 0.0f) << t << "," << e;
      } else {
        EXPECT_EQ(daff.f32[t * E + e], 0.0f) << t << "," << e;
      }
    }
  }
  EXPECT_TRUE(all_zero(got.at("gate_up_proj_weight_grad"), 2 * H * 2 * I,
                       3 * H * 2 * I));
  EXPECT_TRUE(all_zero(got.at("down_proj_weight_grad"), 2 * I * H, 3 * I * H));
  EXPECT_TRUE(all_zero(got.at("gate_up_proj_bias_grad"), 2 * 2 * I, 3 * 2 * I));
  EXPECT_TRUE(all_zero(got.at("down_proj_bias_grad"), 2 * H, 3 * H));
  EXPECT_FALSE(all_zero(got.at("down_proj_weight_grad"), 0, I * H));

  // Expert 0's gradient is the sum of its three blocks' contributions: the
  // same run with each block alone on expert 0 adds up to it.
  std::vector<double> sum(I * H, 0.0);
  for (int only : {0, 2, 3}) {
    std::vector<int32_t> tokens(p.num_blocks * p.block_size, -1);
    const std::vector<int32_t>& all = Find(inputs, "token_position_to_id").i32;
    for (int64_t b = 0; b < p.block_size; ++b) {
      tokens[only * p.block_size + b] = all[only * p.block_size + b];
    }
    std::vector<HostArray> single = inputs;
    Find(single, "token_position_to_id").i32 = tokens;
    const Outputs part = RunOk(*graph, single);
    for (int64_t k = 0; k < I * H; ++k) {
      sum[k] += part.at("down_proj_weight_grad").f32[k];
    }
  }
  for (int64_t k = 0; k < I * H; ++k) {
    EXPECT_NEAR(got.at("down_proj_weight_grad").f32[k], sum[k], 1e-5);
  }
}

// The whole chain on the device: the forward's checkpoints feed the
// backward, which then matches the reference computed from scratch.
TEST(BlockwiseMmBwdTest, ConsumesTheCheckpointsTheForwardWrote) {
  const MoeParams p =
      Params(30, 70, 3, 50, 20, 5, MoeActivation::kSilu, true, proto::FLOAT32);
  absl::StatusOr<std::vector<HostArray>> scratch =
      MakeBlockwiseMmBwdInputs(p, 51);
  ASSERT_TRUE(scratch.ok()) << scratch.status();
  std::vector<HostArray> inputs = MakeMoeInputs(p, 51);
  absl::StatusOr<proto::Graph> forward = TraceKernel(kForward, p);
  ASSERT_TRUE(forward.ok()) << forward.status();
  Outputs fwd = RunOk(*forward, inputs);
  ASSERT_EQ(fwd.size(), 3u);
  inputs.push_back(fwd.at("gate_up_proj_act_checkpoint_T"));
  inputs.push_back(fwd.at("down_proj_act_checkpoint"));
  inputs.push_back(Find(*scratch, "output_hidden_states_grad"));
  absl::StatusOr<proto::Graph> backward = TraceKernel(kBackward, p);
  ASSERT_TRUE(backward.ok()) << backward.status();
  const Outputs got = RunOk(*backward, inputs);
  absl::StatusOr<std::vector<HostArray>> want =
      BlockwiseMmBwdReference(p, *scratch);
  ASSERT_TRUE(want.ok()) << want.status();
  ExpectAllClose(got, *want, 1e-4);
}

// The reference's analytic gradients against central differences of the
// reference forward's L = Σ output ⊙ output_hidden_states_grad.
TEST(BlockwiseMmBwdTest, ReferenceMatchesFiniteDifferences) {
  for (MoeActivation activation :
       {MoeActivation::kSilu, MoeActivation::kSwish}) {
    const MoeParams p = Params(/*T=*/4, /*H=*/4, /*E=*/2, /*I=*/3, /*B=*/3,
                               /*N=*/3, activation, true, proto::FLOAT32);
    absl::StatusOr<std::vector<HostArray>> base =
        MakeBlockwiseMmBwdInputs(p, 61);
    ASSERT_TRUE(base.ok()) << base.status();
    absl::StatusOr<std::vector<HostArray>> grads =
        BlockwiseMmBwdReference(p, *base);
    ASSERT_TRUE(grads.ok()) << grads.status();
    const Outputs analytic = ByName(*grads);
    const HostArray& d_out = Find(*base, "output_hidden_states_grad");
    const auto loss = [&](const std::vector<HostArray>& inputs) {
      absl::StatusOr<std::vector<HostArray>> out =
          BwmmShardOnHReference(p, inputs);
      EXPECT_TRUE(out.ok()) << out.status();
      double l = 0.0;
      for (size_t k = 0; k < d_out.f32.size(); ++k) {
        l += double{(*out)[0].f32[k]} * d_out.f32[k];
      }
      return l;
    };
    for (const auto& [input, grad] :
         std::vector<std::pair<std::string, std::string>>{
             {"hidden_states", "hidden_states_grad"},
             {"expert_affinities_masked", "expert_affinities_masked_grad"},
             {"gate_up_proj_weight", "gate_up_proj_weight_grad"},
             {"down_proj_weight", "down_proj_weight_grad"},
             {"gate_up_proj_bias", "gate_up_proj_bias_grad"},
             {"down_proj_bias", "down_proj_bias_grad"}}) {
      const HostArray& want = analytic.at(grad);
      double scale = 1e-3;
      for (float v : want.f32) scale = std::max(scale, std::fabs(double{v}));
      const size_t n = Find(*base, input).f32.size();
      for (size_t k = 0; k < n; ++k) {
        constexpr float kEps = 1e-2f;
        std::vector<HostArray> plus = *base, minus = *base;
        Find(plus, input).f32[k] += kEps;
        Find(minus, input).f32[k] -= kEps;
        const double numeric = (loss(plus) - loss(minus)) / (2.0 * kEps);
        EXPECT_NEAR(want.f32[k], numeric, 2e-3 * scale)
            << grad << "[" << k << "]";
      }
    }
  }
}

TEST(BlockwiseMmBwdTest, NoForwardProjectionIsRecomputed) {
  const MoeParams p = Params(20, 262, 2, 136, 130, 2, MoeActivation::kSilu,
                             true, proto::FLOAT32);
  absl::StatusOr<proto::Graph> graph = TraceKernel(kBackward, p);
  ASSERT_TRUE(graph.ok()) << graph.status();
  const ProjectionMatmuls m = ClassifyMatmuls(*graph);
  EXPECT_EQ(m.gate_up, 0);
  EXPECT_EQ(m.down, 0);
  // Only the gradient matmuls: per tile of slots and core, dM (I rows x H),
  // dW_down (I rows x H), the down bias (H/2), dX (H/2 x 2 x I) and
  // dW_gate_up (H/2 x 2 x I).
  const int64_t H = p.hidden, I = p.intermediate, half = H / 2;
  int64_t expected = 0;
  for (int core = 0; core < 2; ++core) {
    const int64_t i_tiles = CeilDiv(ShardOf(I, core).size, 128);
    const int64_t per_tile = i_tiles * CeilDiv(H, 128) +
                             i_tiles * CeilDiv(H, 512) + CeilDiv(half, 512) +
                             CeilDiv(half, 512) * 2 * CeilDiv(I, 128) +
                             CeilDiv(half, 128) * 2 * CeilDiv(I, 512);
    expected += per_tile * p.num_blocks * CeilDiv(p.block_size, 128);
  }
  EXPECT_EQ(m.total, expected);
}

TEST(BlockwiseMmBwdTest, ReplaysOneActivationAndTakesTheDerivativeFromTheIsa) {
  for (const auto& [activation, forward, derivative] :
       std::vector<std::tuple<MoeActivation, std::string, std::string>>{
           {MoeActivation::kSilu, "silu", "silu_dx"},
           {MoeActivation::kSwish, "gelu_apprx_sigmoid",
            "gelu_apprx_sigmoid_dx"}}) {
    const MoeParams p =
        Params(20, 40, 2, 300, 130, 2, activation, false, proto::BFLOAT16);
    absl::StatusOr<proto::Graph> graph = TraceKernel(kBackward, p);
    ASSERT_TRUE(graph.ok()) << graph.status();
    for (const proto::Stream& stream : graph->streams()) {
      const int core = static_cast<int>(stream.core());
      // One replay and one derivative per i tile of this core's rows.
      const int64_t tiles = CeilDiv(ShardOf(p.intermediate, core).size, 128) *
                            p.num_blocks * CeilDiv(p.block_size, 128);
      int64_t replays = 0, derivatives = 0;
      uint32_t replay_input = 0;
      for (const proto::Instruction* act : Instrs(stream, proto::ACTIVATION)) {
        const std::string func = StrAttr(*act, "func");
        if (func == forward) {
          ++replays;
          replay_input = OperandOf(*act, "data").tensor_id();
        } else if (func == derivative) {
          ++derivatives;
          // Applied to the same checkpointed gate as the replay.
          EXPECT_EQ(OperandOf(*act, "data").tensor_id(), replay_input);
        } else {
          ADD_FAILURE() << "unexpected activation " << func;
        }
      }
      EXPECT_EQ(replays, tiles);
      EXPECT_EQ(derivatives, tiles);
      EXPECT_GT(tiles, 0);
    }
  }
}

TEST(BlockwiseMmBwdTest, NoSendrecvAndCoreBarriersFenceTheSharedGradient) {
  const MoeParams p =
      Params(20, 40, 2, 30, 130, 3, MoeActivation::kSilu, true, proto::FLOAT32);
  absl::StatusOr<proto::Graph> graph = TraceKernel(kBackward, p);
  ASSERT_TRUE(graph.ok()) << graph.status();
  for (const proto::Stream& stream : graph->streams()) {
    EXPECT_TRUE(Instrs(stream, proto::SENDRECV).empty());
    const auto barriers = Instrs(stream, proto::CORE_BARRIER);
    // Read-after-write and write-after-read, per tile of slots.
    EXPECT_EQ(static_cast<int64_t>(barriers.size()),
              2 * p.num_blocks * CeilDiv(p.block_size, 128));
    for (const proto::Instruction* barrier : barriers) {
      EXPECT_EQ(OperandTensor(*graph, *barrier, "data").space(),
                proto::SHARED_HBM);
    }
  }
}

TEST(BlockwiseMmBwdTest, WeightGradientsAccumulateByLoadAddStoreAtTheExpert) {
  const MoeParams p = Params(20, 262, 2, 136, 24, 2, MoeActivation::kSilu, true,
                             proto::BFLOAT16);
  absl::StatusOr<proto::Graph> graph = TraceKernel(kBackward, p);
  ASSERT_TRUE(graph.ok()) << graph.status();
  const std::set<std::string> grads = {
      "gate_up_proj_weight_grad", "down_proj_weight_grad",
      "gate_up_proj_bias_grad", "down_proj_bias_grad"};
  for (const proto::Stream& stream : graph->streams()) {
    std::map<std::string, int> stores;
    for (int k = 0; k < stream.instructions_size(); ++k) {
      const proto::Instruction& store = stream.instructions(k);
      if (store.opcode() != proto::DMA_COPY) continue;
      const proto::Tensor& dst = OperandTensor(*graph, store, "dst");
      if (grads.count(dst.name()) == 0) continue;
      if (ScopeOf(*graph, store).find("ZeroInitGradients") !=
          std::string::npos) {
        continue;
      }
      ++stores[dst.name()];
      // Stored at the runtime expert index ...
      const proto::DynamicOffset& dyn = OperandOf(store, "dst").dynamic();
      ASSERT_EQ(dyn.kind(), proto::DynamicOffset::SCALAR) << dst.name();
      EXPECT_EQ(dyn.indirect_dim(), 0u);
      EXPECT_EQ(TensorOf(*graph, dyn.tensor_id()).name(), "expert_idx");
      // ... the sum of a tensor_tensor add ...
      const uint32_t sum = OperandOf(store, "src").tensor_id();
      const proto::Instruction* add = nullptr;
      int add_at = -1;
      for (int j = k - 1; j >= 0 && add == nullptr; --j) {
        const proto::Instruction& in = stream.instructions(j);
        if (Writes(in, sum)) {
          add = &in;
          add_at = j;
        }
      }
      ASSERT_NE(add, nullptr);
      ASSERT_EQ(add->opcode(), proto::TENSOR_TENSOR);
      EXPECT_EQ(StrAttr(*add, "op"), "add");
      // ... of the rows loaded from the same place.
      const uint32_t existing = OperandOf(*add, "data1").tensor_id();
      const proto::Instruction* load = nullptr;
      for (int j = add_at - 1; j >= 0 && load == nullptr; --j) {
        const proto::Instruction& in = stream.instructions(j);
        if (Writes(in, existing)) {
          load = &in;
        }
      }
      ASSERT_NE(load, nullptr);
      ASSERT_EQ(load->opcode(), proto::DMA_COPY);
      EXPECT_EQ(OperandOf(*load, "src").SerializeAsString(),
                OperandOf(store, "dst").SerializeAsString());
    }
    for (const std::string& name : grads) {
      EXPECT_GT(stores[name], 0) << name << " on core " << stream.core();
    }
  }
}

TEST(BlockwiseMmBwdTest, TracingIsDeterministic) {
  const MoeParams p = Params(20, 262, 2, 136, 24, 2, MoeActivation::kSwish,
                             true, proto::BFLOAT16);
  absl::StatusOr<proto::Graph> a = TraceKernel(kBackward, p);
  absl::StatusOr<proto::Graph> b = TraceKernel(kBackward, p);
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_EQ(SerializeDeterministic(*a), SerializeDeterministic(*b));
}

absl::StatusOr<proto::Graph> TraceWithFences(const MoeParams& p,
                                             BlockwiseMmBwdFences fences) {
  return BlockwiseMmBwdSpec().Trace(p, [&](KernelIo& io, const MoeParams& q) {
    TraceBlockwiseMmBwd(io, q, fences);
  });
}

// Without the write-after-read fence, a core overwrites its half of the
// shared gate/up gradient while the other may still be reading the
// previous tile's: the race detector reports it.
TEST(BlockwiseMmBwdTest, RaceDetectorCatchesAMissingWriteAfterReadFence) {
  const MoeParams p =
      Params(12, 8, 2, 6, 4, 3, MoeActivation::kSilu, false, proto::FLOAT32);
  absl::StatusOr<std::vector<HostArray>> inputs =
      MakeBlockwiseMmBwdInputs(p, 71);
  ASSERT_TRUE(inputs.ok()) << inputs.status();
  absl::StatusOr<proto::Graph> fenced = TraceWithFences(p, {});
  ASSERT_TRUE(fenced.ok()) << fenced.status();
  EXPECT_TRUE(testing::RunGraph(*fenced, *inputs).ok());

  absl::StatusOr<proto::Graph> broken = TraceWithFences(
      p, {.after_gate_up_grad = true, .before_next_tile = false});
  ASSERT_TRUE(broken.ok()) << broken.status();
  absl::Status status = testing::RunGraph(*broken, *inputs).status();
  ASSERT_FALSE(status.ok());
  EXPECT_EQ(status.code(), interp::kDeviceErrorCode);
  EXPECT_THAT(status.message(), HasSubstr("data race"));
  EXPECT_THAT(status.message(), HasSubstr("gate_up_grad_hbm"));
}

// Without the read-after-write fence a core reads the other's half of the
// gate/up gradient before it is written: a device error, not a wrong
// answer.
TEST(BlockwiseMmBwdTest, MissingReadAfterWriteFenceIsADeviceError) {
  const MoeParams p =
      Params(12, 8, 2, 6, 4, 3, MoeActivation::kSilu, false, proto::FLOAT32);
  absl::StatusOr<std::vector<HostArray>> inputs =
      MakeBlockwiseMmBwdInputs(p, 72);
  ASSERT_TRUE(inputs.ok()) << inputs.status();
  absl::StatusOr<proto::Graph> broken = TraceWithFences(
      p, {.after_gate_up_grad = false, .before_next_tile = true});
  ASSERT_TRUE(broken.ok()) << broken.status();
  absl::Status status = testing::RunGraph(*broken, *inputs).status();
  ASSERT_FALSE(status.ok());
  EXPECT_EQ(status.code(), interp::kDeviceErrorCode);
  EXPECT_THAT(status.message(), HasSubstr("gate_up_grad_hbm"));
}

}  // namespace
}  // namespace nkigraph::kernels
