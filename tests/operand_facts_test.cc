// Operand facts (ops/operand_facts.h), worked out once per decoded operand:
// where the rows an access pattern lays out lie agrees, element by
// element, with the byte offsets the interpreter computes for each element
// in turn (DeviceMemory::ByteOffset over the pattern's odometer), on odd
// patterns; patterns that are not rows are refused. Then what the
// interpreter does with them: an in-place write that overlaps its source
// at another offset still reads the old values, and reads of never-written
// bytes through the row path still name the instruction and the element.
#include "ops/operand_facts.h"

#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "interp/device_memory.h"
#include "tests/test_util.h"
#include "util/dtype.h"

namespace nkigraph {
namespace {

using builder::Buffer;
using builder::Tensor;
using builder::Tracer;
namespace isa = builder::isa;
using testing::Floats;
using ::testing::HasSubstr;
using testing::RunGraph;
using testing::Trace1;

proto::Tensor MakeTensor(proto::MemorySpace space, proto::DType dtype,
                         std::vector<int64_t> shape, int64_t address,
                         int64_t partition_offset = 0) {
  proto::Tensor t;
  t.set_id(1);
  t.set_name("t");
  t.set_space(space);
  t.set_dtype(dtype);
  for (int64_t d : shape) t.add_shape(d);
  t.set_address(address);
  t.set_partition_offset(partition_offset);
  return t;
}

proto::AccessPattern MakeAp(int64_t offset,
                            std::vector<std::pair<int64_t, int64_t>> dims) {
  proto::AccessPattern ap;
  ap.set_tensor_id(1);
  ap.set_offset(offset);
  for (auto [stride, count] : dims) {
    ap.add_pattern(stride);
    ap.add_pattern(count);
  }
  return ap;
}

// The flat index of every element of `ap`, in element order.
std::vector<int64_t> FlatElements(const proto::AccessPattern& ap) {
  const int nd = ap.pattern_size() / 2;
  std::vector<int64_t> out;
  std::vector<int64_t> idx(nd, 0);
  while (true) {
    int64_t flat = ap.offset();
    for (int d = 0; d < nd; ++d) flat += idx[d] * ap.pattern(2 * d);
    out.push_back(flat);
    int d = nd - 1;
    for (; d >= 0; --d) {
      if (++idx[d] < ap.pattern(2 * d + 1)) break;
      idx[d] = 0;
    }
    if (d < 0) return out;
  }
}

struct Case {
  std::string what;
  proto::Tensor tensor;
  proto::AccessPattern ap;
  bool as_rows;
  int64_t rows;
  int64_t cols;
};

TEST(OperandFactsTest, RowsLieWhereEachElementsByteOffsetIs) {
  const proto::Tensor sbuf =
      MakeTensor(proto::SBUF, proto::FLOAT32, {128, 64}, /*address=*/256);
  const proto::Tensor psum_bf16 =
      MakeTensor(proto::PSUM, proto::BFLOAT16, {64, 4, 16}, /*address=*/128,
                 /*partition_offset=*/32);
  const proto::Tensor hbm =
      MakeTensor(proto::HBM, proto::FLOAT32, {6, 10}, /*address=*/4096);
  proto::AccessPattern dynamic = MakeAp(0, {{10, 2}, {1, 10}});
  dynamic.mutable_dynamic()->set_kind(proto::DynamicOffset::SCALAR);
  const std::vector<Case> cases = {
      {"tile of 4 partitions x 10", sbuf,
       MakeAp(3 * 64 + 5, {{64, 4}, {1, 10}}), true, 4, 10},
      {"inner dims that merge", sbuf, MakeAp(64, {{64, 4}, {8, 2}, {1, 8}}),
       true, 4, 16},
      {"inner dims that do not merge", sbuf,
       MakeAp(0, {{64, 4}, {16, 2}, {1, 8}}), false, 0, 0},
      {"one element", sbuf, MakeAp(70, {{64, 1}, {1, 1}}), true, 1, 1},
      {"strided elements", sbuf, MakeAp(0, {{64, 4}, {2, 8}}), false, 0, 0},
      {"rows inside one partition", sbuf, MakeAp(0, {{64, 1}, {16, 3}, {1, 8}}),
       false, 0, 0},
      // Each of the 4 heads reads the same 8 values: rows to an HBM copy,
      // but on chip a row is a partition, and this tile has one.
      {"a middle dim broadcast over one partition", sbuf,
       MakeAp(0, {{64, 1}, {0, 4}, {1, 8}}), false, 0, 0},
      {"hbm rows broadcast", hbm, MakeAp(10, {{0, 4}, {1, 10}}), true, 4, 10},
      {"bf16 psum rows at partition 32", psum_bf16,
       MakeAp(64, {{64, 2}, {16, 4}, {1, 16}}), true, 2, 64},
      {"hbm block", hbm, MakeAp(12, {{10, 3}, {1, 5}}), true, 3, 5},
      {"hbm whole", hbm, MakeAp(0, {{10, 6}, {1, 10}}), true, 1, 60},
      {"hbm with a count-1 outer dim", hbm,
       MakeAp(0, {{60, 1}, {10, 6}, {1, 10}}), true, 1, 60},
      {"hbm rows walked backwards", hbm, MakeAp(25, {{-10, 3}, {1, 5}}), true,
       3, 5},
      {"hbm two outer dims", hbm, MakeAp(0, {{30, 2}, {10, 2}, {1, 5}}), false,
       0, 0},
      {"dynamic offset", hbm, dynamic, false, 0, 0},
  };
  constexpr int64_t kPartitionBytes = 1000;  // not a power of two
  for (const Case& c : cases) {
    SCOPED_TRACE(c.what);
    const ops::OperandFacts f = ops::ComputeOperandFacts(c.tensor, c.ap);
    EXPECT_TRUE(f.known);
    EXPECT_EQ(f.esize, DTypeSize(c.tensor.dtype()));
    ASSERT_EQ(f.as_rows, c.as_rows);
    if (!c.as_rows) continue;
    EXPECT_EQ(f.rows, c.rows);
    EXPECT_EQ(f.cols, c.cols);
    const std::vector<int64_t> flats = FlatElements(c.ap);
    ASSERT_EQ(static_cast<int64_t>(flats.size()), f.rows * f.cols);
    for (int64_t r = 0; r < f.rows; ++r) {
      for (int64_t col = 0; col < f.cols; ++col) {
        const int64_t flat = flats[r * f.cols + col];
        EXPECT_EQ(f.flat + r * f.flat_stride + col, flat);
        EXPECT_EQ(
            f.FirstByte(kPartitionBytes) + r * f.RowStride(kPartitionBytes) +
                col * f.esize,
            interp::DeviceMemory::ByteOffset(c.tensor, flat, kPartitionBytes))
            << "row " << r << " col " << col;
      }
    }
  }
}

TEST(OperandFactsTest, ExtentIsOnePartitionRowOnChipAndTheTensorInHbm) {
  const ops::OperandFacts on_chip = ops::ComputeOperandFacts(
      MakeTensor(proto::SBUF, proto::FLOAT32, {128, 64}, 256),
      MakeAp(0, {{64, 2}, {1, 64}}));
  EXPECT_EQ(on_chip.extent_lo, 256);
  EXPECT_EQ(on_chip.extent_hi, 256 + 64 * 4);
  const ops::OperandFacts in_hbm = ops::ComputeOperandFacts(
      MakeTensor(proto::HBM, proto::BFLOAT16, {6, 10}, 4096),
      MakeAp(0, {{10, 2}, {1, 10}}));
  EXPECT_EQ(in_hbm.extent_lo, 4096);
  EXPECT_EQ(in_hbm.extent_hi, 4096 + 60 * 2);
}

// dst = a[0, 1:8], both sources a[0, 0:7]: the write overlaps what it reads
// one element further on, so it must read every source element before
// writing over it: out[j + 1] = 2 x[j], not 2^(j + 1).
TEST(OperandFactsTest, InPlaceWriteOverlappingItsSourceReadsTheOldValues) {
  absl::StatusOr<proto::Graph> graph = Trace1([](Tracer& t) {
    Tensor x = t.Input("x", {1, 8}, proto::FLOAT32);
    Tensor out = t.Allocate({1, 8}, proto::FLOAT32, Buffer::kSharedHbm, "o");
    Tensor a = builder::ndarray({1, 8}, proto::FLOAT32, Buffer::kSbuf, "a");
    isa::dma_copy(a, x);
    isa::tensor_tensor(a.Slice(1, 1, 7), a.Slice(1, 0, 7), a.Slice(1, 0, 7),
                       isa::Alu::kAdd);
    isa::dma_copy(out, a);
    t.Output("out", out);
  });
  ASSERT_TRUE(graph.ok()) << graph.status();
  absl::StatusOr<std::map<std::string, HostArray>> out =
      RunGraph(*graph, {Floats("x", {1, 8}, {1, 2, 3, 4, 5, 6, 7, 8})});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_THAT(out->at("out").f32,
              ::testing::ElementsAre(1, 2, 4, 6, 8, 10, 12, 14));
}

// A one-partition tile [1, heads, d] times a row [1, d] broadcast over the
// heads (RoPE's x · cos at one token): every head is multiplied by the same
// row. The broadcast source lies in memory as d floats read `heads` times;
// it is not `heads` rows of the tile. (attention_block_tkg at batch 1,
// seq_tkg 1 multiplied every head after the first by what lay past the
// row.) The same through tensor_scalar's and activation's readers.
TEST(OperandFactsTest, AOnePartitionTileTimesARowBroadcastOverItsHeads) {
  constexpr int64_t kHeads = 3, kD = 4;
  absl::StatusOr<proto::Graph> graph = Trace1([](Tracer& t) {
    Tensor x = t.Input("x", {1, kHeads * kD}, proto::FLOAT32);
    Tensor c = t.Input("c", {1, kD}, proto::FLOAT32);
    Tensor out =
        t.Allocate({1, kHeads * kD}, proto::FLOAT32, Buffer::kSharedHbm, "o");
    Tensor out2 =
        t.Allocate({1, kHeads * kD}, proto::FLOAT32, Buffer::kSharedHbm, "o2");
    // x and c side by side in one SBUF tensor, so what lies past c's row
    // is x, not unwritten memory.
    Tensor both = builder::ndarray({1, kD + kHeads * kD}, proto::FLOAT32,
                                   Buffer::kSbuf, "both");
    isa::dma_copy(both.Slice(1, 0, kD), c);
    isa::dma_copy(both.Slice(1, kD, kHeads * kD), x);
    const Tensor row = both.Slice(1, 0, kD).Broadcast(1, kHeads);  // [1,H,d]
    const Tensor heads =
        both.Slice(1, kD, kHeads * kD).Reshape({1, kHeads, kD});
    Tensor prod = builder::ndarray({1, kHeads, kD}, proto::FLOAT32,
                                   Buffer::kSbuf, "prod");
    isa::tensor_tensor(prod, heads, row, isa::Alu::kMultiply);
    isa::dma_copy(out, prod.Reshape({1, kHeads * kD}));
    Tensor copy = builder::ndarray({1, kHeads, kD}, proto::FLOAT32,
                                   Buffer::kSbuf, "copy");
    isa::tensor_scalar(copy, row, isa::Alu::kAdd, 0.5f);
    isa::dma_copy(out2, copy.Reshape({1, kHeads * kD}));
    t.Output("out", out);
    t.Output("out2", out2);
  });
  ASSERT_TRUE(graph.ok()) << graph.status();
  absl::StatusOr<std::map<std::string, HostArray>> out = RunGraph(
      *graph, {Floats("x", {1, kHeads * kD},
                      {1, 2, 3, 4, 10, 20, 30, 40, 100, 200, 300, 400}),
               Floats("c", {1, kD}, {1, -1, 2, 0.5})});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_THAT(out->at("out").f32,
              ::testing::ElementsAre(1, -2, 6, 2, 10, -20, 60, 20, 100, -200,
                                     600, 200));
  EXPECT_THAT(out->at("out2").f32,
              ::testing::ElementsAre(1.5, -0.5, 2.5, 1, 1.5, -0.5, 2.5, 1, 1.5,
                                     -0.5, 2.5, 1));
}

// Partition 2 of `a` is never written; partition 1 only in its first 5
// columns. Reading `a` through rows where it lies still fails on the first
// never-written element, naming the instruction.
TEST(OperandFactsTest, NeverWrittenRowsReadInPlaceNameTheInstruction) {
  for (const bool whole_row : {true, false}) {
    SCOPED_TRACE(whole_row ? "missing partition" : "missing columns");
    absl::StatusOr<proto::Graph> graph = Trace1([&](Tracer& t) {
      Tensor x = t.Input("x", {4, 8}, proto::FLOAT32);
      Tensor out = t.Allocate({4, 8}, proto::FLOAT32, Buffer::kSharedHbm, "o");
      Tensor a = builder::ndarray({4, 8}, proto::FLOAT32, Buffer::kSbuf, "a");
      Tensor b = builder::ndarray({4, 8}, proto::FLOAT32, Buffer::kSbuf, "b");
      isa::dma_copy(a.Slice(0, 0, 1), x.Slice(0, 0, 1));
      if (whole_row) {
        isa::dma_copy(a.Slice(0, 1, 1), x.Slice(0, 1, 1));
      } else {
        isa::dma_copy(a.Slice(0, 1, 1).Slice(1, 0, 5),
                      x.Slice(0, 1, 1).Slice(1, 0, 5));
        isa::dma_copy(a.Slice(0, 2, 1), x.Slice(0, 2, 1));
      }
      isa::dma_copy(a.Slice(0, 3, 1), x.Slice(0, 3, 1));
      isa::tensor_tensor(b, a, a, isa::Alu::kMaximum);
      isa::dma_copy(out, b);
      t.Output("out", out);
    });
    ASSERT_TRUE(graph.ok()) << graph.status();
    absl::StatusOr<std::map<std::string, HostArray>> out =
        RunGraph(*graph, {Floats("x", {4, 8}, std::vector<float>(32, 1.0f))});
    ASSERT_FALSE(out.ok());
    EXPECT_EQ(out.status().code(), interp::kDeviceErrorCode);
    EXPECT_THAT(out.status().message(),
                HasSubstr(whole_row ? "instruction #3 tensor_tensor"
                                    : "instruction #4 tensor_tensor"));
    EXPECT_THAT(out.status().message(), HasSubstr("operand_facts_test.cc:"));
    EXPECT_THAT(
        out.status().message(),
        HasSubstr(whole_row ? "reads never-written sbuf tensor 'a' element "
                              "[2, 0]"
                            : "reads never-written sbuf tensor 'a' element "
                              "[1, 5]"));
  }
}

}  // namespace
}  // namespace nkigraph
