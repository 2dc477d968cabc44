// Bitcast views (Tensor::Bitcast, AccessPattern.view_dtype): the bytes of a
// tensor read and written as another dtype, bit for bit; refused when the
// bytes do not divide; seen by validation, the schema version, the
// pictures and the diff.
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "diff/diff.h"
#include "diff/format.h"
#include "gmock/gmock.h"
#include "graph/dependencies.h"
#include "graph/graph_index.h"
#include "graph/validate.h"
#include "gtest/gtest.h"
#include "tests/scoped_temp_dir.h"
#include "tests/test_util.h"
#include "util/graph_io.h"
#include "viz/labels.h"

namespace nkigraph {
namespace {

using builder::Buffer;
using builder::Tensor;
using builder::Tracer;
namespace isa = builder::isa;
using ::testing::AllOf;
using ::testing::ElementsAreArray;
using ::testing::HasSubstr;
using testing::Trace1;

using testing::RawBits;

// bf16 bit patterns no float path keeps: subnormals (small integers packed
// into bf16 columns are subnormals), NaNs with payloads, -0, infinities.
const std::vector<uint16_t> kPatterns = {
    0x0001, 0x0000, 0x007F, 0x8001,  // subnormals (and +0)
    0x7F81, 0xFFC3, 0x7FFF, 0xFF80,  // NaN payloads, -inf
    0x3F80, 0x8000, 0x7F80, 0xFFFF,  // 1.0, -0, +inf, all ones
};

// x [3, 4] bf16 read as int32 [3, 2] into SBUF, stored as output
// as_int32; the int32 tile written back through a bf16 view as `back`.
proto::Graph PairsAsInt32Graph() {
  absl::StatusOr<proto::Graph> graph = Trace1([](Tracer& t) {
    // x [3, 4] bf16: each row's four halves are two int32s.
    Tensor x = t.Input("x", {3, 4}, proto::BFLOAT16);
    Tensor ints = builder::ndarray({3, 2}, proto::INT32, Buffer::kSbuf, "ints");
    isa::dma_copy(ints, x.Bitcast(proto::INT32));
    Tensor as_int = t.Allocate({3, 2}, proto::INT32, Buffer::kSharedHbm, "i");
    isa::dma_copy(as_int, ints);
    t.Output("as_int32", as_int);
    // And back: the int32 tile written through a bf16 view.
    Tensor back = t.Allocate({3, 4}, proto::BFLOAT16, Buffer::kSharedHbm, "b");
    isa::dma_copy(back, ints.Bitcast(proto::BFLOAT16));
    t.Output("back", back);
  });
  EXPECT_TRUE(graph.ok()) << graph.status();
  return graph.ok() ? *graph : proto::Graph();
}

TEST(BitcastTest, Bf16PairsReadAsInt32AndBackKeepEveryBit) {
  const proto::Graph graph = PairsAsInt32Graph();
  absl::StatusOr<std::unique_ptr<interp::Interpreter>> interp =
      interp::Interpreter::Create(graph);
  ASSERT_TRUE(interp.ok()) << interp.status();
  ASSERT_TRUE((*interp)->SetInput(RawBits("x", {3, 4}, kPatterns)).ok());
  ASSERT_TRUE((*interp)->Run().ok());
  absl::StatusOr<HostArray> as_int = (*interp)->GetOutput("as_int32");
  ASSERT_TRUE(as_int.ok()) << as_int.status();
  std::vector<int32_t> want;
  for (size_t i = 0; i < kPatterns.size(); i += 2) {
    want.push_back(static_cast<int32_t>(
        kPatterns[i] | (static_cast<uint32_t>(kPatterns[i + 1]) << 16)));
  }
  EXPECT_THAT(as_int->i32, ElementsAreArray(want));
  absl::StatusOr<HostArray> back =
      (*interp)->GetOutput("back", interp::Interpreter::HostForm::kRawBits16);
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(back->dtype, proto::UINT16);
  EXPECT_THAT(back->u16, ElementsAreArray(kPatterns));
}

TEST(BitcastTest, ViewRescalesOffsetsStridesAndTheLastCount) {
  absl::StatusOr<proto::Graph> graph = Trace1([](Tracer& t) {
    Tensor x = t.Input("x", {5, 10}, proto::BFLOAT16);
    // Columns 8, 9 of rows 1..4: one int32 per row at int32 column 4.
    const Tensor pair = x.Slice(0, 1, 4).Slice(1, 8, 2).Bitcast(proto::INT32);
    EXPECT_EQ(pair.dtype(), proto::INT32);
    EXPECT_EQ(pair.shape(), (builder::Shape{4, 1}));
    EXPECT_EQ(pair.offset(), (1 * 10 + 8) / 2);
    EXPECT_EQ(pair.dims()[0].stride, 5);
    // Narrowing: one int32 column as two uint16s.
    const Tensor halves = pair.Bitcast(proto::UINT16);
    EXPECT_EQ(halves.shape(), (builder::Shape{4, 2}));
    EXPECT_EQ(halves.offset(), 18);
    EXPECT_EQ(halves.dims()[0].stride, 10);
    // Back to the tensor's own dtype: a plain view again.
    const Tensor plain = pair.Bitcast(proto::BFLOAT16);
    EXPECT_EQ(plain.dtype(), proto::BFLOAT16);
    Tensor dst = builder::ndarray({4, 1}, proto::INT32, Buffer::kSbuf, "d");
    isa::dma_copy(dst, pair);
    Tensor out = t.Allocate({4, 2}, proto::BFLOAT16, Buffer::kSharedHbm, "o");
    isa::dma_copy(out, plain);
    t.Output("out", out);
  });
  ASSERT_TRUE(graph.ok()) << graph.status();
  const proto::Instruction& load = graph->streams(0).instructions(0);
  const proto::AccessPattern& src = testing::OperandOf(load, "src");
  EXPECT_EQ(src.view_dtype(), proto::INT32);
  EXPECT_EQ(src.offset(), 9);
  EXPECT_THAT(src.pattern(), ElementsAreArray({5, 4, 1, 1}));
  // Only the bitcast operand carries a view dtype.
  const proto::Instruction& store = graph->streams(0).instructions(1);
  EXPECT_EQ(testing::OperandOf(store, "src").view_dtype(),
            proto::DTYPE_UNSPECIFIED);
  EXPECT_EQ(graph->schema_version(), proto::SCHEMA_VERSION_VIEW_DTYPE);
}

TEST(BitcastTest, GraphsWithoutBitcastsKeepSchemaVersionOne) {
  absl::StatusOr<proto::Graph> graph = Trace1([](Tracer& t) {
    Tensor x = t.Input("x", {2, 4}, proto::BFLOAT16);
    Tensor out = t.Allocate({2, 4}, proto::BFLOAT16, Buffer::kSharedHbm, "o");
    isa::dma_copy(out, x);
    t.Output("out", out);
  });
  ASSERT_TRUE(graph.ok()) << graph.status();
  EXPECT_EQ(static_cast<int>(graph->schema_version()), 1);
}

// The trace error of `body`, which must fail.
std::string TraceError(const std::function<void(Tracer&)>& body) {
  absl::StatusOr<proto::Graph> graph = Trace1(body);
  EXPECT_FALSE(graph.ok());
  return graph.ok() ? "" : std::string(graph.status().message());
}

TEST(BitcastTest, ImpossibleBitcastsAreRefusedAtTheCall) {
  // Five bf16 columns are 10 bytes: not whole int32s.
  EXPECT_THAT(TraceError([](Tracer& t) {
                t.Input("x", {4, 5}, proto::BFLOAT16).Bitcast(proto::INT32);
              }),
              AllOf(HasSubstr("bitcast_test.cc:"),
                    HasSubstr("Bitcast of 'x' (bfloat16 [4, 5]) as int32"),
                    HasSubstr("10 bytes are not a whole number")));
  // A view starting at an odd bf16 column.
  EXPECT_THAT(TraceError([](Tracer& t) {
                t.Input("x", {4, 6}, proto::BFLOAT16)
                    .Slice(1, 1, 2)
                    .Bitcast(proto::INT32);
              }),
              HasSubstr("its offset (1 bfloat16 elements) is not a whole "
                        "number of int32 elements"));
  // An odd count of bf16 in the last dim.
  EXPECT_THAT(TraceError([](Tracer& t) {
                t.Input("x", {4, 6}, proto::BFLOAT16)
                    .Slice(1, 0, 3)
                    .Bitcast(proto::INT32);
              }),
              HasSubstr("its last dim's 6 bytes are not a whole number of "
                        "int32 elements"));
  // Strided innermost elements are not a run of bytes.
  EXPECT_THAT(TraceError([](Tracer& t) {
                t.Input("x", {4, 8}, proto::BFLOAT16)
                    .Slice(1, 0, 4, 2)
                    .Bitcast(proto::INT32);
              }),
              HasSubstr("its last dim (stride 2) is not contiguous"));
  // An on-chip view has no free dim to reinterpret.
  EXPECT_THAT(TraceError([](Tracer&) {
                builder::ndarray({4}, proto::BFLOAT16, Buffer::kSbuf, "p")
                    .Bitcast(proto::INT32);
              }),
              HasSubstr("an on-chip view needs a free dim to reinterpret"));
}

TEST(BitcastTest, ValidationRefusesAnImpossibleViewNamingTheInstruction) {
  proto::Graph graph = PairsAsInt32Graph();
  // Tensor x becomes [3, 3]: its rows are 6 bytes, no whole int32s.
  proto::Tensor* x = graph.mutable_tensors(0);
  ASSERT_EQ(x->name(), "x");
  x->set_shape(1, 3);
  const std::vector<Diagnostic> problems = graph::ValidateGraph(graph);
  ASSERT_FALSE(problems.empty());
  EXPECT_THAT(Render(problems[0]),
              AllOf(HasSubstr("instruction #0 dma_copy"),
                    HasSubstr("bitcast of 'x' (bfloat16, last dim 3) as "
                              "int32: the last dim's 6 bytes are not a whole "
                              "number of 4-byte elements")));
  // A view dtype that is no dtype.
  proto::Graph unknown = PairsAsInt32Graph();
  testing::MutableOperandOf(unknown.mutable_streams(0)->mutable_instructions(0),
                            "src")
      ->set_view_dtype(static_cast<proto::DType>(77));
  EXPECT_THAT(graph::CheckGraph(unknown).message(),
              HasSubstr("has dtype 77, which is not a dtype"));
}

TEST(BitcastTest, ValidationRefusesAViewInASchemaVersionOneGraph) {
  proto::Graph graph = PairsAsInt32Graph();
  graph.set_schema_version(static_cast<proto::SchemaVersion>(1));
  EXPECT_THAT(graph::CheckGraph(graph).message(),
              AllOf(HasSubstr("instruction #0 dma_copy"),
                    HasSubstr("operand 'src' is a bitcast view, which schema "
                              "version 1 cannot express")));
}

TEST(BitcastTest, AVersionTwoGraphIsWrittenAndReadBack) {
  const proto::Graph graph = PairsAsInt32Graph();
  const testing::ScopedTempDir dir;
  const std::string path = dir.Path("bitcast_graph.pb");
  ASSERT_TRUE(WriteGraph(graph, path).ok());
  absl::StatusOr<proto::Graph> read = ReadGraph(path);
  ASSERT_TRUE(read.ok()) << read.status();
  EXPECT_EQ(read->schema_version(), proto::SCHEMA_VERSION_VIEW_DTYPE);
  EXPECT_EQ(SerializeDeterministic(*read), SerializeDeterministic(graph));
}

TEST(BitcastTest, DependenciesSeeTheBytesAViewTouches) {
  absl::StatusOr<proto::Graph> graph = Trace1([](Tracer& t) {
    Tensor x = t.Input("x", {4, 8}, proto::BFLOAT16);
    Tensor tile = builder::ndarray({4, 8}, proto::BFLOAT16, Buffer::kSbuf, "t");
    Tensor a = builder::ndarray({4, 1}, proto::INT32, Buffer::kSbuf, "a");
    Tensor b = builder::ndarray({4, 1}, proto::INT32, Buffer::kSbuf, "b");
    isa::dma_copy(tile.Slice(1, 0, 4), x.Slice(1, 0, 4));  // #0 bf16 0..3
    isa::dma_copy(tile.Slice(1, 4, 4), x.Slice(1, 4, 4));  // #1 bf16 4..7
    // #2 reads bf16 columns 6, 7 as one int32: #1's bytes only.
    isa::tensor_copy(a, tile.Slice(1, 6, 2).Bitcast(proto::INT32));
    // #3 reads bf16 columns 2, 3: #0's bytes only.
    isa::tensor_copy(b, tile.Bitcast(proto::INT32).Slice(1, 1, 1));
  });
  ASSERT_TRUE(graph.ok()) << graph.status();
  absl::StatusOr<std::unique_ptr<graph::GraphIndex>> index =
      graph::GraphIndex::Build(*graph);
  ASSERT_TRUE(index.ok()) << index.status();
  std::vector<std::pair<uint32_t, uint32_t>> raw;
  for (const graph::Dependency& dep : graph::AnalyzeDependencies(**index)) {
    if (dep.kind != graph::DepKind::kRaw) continue;
    raw.emplace_back((*index)->instr(dep.from).id(),
                     (*index)->instr(dep.to).id());
  }
  EXPECT_THAT(raw, ::testing::UnorderedElementsAre(std::pair(1u, 2u),
                                                   std::pair(0u, 3u)));
}

// A rank-1 HBM tensor viewed wider: int32 element 2 is bf16 elements 4, 5.
TEST(BitcastTest, DependenciesSeeTheBytesAViewOfARank1TensorTouches) {
  absl::StatusOr<proto::Graph> graph = Trace1([](Tracer& t) {
    Tensor x = t.Input("x", {1, 8}, proto::BFLOAT16);
    Tensor buf = t.Allocate({8}, proto::BFLOAT16, Buffer::kSharedHbm, "buf");
    Tensor tile = builder::ndarray({1, 1}, proto::INT32, Buffer::kSbuf, "t");
    Tensor other = builder::ndarray({1, 1}, proto::INT32, Buffer::kSbuf, "o");
    isa::dma_copy(buf.Slice(0, 5, 1), x.Select(0, 0).Slice(0, 5, 1));  // #0
    // #1 reads int32 element 2 (bf16 4, 5): after #0.
    isa::dma_copy(tile,
                  buf.Bitcast(proto::INT32).Slice(0, 2, 1).Reshape({1, 1}));
    // #2 reads int32 element 0 (bf16 0, 1): independent of #0.
    isa::dma_copy(other,
                  buf.Bitcast(proto::INT32).Slice(0, 0, 1).Reshape({1, 1}));
  });
  ASSERT_TRUE(graph.ok()) << graph.status();
  absl::StatusOr<std::unique_ptr<graph::GraphIndex>> index =
      graph::GraphIndex::Build(*graph);
  ASSERT_TRUE(index.ok()) << index.status();
  std::vector<std::pair<uint32_t, uint32_t>> raw;
  for (const graph::Dependency& dep : graph::AnalyzeDependencies(**index)) {
    if (dep.kind != graph::DepKind::kRaw) continue;
    raw.emplace_back((*index)->instr(dep.from).id(),
                     (*index)->instr(dep.to).id());
  }
  EXPECT_THAT(raw, ::testing::ElementsAre(std::pair(0u, 1u)));
}

TEST(BitcastTest, PicturesLabelTheView) {
  const proto::Graph graph = PairsAsInt32Graph();
  absl::StatusOr<std::unique_ptr<graph::GraphIndex>> index =
      graph::GraphIndex::Build(graph);
  ASSERT_TRUE(index.ok()) << index.status();
  EXPECT_THAT(viz::InstrLabel(**index, 0), HasSubstr("ints <- x as int32"));
  EXPECT_THAT(viz::InstrLabel(**index, 2),
              HasSubstr("back <- ints as bfloat16"));
}

TEST(BitcastTest, DiffReportsAChangedView) {
  const proto::Graph a = PairsAsInt32Graph();
  proto::Graph b = a;
  testing::MutableOperandOf(b.mutable_streams(0)->mutable_instructions(0),
                            "src")
      ->set_view_dtype(proto::UINT32);
  absl::StatusOr<diff::DiffResult> result = diff::Diff(a, b, {});
  ASSERT_TRUE(result.ok()) << result.status();
  ASSERT_FALSE(result->same());
  const std::string text = diff::FormatText(*result, {});
  EXPECT_THAT(text, HasSubstr("operand src view"));
  EXPECT_THAT(text, HasSubstr("int32"));
  EXPECT_THAT(text, HasSubstr("uint32"));
  absl::StatusOr<diff::DiffResult> same = diff::Diff(a, a, {});
  ASSERT_TRUE(same.ok());
  EXPECT_TRUE(same->same());
}

}  // namespace
}  // namespace nkigraph
