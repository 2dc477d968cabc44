// mlp_tkg (§3), and through it decode_common's shared block stages:
// interpreted graphs against the reference in both dtypes and with tails on
// every tiled dim, both block paths (x and out in HBM, or in SBUF) agreeing
// bit for bit, and what the contract says the graph shows.
#include "kernels/mlp_tkg.h"

#include <cmath>
#include <cstdint>
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
#include "kernels/decode_common.h"
#include "kernels/registry.h"
#include "ops/instr_facts.h"
#include "proto/nkigraph.pb.h"
#include "tests/decode_test_util.h"
#include "tests/test_util.h"

namespace nkigraph::kernels {
namespace {

using ::testing::HasSubstr;
using testing::OperandOf;
using testing::Outputs;
using Settings = std::vector<std::pair<std::string, std::string>>;

MlpParams Params(int64_t B, int64_t S, int64_t H, int64_t I,
                 proto::DType dtype) {
  MlpParams p;
  p.batch = B;
  p.seq_tkg = S;
  p.hidden = H;
  p.intermediate = I;
  p.dtype = dtype;
  return p;
}

Settings SettingsOf(const MlpParams& p) {
  return {{"batch", absl::StrCat(p.batch)},
          {"seq_tkg", absl::StrCat(p.seq_tkg)},
          {"hidden", absl::StrCat(p.hidden)},
          {"intermediate", absl::StrCat(p.intermediate)},
          {"dtype", p.dtype == proto::FLOAT32 ? "float32" : "bfloat16"}};
}

std::string Describe(const MlpParams& p) {
  std::string s;
  for (const auto& [k, v] : SettingsOf(p)) absl::StrAppend(&s, k, "=", v, " ");
  return s;
}

proto::Graph TraceOk(const MlpParams& p) {
  absl::StatusOr<proto::Graph> graph =
      KernelRegistry::Global().Trace("mlp_tkg", SettingsOf(p));
  EXPECT_TRUE(graph.ok()) << graph.status();
  return graph.ok() ? *std::move(graph) : proto::Graph();
}

HostArrays InputsOk(const MlpParams& p, uint64_t seed) {
  HostOutputs inputs = MakeMlpTkgInputs(p, seed);
  EXPECT_TRUE(inputs.ok()) << inputs.status();
  return inputs.ok() ? *std::move(inputs) : HostArrays();
}

// --- The reference, by hand -------------------------------------------------

// H = 2, I = 1, one token: x = [1, −1] has mean square 1, so xn = x·gamma
// = [2, −1] (gamma [2, 1]); g = xn·[1, 1] = 1, u = xn·[1, 0] = 2;
// silu(1)·2 = 2/(1 + e^−1); out = that · [1, −2].
TEST(MlpTkgReferenceTest, MatchesHandComputedValues) {
  MlpParams p = Params(1, 1, 2, 1, proto::FLOAT32);
  p.rmsnorm_eps = 1e-6;
  const HostArrays inputs = {
      testing::Floats("X", {1, 1, 2}, {1, -1}),
      testing::Floats("rmsnorm_gamma", {2}, {2, 1}),
      testing::Floats("W_gate_up", {2, 2, 1}, {1, 1, 1, 0}),
      testing::Floats("W_down", {1, 2}, {1, -2}),
  };
  HostOutputs out = MlpTkgReference(p, inputs);
  ASSERT_TRUE(out.ok()) << out.status();
  ASSERT_EQ(out->size(), 1u);
  const double rstd = 1.0 / std::sqrt(1.0 + 1e-6);
  const double g = rstd * (2 - 1), u = rstd * 2;
  const double m = g / (1 + std::exp(-g)) * u;
  EXPECT_NEAR((*out)[0].f32[0], m, 1e-6);
  EXPECT_NEAR((*out)[0].f32[1], -2 * m, 1e-6);
  EXPECT_NEAR(m, 2.0 / (1 + std::exp(-1.0)), 1e-5);
}

TEST(MlpTkgReferenceTest, MisshapenInputIsNamed) {
  const MlpParams p = Params(1, 1, 2, 1, proto::FLOAT32);
  const HostArrays inputs = {
      testing::Floats("X", {1, 1, 3}, {1, -1, 0}),
      testing::Floats("rmsnorm_gamma", {2}, {2, 1}),
      testing::Floats("W_gate_up", {2, 2, 1}, {1, 1, 1, 0}),
      testing::Floats("W_down", {1, 2}, {1, -2}),
  };
  HostOutputs out = MlpTkgReference(p, inputs);
  ASSERT_FALSE(out.ok());
  EXPECT_THAT(out.status().message(), HasSubstr("X"));
}

// --- Against the reference --------------------------------------------------

// Pairwise over the tiled dims, each dtype on both sides: the defaults; a
// shard of 130 columns (one full tile and a tail of 2) and I with a tail;
// H/2 = 550 > 512 (two output tiles), 2I = 1200 (three projection tiles)
// and I = 600 (a tail of 88); T = 128 tokens on one tile.
std::vector<MlpParams> Cases() {
  return {
      Params(2, 2, 512, 384, proto::FLOAT32),
      Params(2, 2, 512, 384, proto::BFLOAT16),
      Params(1, 3, 260, 136, proto::FLOAT32),
      Params(3, 1, 260, 136, proto::BFLOAT16),
      Params(3, 1, 1100, 600, proto::FLOAT32),
      Params(1, 2, 1100, 600, proto::BFLOAT16),
      Params(16, 8, 64, 40, proto::BFLOAT16),
      Params(64, 2, 66, 130, proto::FLOAT32),
  };
}

TEST(MlpTkgTest, InterpretedGraphMatchesReference) {
  uint64_t seed = 1;
  for (const MlpParams& p : Cases()) {
    SCOPED_TRACE(Describe(p));
    const proto::Graph graph = TraceOk(p);
    const HostArrays inputs = InputsOk(p, seed++);
    const Outputs got = testing::RunOk(graph, inputs);
    HostOutputs want = MlpTkgReference(p, inputs);
    ASSERT_TRUE(want.ok()) << want.status();
    testing::ExpectAllCloseToScale(got, *want, ScaleTolerance(p.dtype));
  }
}

// The tolerance is not slack: a reference without the norm's gamma is far
// outside it.
TEST(MlpTkgTest, ComparisonDetectsAWrongReference) {
  const MlpParams p = Params(2, 2, 260, 136, proto::FLOAT32);
  const proto::Graph graph = TraceOk(p);
  HostArrays inputs = InputsOk(p, 3);
  const Outputs got = testing::RunOk(graph, inputs);
  for (HostArray& a : inputs) {
    if (a.name == "rmsnorm_gamma") std::fill(a.f32.begin(), a.f32.end(), 1.0f);
  }
  HostOutputs wrong = MlpTkgReference(p, inputs);
  ASSERT_TRUE(wrong.ok());
  absl::StatusOr<OutputComparison> c = CompareOutput(
      got.at("out"), (*wrong)[0], Comparison::kScale, ScaleTolerance(p.dtype));
  ASSERT_TRUE(c.ok());
  EXPECT_GT(c->failures, 0);
}

// --- The SBUF path
// ------------------------------------------------------------

// The kernel with x and out in SBUF, as a composer's SBUF path calls it:
// X loaded whole into SBUF on each core, out left as this core's [T, H/2]
// shard, then written out by the test body.
void TraceSbufPath(KernelIo& io, const MlpParams& p) {
  const int64_t t = p.tokens(), H = p.hidden;
  const builder::Tensor x = io.Input("X").Reshape({t, H});
  MlpWeights w;
  w.gamma = io.Input("rmsnorm_gamma");
  w.w_gate_up = io.Input("W_gate_up");
  w.w_down = io.Input("W_down");
  const builder::Tensor out = io.Output("out").Reshape({t, H});
  const CoreShard h = HiddenShard(p);
  builder::Tensor x_sb =
      builder::ndarray({t, H}, p.dtype, builder::Buffer::kSbuf, "x_sb");
  builder::isa::dma_copy(x_sb, x);
  builder::Tensor out_sb =
      builder::ndarray({t, h.size}, p.dtype, builder::Buffer::kSbuf, "out_sb");
  builder::jit("mlp_tkg", MlpTkg)(BlockIo{x_sb, out_sb}, w, p);
  builder::isa::dma_copy(out.Slice(1, h.offset, h.size), out_sb);
}

// The same arithmetic in the same order on both paths: only the load of xT
// (a transposing DMA from HBM, or tensor-engine transposes of the SBUF
// residual, both bit-exact) and the store of the output tiles differ.
TEST(MlpTkgTest, SbufPathAgreesWithHbmPathBitForBit) {
  for (const MlpParams& p : {Params(2, 2, 1100, 136, proto::BFLOAT16),
                             Params(3, 1, 260, 600, proto::FLOAT32)}) {
    SCOPED_TRACE(Describe(p));
    absl::StatusOr<proto::Graph> sbuf = MlpTkgSpec().Trace(p, TraceSbufPath);
    ASSERT_TRUE(sbuf.ok()) << sbuf.status();
    const HostArrays inputs = InputsOk(p, 11);
    const Outputs via_sbuf = testing::RunOk(*sbuf, inputs);
    const Outputs via_hbm = testing::RunOk(TraceOk(p), inputs);
    ASSERT_TRUE(via_sbuf.contains("out") && via_hbm.contains("out"));
    EXPECT_EQ(via_sbuf.at("out").f32, via_hbm.at("out").f32);
    int64_t transposes = 0;
    for (const proto::Stream& s : sbuf->streams()) {
      transposes += testing::CountOpcode(s, proto::NC_TRANSPOSE);
    }
    // The residual's re-layout: the xT tiles are transposed on chip.
    EXPECT_GT(transposes, 0);
  }
}

// --- What the graph shows ---------------------------------------------------

// Nothing but `out` is written to HBM: the normalised X, the projections
// and the SwiGLU product stay on chip.
TEST(MlpTkgTest, NothingNormalisedIsWrittenToHbm) {
  const proto::Graph graph = TraceOk(Params(2, 2, 1100, 600, proto::BFLOAT16));
  int64_t out_writes = 0;
  for (const proto::Stream& s : graph.streams()) {
    for (const proto::Instruction& instr : s.instructions()) {
      if (instr.opcode() != proto::DMA_COPY) continue;
      const proto::Tensor& dst =
          testing::TensorOf(graph, OperandOf(instr, "dst"));
      if (!testing::IsHbmSpace(dst.space())) continue;
      EXPECT_EQ(dst.name(), "out") << "instruction " << instr.id();
      ++out_writes;
    }
  }
  // Each core writes its two output tiles (550 columns: 512 + 38).
  EXPECT_EQ(out_writes, 4);
}

// The norm: squares summed by a matmul whose stationary operand is all
// ones; rstd by one rsqrt activation with eps as its bias and 1/H as its
// scale, per core; the partial sums exchanged by a sendrecv.
TEST(MlpTkgTest, RmsNormIsAOnesMatmulAndAnRsqrtActivation) {
  MlpParams p = Params(2, 2, 512, 384, proto::BFLOAT16);
  p.rmsnorm_eps = 1e-5;
  Settings settings = SettingsOf(p);
  settings.emplace_back("rmsnorm_eps", "1e-05");
  absl::StatusOr<proto::Graph> graph =
      KernelRegistry::Global().Trace("mlp_tkg", settings);
  ASSERT_TRUE(graph.ok()) << graph.status();
  for (const proto::Stream& s : graph->streams()) {
    SCOPED_TRACE(absl::StrCat("core ", s.core()));
    int64_t ones_matmuls = 0, rsqrts = 0, sendrecvs = 0;
    std::set<uint32_t> ones_ids;
    for (const proto::Instruction& instr : s.instructions()) {
      if (instr.opcode() == proto::MEMSET) {
        const proto::Tensor& t =
            testing::TensorOf(*graph, OperandOf(instr, "dst"));
        if (t.name() == "ones" &&
            ops::FloatAttr(instr, "value").value_or(0) == 1.0) {
          ones_ids.insert(t.id());
        }
      }
      if (instr.opcode() == proto::NC_MATMUL &&
          ones_ids.contains(OperandOf(instr, "stationary").tensor_id())) {
        ++ones_matmuls;
      }
      if (instr.opcode() == proto::ACTIVATION &&
          ops::StrAttr(instr, "func").value_or("") == "rsqrt") {
        ++rsqrts;
        EXPECT_NEAR(ops::FloatAttr(instr, "bias").value_or(0), 1e-5, 1e-12);
        EXPECT_NEAR(ops::FloatAttr(instr, "scale").value_or(0), 1.0 / 512,
                    1e-9);
      }
      sendrecvs += instr.opcode() == proto::SENDRECV;
    }
    // 256 columns per core: two tiles of squares summed.
    EXPECT_EQ(ones_matmuls, 2);
    EXPECT_EQ(rsqrts, 1);
    // One exchange for the norm, one for the gate/up projection.
    EXPECT_EQ(sendrecvs, 2);
  }
}

// H split: each core reads X, gamma and W_gate_up rows only of its half
// and writes only its half of out's columns; W_down's columns likewise.
TEST(MlpTkgTest, EachCoreTouchesOnlyItsHalfOfH) {
  const MlpParams p = Params(2, 1, 260, 136, proto::FLOAT32);
  const int64_t H = p.hidden, I = p.intermediate;
  const proto::Graph graph = TraceOk(p);
  ASSERT_EQ(graph.streams_size(), 2);
  for (const proto::Stream& s : graph.streams()) {
    const int64_t lo = s.core() * H / 2, hi = lo + H / 2;
    std::set<std::string> seen;
    for (const proto::Instruction& instr : s.instructions()) {
      if (instr.opcode() != proto::DMA_COPY) continue;
      for (const char* role : {"src", "dst"}) {
        const proto::AccessPattern& ap = OperandOf(instr, role);
        const proto::Tensor& t = testing::TensorOf(graph, ap);
        if (!testing::IsHbmSpace(t.space())) continue;
        seen.insert(t.name());
        for (int64_t e : testing::TouchedElements(ap)) {
          int64_t h = -1;
          if (t.name() == "X" || t.name() == "out" || t.name() == "W_down") {
            h = e % H;
          } else if (t.name() == "rmsnorm_gamma") {
            h = e;
          } else if (t.name() == "W_gate_up") {
            h = e / (2 * I);
          }
          ASSERT_TRUE(h >= lo && h < hi)
              << t.name() << " element " << e << " on core " << s.core();
        }
      }
    }
    EXPECT_EQ(seen, (std::set<std::string>{"X", "rmsnorm_gamma", "W_gate_up",
                                           "W_down", "out"}));
  }
}

// --- Refusals
// -----------------------------------------------------------------

TEST(MlpTkgTest, OddHiddenAndTooManyTokensAreRefusedNamingTheLimit) {
  absl::StatusOr<proto::Graph> odd =
      KernelRegistry::Global().Trace("mlp_tkg", {{"hidden", "511"}});
  ASSERT_FALSE(odd.ok());
  EXPECT_THAT(odd.status().message(), HasSubstr("'hidden' is 511"));
  EXPECT_THAT(odd.status().message(), HasSubstr("even"));
  absl::StatusOr<proto::Graph> many = KernelRegistry::Global().Trace(
      "mlp_tkg", {{"batch", "65"}, {"seq_tkg", "2"}});
  ASSERT_FALSE(many.ok());
  EXPECT_THAT(many.status().message(), HasSubstr("B·S"));
  EXPECT_THAT(many.status().message(),
              HasSubstr("= 130 exceeds the limit of 128"));
}

}  // namespace
}  // namespace nkigraph::kernels
