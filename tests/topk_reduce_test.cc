// topk_reduce: the interpreted graph against the reference and against
// hand-worked sums (bf16 rounding after each add, the first K rows in row
// order, tokens without rows, padding, out-of-range indices), the
// mechanism KERNELS.md says the graph must show, and the refusals.
#include "kernels/topk_reduce.h"

#include <algorithm>
#include <cstdint>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "kernels/registry.h"
#include "ops/access_pattern.h"
#include "ops/instr_facts.h"
#include "tests/test_util.h"
#include "util/dtype.h"

namespace nkigraph::kernels {
namespace {

using nkigraph::testing::InstructionsOf;
using nkigraph::testing::TensorOf;
using ::testing::ElementsAreArray;
using ::testing::HasSubstr;
using Settings = std::vector<std::pair<std::string, std::string>>;

Settings SettingsOf(const TopkReduceParams& p) {
  return {{"num_tokens", absl::StrCat(p.num_tokens)},
          {"top_k", absl::StrCat(p.top_k)},
          {"hidden", absl::StrCat(p.hidden)},
          {"rows", absl::StrCat(p.rows)}};
}

std::string Describe(const TopkReduceParams& p) {
  return absl::StrCat("T=", p.num_tokens, " K=", p.top_k, " H=", p.hidden,
                      " R=", p.rows);
}

// One row of the sparse buffer: its token index and its H values (exact in
// bf16).
struct Row {
  int32_t index;
  std::vector<float> values;
};

HostArray PackRows(const TopkReduceParams& p, const std::vector<Row>& rows) {
  HostArray input;
  input.name = "input";
  input.dtype = proto::UINT16;
  input.shape = {p.rows, p.hidden + 2};
  input.u16.assign(p.rows * (p.hidden + 2), 0);
  for (int64_t r = 0; r < p.rows; ++r) {
    uint16_t* row = &input.u16[r * (p.hidden + 2)];
    for (int64_t h = 0; h < p.hidden; ++h) {
      row[h] = FloatToBf16(rows[r].values[h]);
      EXPECT_EQ(Bf16ToFloat(row[h]), rows[r].values[h]) << "not exact in bf16";
    }
    const uint32_t packed = static_cast<uint32_t>(rows[r].index);
    row[p.hidden] = static_cast<uint16_t>(packed & 0xFFFF);
    row[p.hidden + 1] = static_cast<uint16_t>(packed >> 16);
  }
  return input;
}

absl::StatusOr<proto::Graph> Trace(const TopkReduceParams& p) {
  return KernelRegistry::Global().Trace("topk_reduce", SettingsOf(p));
}

// The output's raw bf16 bits after tracing and running on `input`.
absl::StatusOr<std::vector<uint16_t>> RunKernel(const TopkReduceParams& p,
                                                const HostArray& input) {
  absl::StatusOr<proto::Graph> graph = Trace(p);
  if (!graph.ok()) return graph.status();
  absl::StatusOr<std::unique_ptr<interp::Interpreter>> interp =
      interp::Interpreter::Create(*graph);
  if (!interp.ok()) return interp.status();
  if (absl::Status s = (*interp)->SetInput(input); !s.ok()) return s;
  if (absl::Status s = (*interp)->Run(); !s.ok()) return s;
  absl::StatusOr<HostArray> out =
      (*interp)->GetOutput("output", interp::Interpreter::HostForm::kRawBits16);
  if (!out.ok()) return out.status();
  return out->u16;
}

std::vector<uint16_t> Bits(const std::vector<float>& values) {
  std::vector<uint16_t> bits;
  for (float v : values) bits.push_back(FloatToBf16(v));
  return bits;
}

// Rows of the hand-worked case, T = 3, H = 4: token 0 has rows 2, 4, 7;
// token 1 rows 0, 3, 5; token 2 none; row 1 pads, row 6 names token 3
// (= T), row 8 has token 1's low bits with high bits set.
std::vector<Row> HandRows() {
  return {
      {1, {1, 2, 3, 4}},           // 0
      {-1, {100, 100, 100, 100}},  // 1 padding
      {0, {256, 256, 0.5, -1}},    // 2
      {1, {10, 20, 30, 40}},       // 3
      {0, {1, 1, 0.5, 1}},         // 4
      {1, {1000, 0, 0, 0}},        // 5
      {3, {7, 7, 7, 7}},           // 6 out of range (T)
      {0, {1, 1, 1, 1}},           // 7
      {0x10001, {9, 9, 9, 9}},     // 8 out of range (high bits)
  };
}

TEST(TopkReduceTest, HandWorkedSumsTakeTheFirstKRowsRoundingEachAdd) {
  TopkReduceParams p{.num_tokens = 3, .top_k = 2, .hidden = 4, .rows = 9};
  const HostArray input = PackRows(p, HandRows());
  // K = 2: token 0 = row 2 + row 4: 256 + 1 is 257, which bf16 rounds to
  // 256 (to even); token 1 = row 0 + row 3; token 2 has no rows.
  const std::vector<float> want2 = {256, 256, 1, 0, 11, 22, 33, 44, 0, 0, 0, 0};
  absl::StatusOr<std::vector<HostArray>> ref = TopkReduceReference(p, {input});
  ASSERT_TRUE(ref.ok()) << ref.status();
  EXPECT_THAT((*ref)[0].f32, ElementsAreArray(want2));
  absl::StatusOr<std::vector<uint16_t>> got = RunKernel(p, input);
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_THAT(*got, ElementsAreArray(Bits(want2)));

  // K = 3: the third rows count too. Token 0's 256 + 1 + 1 stays 256 (a
  // float32 sum rounded once would be 258); token 1's 11 + 1000 = 1011
  // rounds to 1012.
  p.top_k = 3;
  const std::vector<float> want3 = {256, 256, 2, 1, 1012, 22,
                                    33,  44,  0, 0, 0,    0};
  ref = TopkReduceReference(p, {input});
  ASSERT_TRUE(ref.ok()) << ref.status();
  EXPECT_THAT((*ref)[0].f32, ElementsAreArray(want3));
  got = RunKernel(p, input);
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_THAT(*got, ElementsAreArray(Bits(want3)));
}

// The made inputs hold what the contract's cases need.
TEST(TopkReduceTest, MadeInputsMixEveryCase) {
  const TopkReduceParams p{
      .num_tokens = 40, .top_k = 4, .hidden = 8, .rows = 700};
  absl::StatusOr<std::vector<HostArray>> inputs = MakeTopkReduceInputs(p, 7);
  ASSERT_TRUE(inputs.ok()) << inputs.status();
  const HostArray& input = (*inputs)[0];
  ASSERT_EQ(input.dtype, proto::UINT16);
  std::map<int64_t, int> per_token;
  int padding = 0, out_of_range = 0;
  std::vector<int64_t> order;
  for (int64_t r = 0; r < p.rows; ++r) {
    const uint16_t* row = &input.u16[r * (p.hidden + 2)];
    const int32_t index = static_cast<int32_t>(
        row[p.hidden] | (static_cast<uint32_t>(row[p.hidden + 1]) << 16));
    if (index == -1) {
      ++padding;
    } else if (index < 0 || index >= p.num_tokens) {
      ++out_of_range;
    } else {
      ++per_token[index];
      order.push_back(index);
    }
  }
  EXPECT_GT(padding, 0);
  EXPECT_GE(out_of_range, 3);
  int none = 0, more = 0;
  for (int64_t t = 0; t < p.num_tokens; ++t) {
    none += per_token[t] == 0;
    more += per_token[t] > p.top_k;
  }
  EXPECT_GT(none, 0);
  EXPECT_GT(more, 0);
  // Shuffled: the token rows are not in token order.
  EXPECT_FALSE(std::is_sorted(order.begin(), order.end()));
}

class TopkReduceNumericsTest
    : public ::testing::TestWithParam<TopkReduceParams> {};

TEST_P(TopkReduceNumericsTest, InterpretedGraphMatchesTheReferenceBitForBit) {
  const TopkReduceParams& p = GetParam();
  absl::StatusOr<std::vector<HostArray>> inputs = MakeTopkReduceInputs(p, 11);
  ASSERT_TRUE(inputs.ok()) << inputs.status();
  absl::StatusOr<std::vector<HostArray>> want = TopkReduceReference(p, *inputs);
  ASSERT_TRUE(want.ok()) << want.status();
  absl::StatusOr<std::vector<uint16_t>> got = RunKernel(p, (*inputs)[0]);
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_THAT(*got, ElementsAreArray(Bits((*want)[0].f32))) << Describe(p);
}

// Pairwise over the quadrants T spans (1 to 4, T = 32 and 33 at the edge),
// K (1, 2, 8), H/2 odd and even, and R a multiple of the index tile or not
// (up to the limit, 16384).
INSTANTIATE_TEST_SUITE_P(
    Shapes, TopkReduceNumericsTest,
    ::testing::Values(
        TopkReduceParams{.num_tokens = 1, .top_k = 1, .hidden = 2, .rows = 1},
        TopkReduceParams{
            .num_tokens = 40, .top_k = 4, .hidden = 256, .rows = 700},
        TopkReduceParams{
            .num_tokens = 33, .top_k = 2, .hidden = 130, .rows = 512},
        TopkReduceParams{
            .num_tokens = 32, .top_k = 8, .hidden = 6, .rows = 1100},
        TopkReduceParams{
            .num_tokens = 128, .top_k = 8, .hidden = 64, .rows = 1024},
        TopkReduceParams{
            .num_tokens = 100, .top_k = 2, .hidden = 16, .rows = 16384}),
    [](const ::testing::TestParamInfo<TopkReduceParams>& info) {
      const TopkReduceParams& p = info.param;
      return absl::StrCat("T", p.num_tokens, "_K", p.top_k, "_H", p.hidden,
                          "_R", p.rows);
    });

// --- The graph ---------------------------------------------------------------

// The instructions of `core` that write tensor `id`.
std::vector<const proto::Instruction*> Writers(const proto::Graph& graph,
                                               uint32_t id, int core) {
  std::vector<const proto::Instruction*> found;
  for (const proto::Instruction& instr : graph.streams(core).instructions()) {
    for (int i = 0; i < instr.operands_size(); ++i) {
      if (instr.operands(i).tensor_id() == id && ops::WritesOperand(instr, i)) {
        found.push_back(&instr);
        break;
      }
    }
  }
  return found;
}

TEST(TopkReduceGraphTest, IndexMatchAgainstAnIotaThenKGathersPerCoreHalf) {
  const TopkReduceParams p{
      .num_tokens = 40, .top_k = 4, .hidden = 256, .rows = 700};
  absl::StatusOr<proto::Graph> graph = Trace(p);
  ASSERT_TRUE(graph.ok()) << graph.status();
  ASSERT_EQ(graph->world().num_cores(), 2u);
  for (int core = 0; core < 2; ++core) {
    SCOPED_TRACE(absl::StrCat("core ", core));
    // No value top-K anywhere.
    for (const proto::Instruction& instr :
         graph->streams(core).instructions()) {
      EXPECT_NE(instr.opcode(), proto::MAX8);
      EXPECT_THAT(ops::OpcodeName(instr.opcode()),
                  ::testing::Not(HasSubstr("match_replace")));
    }
    // The index column: transposed into SBUF per row tile, read back as
    // int32 through a bitcast, broadcast by a shuffle in both quadrants.
    const auto transposes = InstructionsOf(*graph, proto::DMA_TRANSPOSE, core);
    EXPECT_EQ(transposes.size(), 2u);  // 700 rows in tiles of 512
    std::set<uint32_t> staged;
    for (const auto* transpose : transposes) {
      staged.insert(testing::OperandOf(*transpose, "dst").tensor_id());
    }
    int bitcast_reads = 0;
    for (const auto* copy : InstructionsOf(*graph, proto::TENSOR_COPY, core)) {
      const proto::AccessPattern& src = testing::OperandOf(*copy, "src");
      if (src.view_dtype() == proto::INT32 && staged.count(src.tensor_id())) {
        ++bitcast_reads;
      }
    }
    EXPECT_EQ(bitcast_reads, 2);
    EXPECT_EQ(InstructionsOf(*graph, proto::NC_STREAM_SHUFFLE, core).size(),
              2u);

    // One match: data is the broadcast index, vals the iota of token ids.
    const auto finds = InstructionsOf(*graph, proto::NC_FIND_INDEX8, core);
    ASSERT_EQ(finds.size(), 1u);
    const proto::AccessPattern& data = testing::OperandOf(*finds[0], "data");
    EXPECT_EQ(TensorOf(*graph, data.tensor_id()).shape(0), p.num_tokens);
    EXPECT_EQ(ops::ApElements(data), p.num_tokens * p.rows);
    bool shuffled = false;
    for (const auto* w : Writers(*graph, data.tensor_id(), core)) {
      shuffled |= w->opcode() == proto::NC_STREAM_SHUFFLE;
    }
    EXPECT_TRUE(shuffled);
    const uint32_t vals = testing::OperandOf(*finds[0], "vals").tensor_id();
    const auto vals_writers = Writers(*graph, vals, core);
    ASSERT_EQ(vals_writers.size(), 1u);
    EXPECT_EQ(vals_writers[0]->opcode(), proto::IOTA);
    EXPECT_EQ(testing::IntAttr(*vals_writers[0], "channel_multiplier"), 1);

    // K gathers, column k of the match, accumulated by dma_compute over
    // this core's half of H.
    const uint32_t found = testing::OperandOf(*finds[0], "dst").tensor_id();
    const auto gathers = InstructionsOf(*graph, proto::DMA_COMPUTE, core);
    ASSERT_EQ(gathers.size(), static_cast<size_t>(p.top_k));
    const int64_t half = p.hidden / 2;
    for (int k = 0; k < p.top_k; ++k) {
      EXPECT_EQ(testing::IntAttr(*gathers[k], "accumulate"), 1);
      EXPECT_EQ(testing::StrAttr(*gathers[k], "reduce_op"), "add");
      const proto::AccessPattern& src = testing::OperandOf(*gathers[k], "src");
      EXPECT_EQ(src.dynamic().kind(), proto::DynamicOffset::VECTOR);
      EXPECT_EQ(src.dynamic().oob_mode(), proto::DynamicOffset::OOB_SKIP);
      EXPECT_EQ(src.dynamic().tensor_id(), found);
      EXPECT_EQ(src.dynamic().offset_element(), k);
      EXPECT_EQ(TensorOf(*graph, src.tensor_id()).name(), "input");
      EXPECT_EQ(src.offset(), core * half);  // this core's columns
      EXPECT_EQ(ops::Count(src, ops::NumDims(src) - 1), half);
    }
    // The core writes its half of the output.
    bool wrote_half = false;
    for (const auto* copy : InstructionsOf(*graph, proto::DMA_COPY, core)) {
      const proto::AccessPattern& dst = testing::OperandOf(*copy, "dst");
      if (TensorOf(*graph, dst.tensor_id()).name() == "output") {
        wrote_half = dst.offset() == core * half &&
                     ops::Count(dst, ops::NumDims(dst) - 1) == half;
      }
    }
    EXPECT_TRUE(wrote_half);
  }
}

TEST(TopkReduceGraphTest, RefusalsNameTheParameterAndTheLimit) {
  auto error = [](const TopkReduceParams& p) {
    absl::StatusOr<proto::Graph> graph = Trace(p);
    EXPECT_FALSE(graph.ok()) << Describe(p);
    return graph.ok() ? std::string() : std::string(graph.status().message());
  };
  EXPECT_THAT(error({.num_tokens = 4, .top_k = 2, .hidden = 5, .rows = 8}),
              HasSubstr("parameter 'hidden' is 5; it must be even"));
  EXPECT_THAT(error({.num_tokens = 4, .top_k = 3, .hidden = 4, .rows = 11}),
              HasSubstr("parameter 'rows' is 11; it must be at least "
                        "num_tokens * top_k = 12"));
  EXPECT_THAT(error({.num_tokens = 129, .top_k = 1, .hidden = 4, .rows = 200}),
              HasSubstr("parameter 'num_tokens' is 129"));
  EXPECT_THAT(error({.num_tokens = 4, .top_k = 9, .hidden = 4, .rows = 64}),
              HasSubstr("parameter 'top_k' is 9"));
  EXPECT_THAT(error({.num_tokens = 4, .top_k = 1, .hidden = 4, .rows = 16385}),
              HasSubstr("parameter 'rows' is 16385"));
}

}  // namespace
}  // namespace nkigraph::kernels
