// A view made from operands held apart from the instruction (the tracer's
// form: plain patterns, no AccessPattern messages) resolves and checks
// exactly as one made from the message: the same operands and accessors,
// the same errors.
#include "ops/instr_view.h"

#include <cstdint>
#include <vector>

#include "gtest/gtest.h"
#include "ops/access_pattern.h"
#include "ops/attr_spec.h"
#include "ops/op_def.h"
#include "tests/test_util.h"

namespace nkigraph {
namespace {

using builder::Buffer;
using builder::Tensor;
using builder::Tracer;
namespace isa = builder::isa;
using testing::Trace1;

// Plain views, a bitcast, a strided slice, a dynamic offset and absent
// optional operands.
proto::Graph MixedGraph() {
  absl::StatusOr<proto::Graph> graph = Trace1([](Tracer& t) {
    Tensor x = t.Input("x", {4, 8}, proto::FLOAT32);
    Tensor y = t.Input("y", {4, 8}, proto::BFLOAT16);
    Tensor idx = t.Input("idx", {1, 1}, proto::INT32);
    Tensor a = builder::ndarray({4, 8}, proto::FLOAT32, Buffer::kSbuf, "a");
    Tensor ints = builder::ndarray({4, 4}, proto::INT32, Buffer::kSbuf, "i");
    Tensor row = builder::ndarray({1, 8}, proto::FLOAT32, Buffer::kSbuf, "r");
    isa::dma_copy(a, x);
    isa::dma_copy(ints, y.Bitcast(proto::INT32));
    isa::dma_copy(row, x.Slice(0, 0, 1).WithScalarOffset(idx, 0));
    isa::tensor_tensor(a.Slice(1, 0, 4, 2), a.Slice(1, 1, 4, 2),
                       a.Slice(1, 0, 4, 2), isa::Alu::kAdd);
    isa::activation(a, isa::ActFunc::kExp, a);
    Tensor out = t.Allocate({4, 8}, proto::FLOAT32, Buffer::kSharedHbm, "o");
    isa::dma_copy(out, a);
    t.Output("out", out);
  });
  EXPECT_TRUE(graph.ok()) << graph.status();
  return graph.ok() ? *std::move(graph) : proto::Graph();
}

// The instruction's operands as the tracer holds them, and the message
// without them.
struct Apart {
  proto::Instruction header;
  std::vector<ops::PatternRef> operands;
};
Apart Split(const proto::Instruction& instr) {
  Apart apart{instr, {}};
  for (const proto::AccessPattern& ap : instr.operands()) {
    apart.operands.push_back(ops::PatternOf(ap));
  }
  apart.header.clear_operands();
  return apart;
}

TEST(InstrViewTest, OperandsHeldApartResolveAsTheMessages) {
  const proto::Graph g = MixedGraph();
  ASSERT_EQ(g.streams_size(), 1);
  int dynamic = 0, bitcasts = 0, strided = 0;
  for (const proto::Instruction& instr : g.streams(0).instructions()) {
    SCOPED_TRACE(instr.id());
    const Apart apart = Split(instr);
    ops::InstrView from_message, from_parts;
    ASSERT_TRUE(
        ops::MakeInstrView(instr, g.tensors(), g.world(), &from_message).ok());
    ASSERT_TRUE(ops::MakeInstrView(apart.header,
                                   static_cast<int>(apart.operands.size()),
                                   apart.operands.data(), nullptr, g.tensors(),
                                   g.world(), &from_parts)
                    .ok());
    ASSERT_EQ(from_parts.num_operands(), from_message.num_operands());
    for (int i = 0; i < from_message.num_operands(); ++i) {
      const ops::OperandInfo& m = from_message.operand(i);
      const ops::OperandInfo& p = from_parts.operand(i);
      ASSERT_EQ(p.present(), m.present());
      EXPECT_EQ(p.ap, nullptr);  // no message to point at
      if (!m.present()) {
        EXPECT_EQ(m.ap, nullptr);
        continue;
      }
      const proto::AccessPattern& ap = instr.operands(i);
      EXPECT_EQ(m.ap, &ap);
      // Read against the message itself, not through either view.
      EXPECT_EQ(p.num_dims(), ap.pattern_size() / 2);
      EXPECT_EQ(m.num_dims(), ap.pattern_size() / 2);
      for (int d = 0; d < ap.pattern_size() / 2; ++d) {
        EXPECT_EQ(p.stride(d), ap.pattern(2 * d));
        EXPECT_EQ(p.count(d), ap.pattern(2 * d + 1));
        EXPECT_EQ(m.count(d), ap.pattern(2 * d + 1));
      }
      EXPECT_EQ(p.offset(), ap.offset());
      EXPECT_EQ(m.offset(), ap.offset());
      EXPECT_EQ(p.has_dynamic(), ap.has_dynamic());
      EXPECT_EQ(m.has_dynamic(), ap.has_dynamic());
      EXPECT_EQ(p.elements(), m.elements());
      EXPECT_EQ(p.dtype(), m.dtype());
      EXPECT_EQ(p.tensor->id(), m.tensor->id());
      EXPECT_EQ(p.tensor->shape(p.tensor->shape_size() - 1),
                m.tensor->shape(m.tensor->shape_size() - 1));
      dynamic += ap.has_dynamic();
      bitcasts += ap.view_dtype() != proto::DTYPE_UNSPECIFIED;
      strided +=
          ap.pattern_size() > 2 && ap.pattern(3) == 4 && ap.pattern(2) == 2;
    }
  }
  EXPECT_EQ(dynamic, 1);
  EXPECT_EQ(bitcasts, 1);
  EXPECT_EQ(strided, 3);  // the tensor_tensor's three slices
}

// Hand-worked accessors of the strided slice a[:, 1::2] of a [4, 8] tile:
// partitions stride 8, then 4 elements 2 apart from offset 1.
TEST(InstrViewTest, StridedSliceAccessors) {
  const proto::Graph g = MixedGraph();
  const proto::Instruction& add = g.streams(0).instructions(3);
  ASSERT_EQ(add.opcode(), proto::TENSOR_TENSOR);
  const Apart apart = Split(add);
  ops::InstrView view;
  ASSERT_TRUE(ops::MakeInstrView(
                  apart.header, static_cast<int>(apart.operands.size()),
                  apart.operands.data(), nullptr, g.tensors(), g.world(), &view)
                  .ok());
  const ops::OperandInfo& data1 = view.operand(1);
  EXPECT_EQ(data1.num_dims(), 2);
  EXPECT_EQ(data1.stride(0), 8);
  EXPECT_EQ(data1.count(0), 4);
  EXPECT_EQ(data1.stride(1), 2);
  EXPECT_EQ(data1.count(1), 4);
  EXPECT_EQ(data1.offset(), 1);
  EXPECT_EQ(data1.partitions(), 4);
  EXPECT_EQ(data1.free_size(), 4);
  EXPECT_EQ(data1.elements(), 16);
  EXPECT_FALSE(data1.has_dynamic());
}

// Each generic check gives the same message whichever form the operands
// come in.
TEST(InstrViewTest, OperandsHeldApartFailAsTheMessages) {
  const proto::Graph g = MixedGraph();
  const proto::Instruction& copy = g.streams(0).instructions(0);
  ASSERT_EQ(copy.opcode(), proto::DMA_COPY);
  struct Case {
    const char* what;
    void (*spoil)(proto::Instruction*);
    const char* message;
  };
  const Case cases[] = {
      {"out of bounds",
       [](proto::Instruction* i) { i->mutable_operands(1)->set_offset(1); },
       "access outside tensor 'x'"},
      {"no such tensor",
       [](proto::Instruction* i) { i->mutable_operands(0)->set_tensor_id(99); },
       "names tensor id 99"},
      {"missing",
       [](proto::Instruction* i) { i->mutable_operands(1)->Clear(); },
       "operand 'src' is missing"},
      {"bad dynamic",
       [](proto::Instruction* i) {
         i->mutable_operands(1)->mutable_dynamic()->set_kind(
             proto::DynamicOffset::SCALAR);
       },
       "dynamic offset names tensor id 0"},
      {"odd pattern",
       [](proto::Instruction* i) { i->mutable_operands(1)->add_pattern(1); },
       "not a list of [stride, count] pairs"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.what);
    proto::Instruction spoiled = copy;
    c.spoil(&spoiled);
    const Apart apart = Split(spoiled);
    ops::InstrView a, b;
    const absl::Status from_message =
        ops::MakeInstrView(spoiled, g.tensors(), g.world(), &a);
    const absl::Status from_parts = ops::MakeInstrView(
        apart.header, static_cast<int>(apart.operands.size()),
        apart.operands.data(), nullptr, g.tensors(), g.world(), &b);
    EXPECT_FALSE(from_message.ok());
    EXPECT_EQ(from_parts, from_message);
    EXPECT_NE(from_message.message().find(c.message), absl::string_view::npos)
        << from_message;
  }
}

// Each attribute's index in the op's specs, as the builder knows it.
std::vector<uint8_t> SpecsOf(const proto::Instruction& instr) {
  const ops::OpDef& def = *ops::FindOp(instr.opcode());
  std::vector<uint8_t> specs;
  for (const proto::Attr& attr : instr.attrs()) {
    size_t k = 0;
    while (k < def.attrs.size() && def.attrs[k].name != attr.name()) ++k;
    EXPECT_LT(k, def.attrs.size()) << attr.name();
    specs.push_back(static_cast<uint8_t>(k));
  }
  return specs;
}

// Attributes given with their specs read as the message's do, and a
// string's choice is its index in the allowed values (ResolveAttr's).
TEST(InstrViewTest, AttributesBySpecReadAsByName) {
  const proto::Graph g = MixedGraph();
  int choices = 0;
  for (const proto::Instruction& instr : g.streams(0).instructions()) {
    SCOPED_TRACE(instr.id());
    const Apart apart = Split(instr);
    const std::vector<uint8_t> specs = SpecsOf(instr);
    ops::InstrView by_name, by_spec;
    ASSERT_TRUE(
        ops::MakeInstrView(instr, g.tensors(), g.world(), &by_name).ok());
    ASSERT_TRUE(ops::MakeInstrView(apart.header,
                                   static_cast<int>(apart.operands.size()),
                                   apart.operands.data(), specs.data(),
                                   g.tensors(), g.world(), &by_spec)
                    .ok());
    for (const ops::AttrSpec& spec : by_name.def().attrs) {
      EXPECT_EQ(by_spec.Has(spec), by_name.Has(spec)) << spec.name;
      EXPECT_EQ(by_spec.Int(spec), by_name.Int(spec)) << spec.name;
      EXPECT_EQ(by_spec.Float(spec), by_name.Float(spec)) << spec.name;
      EXPECT_EQ(by_spec.Str(spec), by_name.Str(spec)) << spec.name;
      EXPECT_EQ(by_spec.Ints(spec).size(), by_name.Ints(spec).size());
      EXPECT_EQ(by_spec.Choice(spec), ops::ResolveAttr(instr, spec).choice)
          << spec.name;
      choices += by_spec.Choice(spec) >= 0;
    }
  }
  EXPECT_GE(choices, 2);  // the tensor_tensor's op, the activation's func
}

// The attribute checks give the same messages by spec as by name.
TEST(InstrViewTest, AttributesBySpecFailAsByName) {
  const proto::Graph g = MixedGraph();
  const proto::Instruction& add = g.streams(0).instructions(3);
  ASSERT_EQ(add.opcode(), proto::TENSOR_TENSOR);
  ASSERT_EQ(add.attrs_size(), 1);
  struct Case {
    const char* what;
    void (*spoil)(proto::Instruction*);
    const char* message;
  };
  const Case cases[] = {
      {"not allowed",
       [](proto::Instruction* i) { i->mutable_attrs(0)->set_s("addd"); },
       "attribute 'op' is 'addd'; one of"},
      {"wrong type",
       [](proto::Instruction* i) { i->mutable_attrs(0)->set_i(1); },
       "attribute 'op' is an int; it must be a string"},
      {"no value",
       [](proto::Instruction* i) { i->mutable_attrs(0)->clear_value(); },
       "attribute 'op' has no value"},
      {"twice", [](proto::Instruction* i) { *i->add_attrs() = i->attrs(0); },
       "attribute 'op' is given twice"},
      {"missing", [](proto::Instruction* i) { i->clear_attrs(); },
       "attribute 'op' is missing"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.what);
    proto::Instruction spoiled = add;
    c.spoil(&spoiled);
    const Apart apart = Split(spoiled);
    const std::vector<uint8_t> specs = SpecsOf(spoiled);
    ops::InstrView a, b;
    const absl::Status by_name =
        ops::MakeInstrView(spoiled, g.tensors(), g.world(), &a);
    const absl::Status by_spec = ops::MakeInstrView(
        apart.header, static_cast<int>(apart.operands.size()),
        apart.operands.data(), specs.data(), g.tensors(), g.world(), &b);
    EXPECT_FALSE(by_name.ok());
    EXPECT_EQ(by_spec, by_name);
    EXPECT_NE(by_name.message().find(c.message), absl::string_view::npos)
        << by_name;
  }
}

}  // namespace
}  // namespace nkigraph
