// transformer_tkg (§3): the layer loop unrolled into one graph, both
// residual paths, tp_degree 1 to 8, against the composition of the leaf
// references, and what the contract says the graph shows.
#include "kernels/transformer_tkg.h"

#include <cstdint>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "builder/jit.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "kernels/registry.h"
#include "ops/instr_facts.h"
#include "proto/nkigraph.pb.h"
#include "tests/decode_test_util.h"
#include "tests/test_util.h"
#include "util/dtype.h"

namespace nkigraph::kernels {
namespace {

using ::testing::HasSubstr;
using testing::Outputs;
using Settings = std::vector<std::pair<std::string, std::string>>;

constexpr char kKernel[] = "transformer_tkg";

// A small layer: H/2 = 130 columns per core (a tail), GQA 2, a cache
// that is not a tile multiple, I with a tail.
TransformerParams Small(int64_t tp, bool sbuf, proto::DType dtype) {
  TransformerParams p;
  p.batch = 2;
  p.seq_tkg = 2;
  p.hidden = 260;
  p.q_heads = 2;
  p.kv_heads = 1;
  p.head_dim = 64;
  p.cache_len = 40;
  p.intermediate = 136;
  p.num_layers = 2;
  p.tp_degree = tp;
  p.sbuf_residual_and_cc = sbuf;
  p.dtype = dtype;
  return p;
}

Settings SettingsOf(const TransformerParams& p) {
  return {{"batch", absl::StrCat(p.batch)},
          {"seq_tkg", absl::StrCat(p.seq_tkg)},
          {"hidden", absl::StrCat(p.hidden)},
          {"q_heads", absl::StrCat(p.q_heads)},
          {"kv_heads", absl::StrCat(p.kv_heads)},
          {"head_dim", absl::StrCat(p.head_dim)},
          {"cache_len", absl::StrCat(p.cache_len)},
          {"intermediate", absl::StrCat(p.intermediate)},
          {"num_layers", absl::StrCat(p.num_layers)},
          {"tp_degree", absl::StrCat(p.tp_degree)},
          {"sbuf_residual_and_cc", p.sbuf_residual_and_cc ? "1" : "0"},
          {"dtype", p.dtype == proto::FLOAT32 ? "float32" : "bfloat16"}};
}

std::string Describe(const TransformerParams& p) {
  std::string s;
  for (const auto& [k, v] : SettingsOf(p)) absl::StrAppend(&s, k, "=", v, " ");
  return s;
}

proto::Graph TraceOk(const TransformerParams& p) {
  absl::StatusOr<proto::Graph> graph =
      KernelRegistry::Global().Trace(kKernel, SettingsOf(p));
  EXPECT_TRUE(graph.ok()) << graph.status();
  return graph.ok() ? *std::move(graph) : proto::Graph();
}

HostArrays InputsOk(const TransformerParams& p, uint64_t seed) {
  HostOutputs inputs = MakeTransformerTkgInputs(p, seed);
  EXPECT_TRUE(inputs.ok()) << inputs.status();
  return inputs.ok() ? *std::move(inputs) : HostArrays();
}

// --- Against the reference --------------------------------------------------

// The interpreted graph against the composed leaf references, at the
// kernel's tolerance.
void ExpectMatchesReference(const TransformerParams& p, uint64_t seed) {
  SCOPED_TRACE(Describe(p));
  const HostArrays inputs = InputsOk(p, seed);
  const Outputs got = testing::RunOk(TraceOk(p), inputs);
  HostOutputs want = TransformerTkgReference(p, inputs);
  ASSERT_TRUE(want.ok()) << want.status();
  ASSERT_EQ(want->size(), 3u);
  testing::ExpectAllCloseToScale(got, *want, TransformerTkgSpec().tolerance(p));
}

// tp 1, 2, 4, 8 each with both paths across the cases, both dtypes on
// each path, GQA 1 and 2 (pairwise, not the product).
TEST(TransformerTkgTest, InterpretedGraphMatchesReference) {
  std::vector<TransformerParams> cases = {
      Small(1, false, proto::FLOAT32),  Small(1, true, proto::BFLOAT16),
      Small(2, false, proto::BFLOAT16), Small(2, true, proto::FLOAT32),
      Small(4, true, proto::BFLOAT16),  Small(8, false, proto::FLOAT32),
  };
  cases[4].kv_heads = 2;  // GQA 1
  cases[5].num_layers = 1;
  uint64_t seed = 1;
  for (const TransformerParams& p : cases) ExpectMatchesReference(p, seed++);
}

// B·S = 1 (one user's one new token), where every head after the first
// came out wrong: tp 1, 4 and 8 on
// both residual paths, both dtypes between them.
TEST(TransformerTkgTest, OneTokenOfOneSequenceMatchesReference) {
  uint64_t seed = 21;
  for (const int64_t tp : {1, 4, 8}) {
    for (const bool sbuf : {false, true}) {
      TransformerParams p =
          Small(tp, sbuf, sbuf == (tp == 4) ? proto::FLOAT32 : proto::BFLOAT16);
      p.num_layers = 1;
      p.batch = 1;
      p.seq_tkg = 1;
      p.hidden = 256;
      p.kv_heads = 2;
      p.intermediate = 96;
      ExpectMatchesReference(p, seed++);
    }
  }
}

// The HBM and SBUF paths give identical bits: every value is produced by
// the same instruction on the same operand values in the same dtype on
// both (block outputs rounded to dtype, the all-reduce summing in group
// order, the residual add rounded to dtype); only where operands live
// differs, and the moves between places (DMA, PE transposes, sendrecv)
// are bit-exact.
TEST(TransformerTkgTest, ResidualPathsAgreeBitForBit) {
  for (const TransformerParams& base :
       {Small(2, false, proto::BFLOAT16), Small(1, false, proto::FLOAT32)}) {
    TransformerParams sbuf = base;
    sbuf.sbuf_residual_and_cc = true;
    SCOPED_TRACE(Describe(base));
    const HostArrays inputs = InputsOk(base, 5);
    const Outputs via_hbm = testing::RunOk(TraceOk(base), inputs);
    const Outputs via_sbuf = testing::RunOk(TraceOk(sbuf), inputs);
    for (const char* name : {"out", "K_cache", "V_cache"}) {
      ASSERT_TRUE(via_hbm.contains(name) && via_sbuf.contains(name)) << name;
      EXPECT_EQ(via_hbm.at(name).f32, via_sbuf.at(name).f32) << name;
    }
  }
}

// --- What the graph shows ---------------------------------------------------

// The loop unrolls: the instruction count is a + b·L exactly, per core and
// on each path.
TEST(TransformerTkgTest, InstructionCountIsExactlyLinearInLayers) {
  for (bool sbuf : {false, true}) {
    std::vector<int64_t> counts;
    for (int64_t layers = 1; layers <= 4; ++layers) {
      TransformerParams p = Small(2, sbuf, proto::BFLOAT16);
      p.num_layers = layers;
      counts.push_back(testing::InstructionCount(TraceOk(p)));
    }
    SCOPED_TRACE(sbuf ? "sbuf" : "hbm");
    const int64_t slope = counts[1] - counts[0];
    EXPECT_GT(slope, 0);
    EXPECT_EQ(counts[2] - counts[1], slope);
    EXPECT_EQ(counts[3] - counts[2], slope);
  }
}

// Every instruction sits under transformer_tkg/, and each layer holds the
// two leaf kernels as inlined scopes; no nested transformer_tkg.
TEST(TransformerTkgTest, LeafKernelsAreInlinedAsScopesPerLayer) {
  const TransformerParams p = Small(2, false, proto::BFLOAT16);
  const proto::Graph graph = TraceOk(p);
  EXPECT_EQ(graph.kernel_name(), kKernel);
  std::set<std::string> leaf_scopes;
  for (const proto::Stream& s : graph.streams()) {
    for (const proto::Instruction& instr : s.instructions()) {
      const std::string& scope = testing::ScopeOf(graph, instr);
      ASSERT_TRUE(absl::StartsWith(scope, "transformer_tkg/layer")) << scope;
      // The composer's own scope once: no nested trace of it.
      EXPECT_EQ(scope.rfind("transformer_tkg/"), 0u) << scope;
      for (int64_t l = 0; l < p.num_layers; ++l) {
        for (const char* leaf : {"attention_block_tkg", "mlp_tkg"}) {
          const std::string prefix =
              absl::StrCat("transformer_tkg/layer", l, "/", leaf, "/");
          if (absl::StartsWith(scope, prefix)) {
            leaf_scopes.insert(absl::StrCat("layer", l, "/", leaf));
          }
        }
      }
    }
  }
  EXPECT_EQ(leaf_scopes, (std::set<std::string>{
                             "layer0/attention_block_tkg", "layer0/mlp_tkg",
                             "layer1/attention_block_tkg", "layer1/mlp_tkg"}));
}

// The all-reduces of each core, by layer.
std::vector<std::vector<const proto::Instruction*>> AllReducesByLayer(
    const proto::Graph& graph, const proto::Stream& stream, int64_t layers) {
  std::vector<std::vector<const proto::Instruction*>> by_layer(layers);
  for (const proto::Instruction& instr : stream.instructions()) {
    if (instr.opcode() != proto::ALL_REDUCE) continue;
    const std::string& scope = testing::ScopeOf(graph, instr);
    for (int64_t l = 0; l < layers; ++l) {
      if (absl::StartsWith(scope,
                           absl::StrCat("transformer_tkg/layer", l, "/"))) {
        by_layer[l].push_back(&instr);
      }
    }
  }
  return by_layer;
}

// Two all-reduce steps per layer, each one all_reduce per core over its
// [T, H/2] shard (in SBUF on the SBUF path, in HBM on the other); none with
// one rank.
TEST(TransformerTkgTest, TwoAllReducesPerLayerPerCoreOnItsShard) {
  for (const TransformerParams& p :
       {Small(4, true, proto::BFLOAT16), Small(2, false, proto::FLOAT32),
        Small(1, true, proto::BFLOAT16)}) {
    SCOPED_TRACE(Describe(p));
    const proto::Graph graph = TraceOk(p);
    ASSERT_EQ(graph.streams_size(), 2);
    for (const proto::Stream& s : graph.streams()) {
      const auto by_layer = AllReducesByLayer(graph, s, p.num_layers);
      for (int64_t l = 0; l < p.num_layers; ++l) {
        ASSERT_EQ(by_layer[l].size(), p.tp_degree > 1 ? 2u : 0u)
            << "layer " << l << " core " << s.core();
        for (const proto::Instruction* ar : by_layer[l]) {
          const proto::AccessPattern& src = testing::OperandOf(*ar, "src");
          const proto::Tensor& t = testing::TensorOf(graph, src);
          EXPECT_EQ(t.space() == proto::SBUF, p.sbuf_residual_and_cc);
          EXPECT_EQ(testing::TouchedElements(src).size(),
                    static_cast<size_t>(p.tokens() * p.hidden / 2));
        }
      }
      EXPECT_EQ(testing::CountOpcode(s, proto::ALL_REDUCE),
                p.tp_degree > 1 ? 2 * p.num_layers : 0);
    }
  }
}

// HBM bytes each instruction writes, by tensor name.
std::map<std::string, int64_t> HbmBytesWritten(const proto::Graph& graph,
                                               absl::string_view scope_prefix) {
  std::map<std::string, int64_t> bytes;
  for (const proto::Stream& s : graph.streams()) {
    for (const proto::Instruction& instr : s.instructions()) {
      if (!absl::StartsWith(testing::ScopeOf(graph, instr), scope_prefix)) {
        continue;
      }
      for (int i = 0; i < instr.operands_size(); ++i) {
        if (!ops::WritesOperand(instr, i)) continue;
        const proto::AccessPattern& ap = instr.operands(i);
        if (ap.tensor_id() == 0) continue;
        const proto::Tensor& t = testing::TensorOf(graph, ap);
        if (!testing::IsHbmSpace(t.space())) continue;
        int64_t elements = 1;
        for (int k = 1; k < ap.pattern_size(); k += 2)
          elements *= ap.pattern(k);
        bytes[t.name()] += elements * DTypeSize(t.dtype());
      }
    }
  }
  return bytes;
}

// On the SBUF path a layer writes to HBM only its KV-cache updates, and
// the last layer its [B, S, H] output once; the HBM path also writes the
// block outputs, the all-reduced sums and the residual, so more bytes.
TEST(TransformerTkgTest, SbufPathWritesOnlyCachesAndOneOutputToHbm) {
  TransformerParams p = Small(2, true, proto::BFLOAT16);
  p.num_layers = 3;
  const proto::Graph sbuf = TraceOk(p);
  TransformerParams q = p;
  q.sbuf_residual_and_cc = false;
  const proto::Graph hbm = TraceOk(q);
  const int64_t out_bytes = p.tokens() * p.hidden * 2;
  for (int64_t l = 0; l < p.num_layers; ++l) {
    SCOPED_TRACE(absl::StrCat("layer ", l));
    const std::string layer = absl::StrCat("transformer_tkg/layer", l, "/");
    const auto written = HbmBytesWritten(sbuf, layer);
    std::set<std::string> names;
    for (const auto& [name, n] : written) names.insert(name);
    std::set<std::string> want = {"K_cache", "V_cache"};
    if (l + 1 == p.num_layers) want.insert("out");
    EXPECT_EQ(names, want);
    if (l + 1 == p.num_layers) {
      EXPECT_EQ(written.at("out"), out_bytes);
    }
    int64_t sbuf_total = 0, hbm_total = 0;
    for (const auto& [name, n] : written) sbuf_total += n;
    const auto hbm_written = HbmBytesWritten(hbm, layer);
    for (const auto& [name, n] : hbm_written) hbm_total += n;
    EXPECT_LT(sbuf_total, hbm_total);
    // The caches are written alike on both paths.
    EXPECT_EQ(written.at("K_cache"), hbm_written.at("K_cache"));
    EXPECT_TRUE(hbm_written.contains("block_out"));
    EXPECT_TRUE(hbm_written.contains("all_reduced"));
  }
  // On the SBUF path the caches and out are all HBM ever receives.
  std::set<std::string> written_anywhere;
  for (const auto& [name, bytes] : HbmBytesWritten(sbuf, "")) {
    written_anywhere.insert(name);
  }
  EXPECT_EQ(written_anywhere,
            (std::set<std::string>{"K_cache", "V_cache", "out"}));
}

// --- Refusals
// -----------------------------------------------------------------

// jit(jit(composer)) fails at trace time naming the composer.
TEST(TransformerTkgTest, WrappingTheComposerInJitTwiceFailsNamingIt) {
  const TransformerParams p = Small(1, false, proto::BFLOAT16);
  absl::StatusOr<proto::Graph> graph = TransformerTkgSpec().Trace(
      p, [](KernelIo& io, const TransformerParams& params) {
        const TransformerInputs in = DeclareTransformerInputs(io);
        const builder::Tensor out = io.Output("out");
        builder::jit("transformer_tkg",
                     builder::jit("transformer_tkg", TransformerTkg))(in, out,
                                                                      params);
      });
  ASSERT_FALSE(graph.ok());
  EXPECT_THAT(graph.status().message(), HasSubstr("'transformer_tkg'"));
  EXPECT_THAT(graph.status().message(), HasSubstr("wrapped by jit twice"));
}

TEST(TransformerTkgTest, TooManyQueryRowsAreRefusedNamingTheLimit) {
  absl::StatusOr<proto::Graph> graph = KernelRegistry::Global().Trace(
      kKernel,
      {{"batch", "4"}, {"seq_tkg", "4"}, {"q_heads", "16"}, {"kv_heads", "2"}});
  ASSERT_FALSE(graph.ok());
  EXPECT_THAT(graph.status().message(), HasSubstr("B·S·q_heads"));
  EXPECT_THAT(graph.status().message(),
              HasSubstr("= 256 exceeds the limit of 128"));
}

}  // namespace
}  // namespace nkigraph::kernels
