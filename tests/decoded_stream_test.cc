// A stream decoded once for execution (ops::DecodedStream) binds views that
// read exactly what a view made from the instruction reads: the same op,
// operands (bitcast views included) and attribute values, plus the index of
// each string attribute's value in its spec's allowed set.
#include "ops/decoded_stream.h"

#include <algorithm>
#include <cstdint>
#include <vector>

#include "gtest/gtest.h"
#include "ops/access_pattern.h"
#include "ops/activation_functions.h"
#include "ops/alu.h"
#include "ops/instr_view.h"
#include "ops/op_util.h"
#include "tests/test_util.h"

namespace nkigraph {
namespace {

using builder::Buffer;
using builder::Tensor;
using builder::Tracer;
namespace isa = builder::isa;
using testing::Trace1;

proto::Graph MixedGraph() {
  absl::StatusOr<proto::Graph> graph = Trace1([](Tracer& t) {
    Tensor x = t.Input("x", {4, 8}, proto::FLOAT32);
    Tensor y = t.Input("y", {4, 8}, proto::BFLOAT16);
    Tensor a = builder::ndarray({4, 8}, proto::FLOAT32, Buffer::kSbuf, "a");
    Tensor b = builder::ndarray({4, 8}, proto::FLOAT32, Buffer::kSbuf, "b");
    Tensor ints = builder::ndarray({4, 4}, proto::INT32, Buffer::kSbuf, "i");
    isa::dma_copy(a, x);
    isa::dma_copy(ints, y.Bitcast(proto::INT32));
    isa::tensor_tensor(b, a, a, isa::Alu::kSubtract);
    isa::activation(b, isa::ActFunc::kTanh, a, {.bias = 0.5f, .scale = 2.0f});
    isa::tensor_scalar(a, b, isa::Alu::kMaximum, 0.25f);
    Tensor out = t.Allocate({4, 8}, proto::FLOAT32, Buffer::kSharedHbm, "o");
    isa::dma_copy(out, a);
    t.Output("out", out);
  });
  EXPECT_TRUE(graph.ok()) << graph.status();
  return graph.ok() ? *std::move(graph) : proto::Graph();
}

TEST(DecodedStreamTest, BindsWhatMakeInstrViewResolves) {
  const proto::Graph g = MixedGraph();
  ASSERT_EQ(g.streams_size(), 1);
  const proto::Stream& stream = g.streams(0);
  absl::StatusOr<ops::DecodedStream> decoded =
      ops::DecodedStream::Decode(stream, g.tensors(), g.world());
  ASSERT_TRUE(decoded.ok()) << decoded.status();
  ASSERT_EQ(decoded->size(), stream.instructions_size());
  int bitcasts = 0;
  for (int pc = 0; pc < stream.instructions_size(); ++pc) {
    SCOPED_TRACE(pc);
    const proto::Instruction& instr = stream.instructions(pc);
    ops::InstrView made, bound;
    ASSERT_TRUE(ops::MakeInstrView(instr, g.tensors(), g.world(), &made).ok());
    decoded->Bind(pc, &bound);
    EXPECT_EQ(&bound.instr(), &instr);
    EXPECT_EQ(&bound.def(), &made.def());
    EXPECT_EQ(&decoded->def(pc), &made.def());
    ASSERT_EQ(bound.num_operands(), made.num_operands());
    for (int i = 0; i < made.num_operands(); ++i) {
      const ops::OperandInfo& m = made.operand(i);
      const ops::OperandInfo& b = bound.operand(i);
      ASSERT_EQ(b.present(), m.present());
      if (!m.present()) continue;
      // The same pattern (a record shared by instructions with the same
      // operands points at the first one's).
      EXPECT_EQ(b.ap->SerializeAsString(), m.ap->SerializeAsString());
      EXPECT_EQ(b.elements(), ops::ApElements(*m.ap));
      EXPECT_EQ(b.tensor->id(), m.tensor->id());
      EXPECT_EQ(b.dtype(), m.dtype());
      EXPECT_EQ(b.tensor->shape_size(), m.tensor->shape_size());
      for (int d = 0; d < m.tensor->shape_size(); ++d) {
        EXPECT_EQ(b.tensor->shape(d), m.tensor->shape(d));
      }
      if (m.ap->view_dtype() != proto::DTYPE_UNSPECIFIED) {
        ++bitcasts;
        EXPECT_EQ(b.dtype(), proto::INT32);
        EXPECT_EQ(b.tensor->shape(1), 4);  // 8 bf16 columns as 4 int32
      }
    }
    for (const ops::AttrSpec& spec : made.def().attrs) {
      EXPECT_EQ(bound.Has(spec), made.Has(spec)) << spec.name;
      EXPECT_EQ(bound.Int(spec), made.Int(spec)) << spec.name;
      EXPECT_EQ(bound.Float(spec), made.Float(spec)) << spec.name;
      EXPECT_EQ(bound.Str(spec), made.Str(spec)) << spec.name;
      EXPECT_EQ(bound.Ints(spec).size(), made.Ints(spec).size()) << spec.name;
      // Only a decoded view knows the choice.
      EXPECT_EQ(made.Choice(spec), -1);
      if (spec.type == ops::AttrType::kString && made.Has(spec) &&
          !spec.one_of.empty()) {
        const auto at =
            std::find(spec.one_of.begin(), spec.one_of.end(), made.Str(spec));
        EXPECT_EQ(bound.Choice(spec), at - spec.one_of.begin()) << spec.name;
      }
    }
  }
  EXPECT_EQ(bitcasts, 1);
}

TEST(DecodedStreamTest, AluAndFunctionComeFromTheChoice) {
  const proto::Graph g = MixedGraph();
  const proto::Stream& stream = g.streams(0);
  absl::StatusOr<ops::DecodedStream> decoded =
      ops::DecodedStream::Decode(stream, g.tensors(), g.world());
  ASSERT_TRUE(decoded.ok()) << decoded.status();
  int seen = 0;
  for (int pc = 0; pc < decoded->size(); ++pc) {
    ops::InstrView bound;
    decoded->Bind(pc, &bound);
    const ops::OpDef& def = bound.def();
    if (def.opcode == proto::TENSOR_TENSOR) {
      EXPECT_EQ(ops::AluOf(bound, def.attrs[0]), ops::Alu::kSubtract);
      EXPECT_EQ(ops::kAluNames[bound.Choice(def.attrs[0])], "subtract");
      ++seen;
    }
    if (def.opcode == proto::ACTIVATION) {
      const int k = bound.Choice(def.attrs[0]);
      ASSERT_GE(k, 0);
      EXPECT_EQ(ops::kActFuncs[k].value, ops::ActFunc::kTanh);
      ++seen;
    }
  }
  EXPECT_EQ(seen, 2);
}

// The views of bitcast operands live in the decoded stream: they must stay
// valid when the stream moves (a vector of streams growing).
TEST(DecodedStreamTest, BitcastViewsSurviveMovingTheStream) {
  const proto::Graph g = MixedGraph();
  std::vector<ops::DecodedStream> streams;
  absl::StatusOr<ops::DecodedStream> decoded =
      ops::DecodedStream::Decode(g.streams(0), g.tensors(), g.world());
  ASSERT_TRUE(decoded.ok()) << decoded.status();
  streams.push_back(*std::move(decoded));
  streams.reserve(streams.capacity() + 8);  // moves the stream
  ops::InstrView bound;
  streams[0].Bind(1, &bound);  // dma_copy(ints, y.Bitcast(INT32))
  const ops::OperandInfo& src = bound.operand(1);
  ASSERT_NE(src.ap->view_dtype(), proto::DTYPE_UNSPECIFIED);
  EXPECT_EQ(src.dtype(), proto::INT32);
  ASSERT_EQ(src.tensor->shape_size(), 2);
  EXPECT_EQ(src.tensor->shape(0), 4);
  EXPECT_EQ(src.tensor->shape(1), 4);
}

// Instructions with the same static operands share one run of decoded
// records; an instruction differing in any operand's tensor, offset or
// pattern, or with a bitcast view, has its own.
TEST(DecodedStreamTest, RepeatedOperandListsShareRecords) {
  absl::StatusOr<proto::Graph> graph = Trace1([](Tracer& t) {
    Tensor x = t.Input("x", {4, 8}, proto::FLOAT32);
    Tensor a = builder::ndarray({4, 8}, proto::FLOAT32, Buffer::kSbuf, "a");
    Tensor b = builder::ndarray({4, 8}, proto::FLOAT32, Buffer::kSbuf, "b");
    isa::dma_copy(a, x);  // 0: own (2 records)
    for (int k = 0; k < 3; ++k) {
      isa::tensor_tensor(b, a, a, isa::Alu::kAdd);  // 1-3: one run (3)
    }
    isa::tensor_tensor(b, a, b, isa::Alu::kAdd);  // 4: data2 differs (3)
    isa::tensor_tensor(b.Slice(0, 0, 2), a.Slice(0, 0, 2), a.Slice(0, 0, 2),
                       isa::Alu::kAdd);                // 5: patterns (3)
    isa::tensor_tensor(b, a, a, isa::Alu::kMultiply);  // 6: as 1-3
    Tensor out = t.Allocate({4, 8}, proto::FLOAT32, Buffer::kSharedHbm, "o");
    isa::dma_copy(out, b);  // 7: own (2)
    isa::dma_copy(out, b);  // 8: as 7
    t.Output("out", out);
  });
  ASSERT_TRUE(graph.ok()) << graph.status();
  const proto::Graph& g = *graph;
  const proto::Stream& stream = g.streams(0);
  ASSERT_EQ(stream.instructions_size(), 9);
  absl::StatusOr<ops::DecodedStream> decoded =
      ops::DecodedStream::Decode(stream, g.tensors(), g.world());
  ASSERT_TRUE(decoded.ok()) << decoded.status();
  EXPECT_EQ(decoded->operand_records(), 2 + 3 + 3 + 3 + 2);
  std::vector<ops::InstrView> views(stream.instructions_size());
  for (int pc = 0; pc < stream.instructions_size(); ++pc) {
    decoded->Bind(pc, &views[pc]);
  }
  auto shares = [&](int x, int y) {
    return &views[x].operand(0) == &views[y].operand(0);
  };
  EXPECT_TRUE(shares(1, 2));
  EXPECT_TRUE(shares(1, 3));
  EXPECT_TRUE(shares(1, 6));
  EXPECT_TRUE(shares(7, 8));
  EXPECT_FALSE(shares(1, 4));
  EXPECT_FALSE(shares(1, 5));
  EXPECT_FALSE(shares(0, 7));
  // A shared record still binds each instruction's own message and
  // attributes.
  EXPECT_EQ(&views[6].instr(), &stream.instructions(6));
  EXPECT_EQ(ops::AluOf(views[6], views[6].def().attrs[0]), ops::Alu::kMultiply);
  EXPECT_EQ(ops::AluOf(views[1], views[1].def().attrs[0]), ops::Alu::kAdd);
}

// Bitcast operands keep records of their own (each its own viewed tensor).
TEST(DecodedStreamTest, BitcastOperandsAreNotShared) {
  absl::StatusOr<proto::Graph> graph = Trace1([](Tracer& t) {
    Tensor y = t.Input("y", {4, 8}, proto::BFLOAT16);
    Tensor ints = builder::ndarray({4, 4}, proto::INT32, Buffer::kSbuf, "i");
    isa::dma_copy(ints, y.Bitcast(proto::INT32));
    isa::dma_copy(ints, y.Bitcast(proto::INT32));
    Tensor out = t.Allocate({4, 4}, proto::INT32, Buffer::kSharedHbm, "o");
    isa::dma_copy(out, ints);
    t.Output("out", out);
  });
  ASSERT_TRUE(graph.ok()) << graph.status();
  absl::StatusOr<ops::DecodedStream> decoded = ops::DecodedStream::Decode(
      graph->streams(0), graph->tensors(), graph->world());
  ASSERT_TRUE(decoded.ok()) << decoded.status();
  EXPECT_EQ(decoded->operand_records(), 2 + 2 + 2);
}

}  // namespace
}  // namespace nkigraph
