// attention_block_tkg (§3): the interpreted kernel against its plain
// reference over a pairwise table of configurations, and the mechanisms
// the contract says its graph shows.
#include "kernels/attention_block_tkg.h"

#include <cmath>
#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "builder/isa.h"
#include "builder/jit.h"
#include "builder/tracer.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "kernels/compare.h"
#include "kernels/decode_common.h"
#include "kernels/registry.h"
#include "ops/instr_facts.h"
#include "proto/nkigraph.pb.h"
#include "tests/test_util.h"

namespace nkigraph::kernels {
namespace {

using builder::Tensor;
using nkigraph::testing::OperandOf;
using nkigraph::testing::TensorOf;
using ::testing::HasSubstr;
using Outputs = std::map<std::string, HostArray>;

// One row of the pairwise table.
struct Case {
  int64_t ratio;  // q_heads / kv_heads
  int64_t seq;
  int64_t head_dim;
  QkNorm qk_norm;
  proto::DType dtype;
  bool fp8_kv;
  bool o_proj;
  int64_t batch;
  int64_t kv_heads;
  int64_t cache_len;
  int64_t hidden;
};

AttentionParams ParamsOf(const Case& c) {
  AttentionParams p;
  p.batch = c.batch;
  p.seq_tkg = c.seq;
  p.hidden = c.hidden;
  p.kv_heads = c.kv_heads;
  p.q_heads = c.ratio * c.kv_heads;
  p.head_dim = c.head_dim;
  p.cache_len = c.cache_len;
  p.qk_norm = c.qk_norm;
  p.fp8_kv = c.fp8_kv;
  p.o_proj = c.o_proj;
  p.dtype = c.dtype;
  return p;
}

std::string Describe(const AttentionParams& p) {
  const char* norms[] = {"none", "pre_rope", "post_rope"};
  return absl::StrCat(
      "batch=", p.batch, " seq_tkg=", p.seq_tkg, " hidden=", p.hidden,
      " q_heads=", p.q_heads, " kv_heads=", p.kv_heads,
      " head_dim=", p.head_dim, " cache_len=", p.cache_len,
      " qk_norm=", norms[static_cast<int>(p.qk_norm)], " fp8_kv=", p.fp8_kv,
      " o_proj=", p.o_proj,
      " dtype=", p.dtype == proto::FLOAT32 ? "float32" : "bfloat16");
}

constexpr proto::DType kF32 = proto::FLOAT32;
constexpr proto::DType kBf16 = proto::BFLOAT16;

// Every pair of values of (GQA ratio, S, head_dim, qk_norm, dtype, fp8_kv,
// o_proj) appears in some row (a greedy pairwise cover: 17 rows instead of
// the 1152 of the full product). Batch, kv_heads, hidden and cache_len
// vary alongside: cache lengths are never tile multiples (77 is under one
// tile, 129 leaves a one-position tile, 300 three tiles), hidden shards
// 64, 100 and 132 wide, and row 6 puts B·S·q_heads at the limit, 128.
const std::vector<Case>& PairwiseCases() {
  static const auto* const cases = new std::vector<Case>{
      // ratio S  d   qk_norm            dtype fp8  o_proj B kv  C    H
      {1, 1, 64, QkNorm::kNone, kF32, false, false, 3, 2, 77, 128},
      {1, 2, 96, QkNorm::kPreRope, kBf16, true, true, 2, 3, 130, 200},
      {2, 3, 128, QkNorm::kPostRope, kF32, false, true, 2, 2, 300, 264},
      {4, 4, 64, QkNorm::kPostRope, kBf16, true, false, 1, 2, 200, 128},
      {8, 1, 128, QkNorm::kNone, kBf16, true, true, 3, 1, 129, 200},
      {8, 4, 96, QkNorm::kPreRope, kF32, false, false, 2, 2, 77, 264},
      {2, 3, 64, QkNorm::kPreRope, kBf16, true, false, 3, 1, 300, 128},
      {4, 2, 128, QkNorm::kNone, kF32, false, false, 2, 1, 130, 200},
      {2, 4, 96, QkNorm::kNone, kF32, true, true, 1, 3, 200, 264},
      {4, 1, 96, QkNorm::kPreRope, kBf16, false, true, 2, 2, 129, 128},
      {8, 2, 64, QkNorm::kPostRope, kF32, false, true, 1, 1, 77, 200},
      {1, 3, 96, QkNorm::kPostRope, kF32, false, false, 2, 2, 300, 264},
      {1, 4, 128, QkNorm::kPreRope, kF32, false, false, 1, 1, 200, 128},
      {2, 1, 64, QkNorm::kPostRope, kF32, false, false, 4, 2, 130, 200},
      {4, 3, 64, QkNorm::kNone, kF32, false, false, 2, 1, 129, 264},
      {2, 2, 64, QkNorm::kNone, kF32, false, false, 2, 2, 77, 128},
      {8, 3, 64, QkNorm::kNone, kF32, false, false, 1, 1, 300, 200},
  };
  return *cases;
}

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

std::vector<HostArray> InputsFor(const AttentionParams& p, uint64_t seed) {
  absl::StatusOr<std::vector<HostArray>> inputs =
      MakeAttentionBlockTkgInputs(p, seed);
  EXPECT_TRUE(inputs.ok()) << inputs.status();
  return inputs.ok() ? *std::move(inputs) : std::vector<HostArray>();
}

HostArray& Find(std::vector<HostArray>& arrays, const std::string& name) {
  for (HostArray& a : arrays) {
    if (a.name == name) return a;
  }
  ADD_FAILURE() << "no array " << name;
  static HostArray none;
  return none;
}

void CheckAgainstReference(const AttentionParams& p, uint64_t seed) {
  SCOPED_TRACE(Describe(p));
  absl::StatusOr<proto::Graph> graph = AttentionBlockTkgSpec().Trace(p);
  ASSERT_TRUE(graph.ok()) << graph.status();
  const std::vector<HostArray> inputs = InputsFor(p, seed);
  absl::StatusOr<Outputs> got = testing::RunGraph(*graph, inputs);
  ASSERT_TRUE(got.ok()) << got.status();
  absl::StatusOr<std::vector<HostArray>> want =
      AttentionBlockTkgReference(p, inputs);
  ASSERT_TRUE(want.ok()) << want.status();
  ASSERT_EQ(got->size(), want->size());
  for (const HostArray& w : *want) {
    auto it = got->find(w.name);
    ASSERT_NE(it, got->end()) << "missing output " << w.name;
    ExpectClose(it->second, w,
                AttentionBlockTkgSpec().output_tolerance(p, w.name).value_or(
                    AttentionBlockTkgSpec().tolerance(p)));
  }
}

TEST(AttentionBlockTkgTest, PairwiseConfigurationsMatchReference) {
  uint64_t seed = 1;
  for (const Case& c : PairwiseCases())
    CheckAgainstReference(ParamsOf(c), seed++);
}

// B·S = 1, one user's one new token: the token rows are a single
// partition, so RoPE's cos/sin rows broadcast over the heads of a
// one-partition tile (every head after the first came out wrong).
TEST(AttentionBlockTkgTest, OneTokenOfOneSequenceMatchesReference) {
  uint64_t seed = 11;
  for (const proto::DType dtype : {kF32, kBf16}) {
    for (const bool o_proj : {true, false}) {
      AttentionParams p;
      p.batch = 1;
      p.seq_tkg = 1;
      p.dtype = dtype;
      p.o_proj = o_proj;
      CheckAgainstReference(p, seed++);
    }
  }
}

TEST(AttentionBlockTkgTest, DefaultsMatchReference) {
  CheckAgainstReference(AttentionParams{}, 7);
}

// The reference is independent of the kernel; this pins the reference
// itself on a case worked by hand: with every prior position masked and
// S = 1 each query attends only its own token, so the attention output
// (o_proj=0) is that token's V, and the cache row at cache_position holds
// it too.
TEST(AttentionBlockTkgTest, FullyMaskedCacheAttendsOnlyTheActiveToken) {
  AttentionParams p;
  p.batch = 2;
  p.seq_tkg = 1;
  p.o_proj = false;
  p.dtype = kF32;
  std::vector<HostArray> inputs = InputsFor(p, 3);
  for (float& m : Find(inputs, "mask_cache").f32) m = 0.0f;
  absl::StatusOr<proto::Graph> graph = AttentionBlockTkgSpec().Trace(p);
  ASSERT_TRUE(graph.ok()) << graph.status();
  absl::StatusOr<Outputs> got = testing::RunGraph(*graph, inputs);
  ASSERT_TRUE(got.ok()) << got.status();
  const HostArray& out = got->at("out");
  const HostArray& v_cache = got->at("V_cache");
  const std::vector<int32_t>& position = Find(inputs, "cache_position").i32;
  const int64_t d = p.head_dim, r = p.q_heads / p.kv_heads, c = p.cache_len;
  for (int64_t b = 0; b < p.batch; ++b) {
    for (int64_t h = 0; h < p.q_heads; ++h) {
      const int64_t g = h / r;
      for (int64_t j = 0; j < d; ++j) {
        const float v =
            v_cache.f32[((b * p.kv_heads + g) * c + position[b]) * d + j];
        EXPECT_NEAR(out.f32[(b * p.q_heads + h) * d + j], v,
                    1e-5 * (1 + std::abs(v)))
            << "b=" << b << " h=" << h << " j=" << j;
      }
    }
  }
}

// The composer's SBUF path: x the full residual in SBUF on each core, out
// this core's [T, H/2] shard left in SBUF (here stored to HBM afterwards).
// The same arithmetic in the same order as the HBM path: equal bit for bit.
TEST(AttentionBlockTkgTest, SbufPathEqualsHbmPathBitForBit) {
  AttentionParams p;
  p.qk_norm = QkNorm::kPostRope;
  p.hidden = 264;  // shards of 132: a short tile each
  const auto sbuf_body = [](KernelIo& io, const AttentionParams& p) {
    const int64_t t = p.tokens();
    const Tensor x = io.Input("X").Reshape({t, p.hidden});
    const AttentionWeights w = DeclareAttentionWeights(io, p);
    const Tensor out = io.Output("out").Reshape({t, p.hidden});
    const CoreShard h = HiddenShard(p);
    BlockIo block;
    block.x = builder::ndarray({t, p.hidden}, p.dtype, builder::Buffer::kSbuf,
                               "x_residual");
    builder::isa::dma_copy(block.x, x);
    block.out = builder::ndarray({t, h.size}, p.dtype, builder::Buffer::kSbuf,
                                 "out_shard");
    builder::jit("attention_block_tkg", AttentionBlockTkg)(block, w, p);
    builder::isa::dma_copy(out.Slice(1, h.offset, h.size), block.out);
  };
  absl::StatusOr<proto::Graph> hbm = AttentionBlockTkgSpec().Trace(p);
  ASSERT_TRUE(hbm.ok()) << hbm.status();
  absl::StatusOr<proto::Graph> sbuf =
      AttentionBlockTkgSpec().Trace(p, sbuf_body);
  ASSERT_TRUE(sbuf.ok()) << sbuf.status();
  const std::vector<HostArray> inputs = InputsFor(p, 11);
  absl::StatusOr<Outputs> want = testing::RunGraph(*hbm, inputs);
  ASSERT_TRUE(want.ok()) << want.status();
  absl::StatusOr<Outputs> got = testing::RunGraph(*sbuf, inputs);
  ASSERT_TRUE(got.ok()) << got.status();
  for (const char* name : {"out", "K_cache", "V_cache"}) {
    EXPECT_EQ(got->at(name).f32, want->at(name).f32) << name;
  }
}

// The composer passes layer l's slices of caches stacked on a leading [L]
// axis: the update finds C among the declared tensor's dims, writes only
// that layer, and the result is the one-layer reference's.
TEST(AttentionBlockTkgTest, UpdatesOneLayerOfStackedCaches) {
  AttentionParams p;
  p.dtype = kF32;
  constexpr int64_t kLayers = 2, kLayer = 1;
  const std::vector<HostArray> flat = InputsFor(p, 13);
  std::vector<HostArray> inputs;
  for (const HostArray& a : flat) {
    if (a.name != "K_cache" && a.name != "V_cache") {
      inputs.push_back(a);
      continue;
    }
    HostArray stacked = a;  // layer 0: the same values reversed
    stacked.shape.insert(stacked.shape.begin(), kLayers);
    stacked.f32.assign(a.f32.rbegin(), a.f32.rend());
    stacked.f32.insert(stacked.f32.end(), a.f32.begin(), a.f32.end());
    inputs.push_back(std::move(stacked));
  }
  const int64_t t = p.tokens();
  const auto body = [&](builder::Tracer& tr) {
    const auto input = [&](const HostArray& a) {
      return tr.Input(a.name, a.shape, a.dtype);
    };
    std::map<std::string, Tensor> in;
    for (const HostArray& a : inputs) in[a.name] = input(a);
    AttentionWeights w;
    w.rmsnorm_gamma = in["rmsnorm_gamma"];
    w.w_qkv = in["W_qkv"];
    w.cos = in["cos"];
    w.sin = in["sin"];
    w.k_cache = in["K_cache"].Select(0, kLayer);
    w.v_cache = in["V_cache"].Select(0, kLayer);
    w.mask_cache = in["mask_cache"];
    w.cache_position = in["cache_position"];
    w.w_o = in["W_o"];
    BlockIo block;
    block.x = in["X"].Reshape({t, p.hidden});
    const Tensor out = tr.Allocate({p.batch, p.seq_tkg, p.hidden}, kF32,
                                   builder::Buffer::kSharedHbm, "out");
    block.out = out.Reshape({t, p.hidden});
    builder::jit("attention_block_tkg", AttentionBlockTkg)(block, w, p);
    tr.Output("out", out);
    tr.Output("K_cache", in["K_cache"]);
    tr.Output("V_cache", in["V_cache"]);
  };
  absl::StatusOr<proto::Graph> graph = testing::TraceWorld(1, 2, body);
  ASSERT_TRUE(graph.ok()) << graph.status();
  absl::StatusOr<Outputs> got = testing::RunGraph(*graph, inputs);
  ASSERT_TRUE(got.ok()) << got.status();
  absl::StatusOr<std::vector<HostArray>> want =
      AttentionBlockTkgReference(p, flat);
  ASSERT_TRUE(want.ok()) << want.status();
  for (HostArray& w : *want) {
    HostArray g = got->at(w.name);
    if (w.name != "out") {
      // Layer 0 untouched; layer 1 the reference's.
      const size_t n = w.f32.size();
      const std::vector<float> layer0(g.f32.begin(), g.f32.begin() + n);
      EXPECT_EQ(layer0, std::vector<float>(Find(inputs, w.name).f32.begin(),
                                           Find(inputs, w.name).f32.begin() +
                                               static_cast<int64_t>(n)))
          << w.name;
      g.f32.erase(g.f32.begin(), g.f32.begin() + n);
      g.shape.erase(g.shape.begin());
    }
    ExpectClose(g, w, ScaleTolerance(p.dtype));
  }
}

// --- The graph -------------------------------------------------------------

proto::Graph TraceOk(const AttentionParams& p) {
  absl::StatusOr<proto::Graph> graph = AttentionBlockTkgSpec().Trace(p);
  EXPECT_TRUE(graph.ok()) << graph.status();
  return graph.ok() ? *std::move(graph) : proto::Graph();
}

bool InHbm(const proto::Tensor& t) {
  return t.space() == proto::HBM || t.space() == proto::SHARED_HBM;
}

TEST(AttentionBlockTkgTest, OnlyInputsWeightsCachesAndOutputTouchHbm) {
  AttentionParams p;
  p.qk_norm = QkNorm::kPostRope;
  p.fp8_kv = true;
  const proto::Graph g = TraceOk(p);
  std::set<std::string> written;
  for (const proto::Stream& stream : g.streams()) {
    for (const proto::Instruction& instr : stream.instructions()) {
      for (int i = 0; i < instr.operands_size(); ++i) {
        if (instr.operands(i).tensor_id() == 0) continue;
        const proto::Tensor& t = TensorOf(g, instr.operands(i));
        if (!InHbm(t)) continue;
        // No scratch in HBM: every HBM tensor is an input or output.
        EXPECT_NE(t.role(), proto::ROLE_INTERNAL)
            << t.name() << " in " << ops::OpcodeName(instr.opcode());
        if (ops::WritesOperand(instr, i)) written.insert(t.name());
      }
    }
  }
  // The only HBM writes: the output and the two caches.
  EXPECT_THAT(written,
              ::testing::UnorderedElementsAre("out", "K_cache", "V_cache"));
}

TEST(AttentionBlockTkgTest, RmsNormSumsSquaresByMatmulAgainstOnes) {
  AttentionParams p;
  p.rmsnorm_eps = 1e-5;
  const proto::Graph g = TraceOk(p);
  int ones_matmuls = 0, rsqrt_with_eps = 0;
  for (const proto::Stream& stream : g.streams()) {
    std::set<uint32_t> ones;  // tensors memset to 1
    for (const proto::Instruction& instr : stream.instructions()) {
      if (instr.opcode() == proto::MEMSET &&
          *ops::FloatAttr(instr, "value") == 1.0) {
        ones.insert(OperandOf(instr, "dst").tensor_id());
      }
      if (instr.opcode() == proto::NC_MATMUL &&
          ones.contains(OperandOf(instr, "stationary").tensor_id())) {
        ++ones_matmuls;
      }
      if (instr.opcode() == proto::ACTIVATION &&
          *ops::StrAttr(instr, "func") == "rsqrt" &&
          *ops::FloatAttr(instr, "bias") == static_cast<float>(p.rmsnorm_eps)) {
        ++rsqrt_with_eps;
      }
    }
  }
  // On each core: one matmul per H tile of its 256 columns (two tiles).
  EXPECT_EQ(ones_matmuls, 2 * 2);
  EXPECT_EQ(rsqrt_with_eps, 2);
}

TEST(AttentionBlockTkgTest, CacheUpdateIsOneDynamicOffsetDmaPerPairAndCache) {
  const AttentionParams p;  // B = 2, kv_heads = 2: four pairs
  const proto::Graph g = TraceOk(p);
  int dynamic_writes = 0;
  for (const proto::Stream& stream : g.streams()) {
    for (const proto::Instruction& instr : stream.instructions()) {
      if (instr.opcode() != proto::DMA_COPY) continue;
      const proto::AccessPattern& dst = OperandOf(instr, "dst");
      const std::string& name = TensorOf(g, dst).name();
      if (name != "K_cache" && name != "V_cache") continue;
      // Every write of a cache goes through the offset of cache_position.
      EXPECT_EQ(dst.dynamic().kind(), proto::DynamicOffset::VECTOR);
      EXPECT_EQ(dst.dynamic().indirect_dim(), 2u);
      ++dynamic_writes;
    }
  }
  EXPECT_EQ(dynamic_writes, 2 * p.batch * p.kv_heads);
}

TEST(AttentionBlockTkgTest, ScoresStayWithinOneCacheTile) {
  AttentionParams p;
  p.cache_len = 1000;
  const proto::Graph g = TraceOk(p);
  // No on-chip score row as wide as the cache: the softmax runs tile by
  // tile (128 positions), so no exp sees more than 128 columns.
  int exps = 0;
  for (const proto::Stream& stream : g.streams()) {
    for (const proto::Instruction& instr : stream.instructions()) {
      if (instr.opcode() != proto::ACTIVATION ||
          *ops::StrAttr(instr, "func") != "exp") {
        continue;
      }
      const proto::Tensor& t = TensorOf(g, OperandOf(instr, "data"));
      int64_t columns = 1;
      for (int i = 1; i < t.shape_size(); ++i) columns *= t.shape(i);
      EXPECT_LE(columns, 128) << t.name();
      ++exps;
    }
  }
  // Two exps (the scores and the correction) per block of keys: the
  // active tokens and 8 cache tiles, for each of the 4 pairs.
  EXPECT_EQ(exps, 2 * (1 + 8) * 4);
}

TEST(AttentionBlockTkgTest, RefusesMoreQueryRowsThanPartitions) {
  absl::StatusOr<proto::Graph> graph = KernelRegistry::Global().Trace(
      "attention_block_tkg",
      {{"batch", "8"}, {"seq_tkg", "4"}, {"q_heads", "8"}, {"kv_heads", "2"}});
  ASSERT_FALSE(graph.ok());
  EXPECT_THAT(graph.status().message(), HasSubstr("B·S·q_heads"));
  EXPECT_THAT(graph.status().message(), HasSubstr("256"));
  EXPECT_THAT(graph.status().message(), HasSubstr("limit of 128"));
}

TEST(AttentionBlockTkgTest, CachePositionOutOfRangeIsAnErrorNamingTheDma) {
  AttentionParams p;
  p.dtype = kF32;
  const proto::Graph g = TraceOk(p);
  for (const int32_t bad :
       {static_cast<int32_t>(p.cache_len - p.seq_tkg + 1), int32_t{-1}}) {
    SCOPED_TRACE(bad);
    std::vector<HostArray> inputs = InputsFor(p, 5);
    Find(inputs, "cache_position").i32[1] = bad;
    absl::StatusOr<Outputs> got = testing::RunGraph(g, inputs);
    ASSERT_FALSE(got.ok());
    EXPECT_THAT(got.status().message(), HasSubstr("dma_copy"));
    EXPECT_THAT(got.status().message(), HasSubstr("instruction #"));
    EXPECT_THAT(got.status().message(), HasSubstr("attention_tkg.cc"));
    EXPECT_THAT(got.status().message(),
                HasSubstr("out-of-bounds dynamic offset"));
  }
}

}  // namespace
}  // namespace nkigraph::kernels
