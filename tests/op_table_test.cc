// The op table: every proto opcode has exactly one definition, named after
// it; the registry refuses definitions that clash or contradict themselves;
// the builder writes attributes through the op's schema.
#include <map>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "ops/instr_facts.h"
#include "ops/op_def.h"
#include "ops/op_list.h"
#include "tests/test_util.h"

namespace nkigraph {
namespace {

using builder::Buffer;
using builder::Tensor;
using builder::Tracer;
namespace isa = builder::isa;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using testing::Trace1;

TEST(OpTableTest, EveryProtoOpcodeHasExactlyOneDefinitionNamedAfterIt) {
  EXPECT_TRUE(ops::OpTableStatus().ok()) << ops::OpTableStatus();
  std::map<int, int> definitions;  // opcode -> files defining it
  for (const ops::OpDefiner& definer : ops::GeneratedOpDefiners()) {
    ++definitions[definer.opcode];
  }
  const google::protobuf::EnumDescriptor* opcodes = proto::Opcode_descriptor();
  int defined = 0;
  for (int v = 0; v < opcodes->value_count(); ++v) {
    const google::protobuf::EnumValueDescriptor* value = opcodes->value(v);
    const auto opcode = static_cast<proto::Opcode>(value->number());
    if (opcode == proto::OPCODE_UNSPECIFIED) {
      EXPECT_EQ(ops::FindOp(opcode), nullptr);
      EXPECT_EQ(definitions.count(opcode), 0u);
      continue;
    }
    SCOPED_TRACE(value->name());
    EXPECT_EQ(definitions[opcode], 1);
    const ops::OpDef* def = ops::FindOp(opcode);
    ASSERT_NE(def, nullptr);
    EXPECT_EQ(def->opcode, opcode);
    EXPECT_FALSE(def->roles.empty());
    ++defined;
  }
  // Nothing defined outside the enum either.
  EXPECT_EQ(ops::GeneratedOpDefiners().size(), static_cast<size_t>(defined));
}

// The names graphs, labels and errors show, as users write them.
TEST(OpTableTest, OpsAreNamedAsInNki) {
  EXPECT_EQ(ops::FindOp(proto::NC_MATMUL)->name, "nc_matmul");
  EXPECT_EQ(ops::FindOp(proto::DMA_COPY)->name, "dma_copy");
  EXPECT_EQ(ops::FindOp(proto::NC_FIND_INDEX8)->name, "nc_find_index8");
  EXPECT_EQ(
      ops::FindOp(proto::COLLECTIVE_PERMUTE_IMPLICIT_CURRENT_PROCESSING_RANK_ID)
          ->name,
      "collective_permute_implicit_current_processing_rank_id");
}

ops::OpDef CopyLike() { return *ops::FindOp(proto::TENSOR_COPY); }
ops::OpDef MemsetLike() { return *ops::FindOp(proto::MEMSET); }

TEST(OpTableTest, RegistryRefusesAnOpcodeDefinedTwice) {
  const ops::OpDefiner definers[] = {{proto::TENSOR_COPY, &CopyLike},
                                     {proto::MEMSET, &MemsetLike},
                                     {proto::TENSOR_COPY, &MemsetLike}};
  const absl::Status status = ops::CheckOpDefiners(definers);
  EXPECT_FALSE(status.ok());
  EXPECT_THAT(status.message(), HasSubstr("tensor_copy is defined twice"));
  const ops::OpDefiner once[] = {{proto::TENSOR_COPY, &CopyLike},
                                 {proto::MEMSET, &MemsetLike}};
  EXPECT_TRUE(ops::CheckOpDefiners(once).ok());
}

TEST(OpTableTest, RegistryRefusesAnOpcodeOutsideTheProto) {
  const ops::OpDefiner definers[] = {
      {static_cast<proto::Opcode>(999), &CopyLike},
      {proto::OPCODE_UNSPECIFIED, &CopyLike}};
  const absl::Status status = ops::CheckOpDefiners(definers);
  EXPECT_THAT(status.message(),
              HasSubstr("a definition for opcode 999, which the proto does "
                        "not define"));
  EXPECT_THAT(status.message(), HasSubstr("opcode 0, which the proto"));
}

ops::OpDef EngineAttrDisagrees() {
  ops::OpDef def = CopyLike();
  def.engine = ops::Engine::kGpSimd;  // its "engine" attribute says vector
  return def;
}
ops::OpDef SyncWithoutGroupSemantics() {
  ops::OpDef def = CopyLike();
  def.sync = ops::SyncKind::kCoreBarrier;
  def.sync_rule = ops::kCoreBarrierRule;
  return def;
}
constexpr ops::OperandRole kVariadicFirst[] = {
    {"srcs", ops::Access::kRead, ops::kSbuf, false, /*variadic=*/true},
    {"dst", ops::Access::kWrite, ops::kSbuf}};
ops::OpDef VariadicNotLast() {
  ops::OpDef def = CopyLike();
  def.roles = kVariadicFirst;
  return def;
}
constexpr ops::AttrSpec kTwice[] = {ops::FlagSpec("x", "one"),
                                    ops::FlagSpec("x", "two")};
ops::OpDef AttributeTwice() {
  ops::OpDef def = CopyLike();
  def.attrs = kTwice;
  return def;
}
constexpr ops::AttrSpec kBadDefault[] = {
    ops::IntSpec("n", 7, "a default outside its range").Range(0, 3)};
ops::OpDef DefaultOutsideRange() {
  ops::OpDef def = CopyLike();
  def.attrs = kBadDefault;
  return def;
}

TEST(OpTableTest, RegistryRefusesDefinitionsThatContradictThemselves) {
  struct Case {
    ops::OpDef (*define)();
    const char* message;
  };
  for (const Case& c : std::vector<Case>{
           {&EngineAttrDisagrees,
            "the 'engine' attribute must default to the op's engine, gpsimd"},
           {&SyncWithoutGroupSemantics,
            "a sync op needs members, matches and execute_group"},
           {&VariadicNotLast, "role 'srcs' is variadic but not the last"},
           {&AttributeTwice, "attribute 'x' is declared twice"},
           {&DefaultOutsideRange,
            "attribute 'n' defaults to a value outside its range"},
       }) {
    const ops::OpDefiner definers[] = {{proto::TENSOR_COPY, c.define}};
    const absl::Status status = ops::CheckOpDefiners(definers);
    EXPECT_THAT(status.message(), HasSubstr(c.message));
  }
}

// The one instruction `emit` traces (after a load of its inputs).
proto::Instruction TraceOne(const std::function<void(Tensor, Tensor)>& emit) {
  absl::StatusOr<proto::Graph> graph = Trace1([&](Tracer&) {
    Tensor a = builder::ndarray({4, 8}, proto::FLOAT32, Buffer::kSbuf, "a");
    Tensor b = builder::ndarray({4, 8}, proto::FLOAT32, Buffer::kSbuf, "b");
    emit(a, b);
  });
  EXPECT_TRUE(graph.ok()) << graph.status();
  if (!graph.ok() || graph->streams(0).instructions_size() != 1) return {};
  return graph->streams(0).instructions(0);
}

std::vector<std::string> AttrNames(const proto::Instruction& instr) {
  std::vector<std::string> names;
  for (const proto::Attr& attr : instr.attrs()) names.push_back(attr.name());
  return names;
}

TEST(EmitterTest, LeavesOutAttributesAtTheirSchemaDefault) {
  // activation: scale 1 and bias 0 are the defaults, reduce_cmd idle too.
  proto::Instruction act = TraceOne(
      [](Tensor a, Tensor b) { isa::activation(a, isa::ActFunc::kExp, b); });
  EXPECT_THAT(AttrNames(act), ElementsAre("func"));
  act = TraceOne([](Tensor a, Tensor b) {
    isa::activation(
        a, isa::ActFunc::kExp, b,
        {.bias = 0.5f, .scale = 2.0f, .reduce_cmd = isa::ReduceCmd::kReset});
  });
  EXPECT_THAT(AttrNames(act),
              ElementsAre("func", "scale", "bias", "reduce_cmd"));
  EXPECT_EQ(act.attrs(1).f(), 2.0);
  EXPECT_EQ(act.attrs(2).f(), 0.5);
  EXPECT_EQ(act.attrs(3).s(), "reset");

  // An engine attribute at the op's own engine is left out.
  proto::Instruction copy = TraceOne(
      [](Tensor a, Tensor b) { isa::tensor_copy(a, b, isa::Engine::kVector); });
  EXPECT_TRUE(copy.attrs().empty());
  copy = TraceOne(
      [](Tensor a, Tensor b) { isa::tensor_copy(a, b, isa::Engine::kGpSimd); });
  ASSERT_THAT(AttrNames(copy), ElementsAre("engine"));
  EXPECT_EQ(copy.attrs(0).s(), "gpsimd");

  proto::Instruction reduce = TraceOne([](Tensor a, Tensor b) {
    isa::tensor_reduce(a.Slice(1, 0, 1), isa::Alu::kAdd, b);
  });
  EXPECT_THAT(AttrNames(reduce), ElementsAre("op"));
}

TEST(EmitterTest, KeepsAttributesGraphsAlwaysCarriedEvenAtTheirDefault) {
  // memset's value is written even when 0 (graph files always had it).
  const proto::Instruction set =
      TraceOne([](Tensor a, Tensor) { isa::memset(a, 0.0f); });
  ASSERT_THAT(AttrNames(set), ElementsAre("value"));
  EXPECT_EQ(set.attrs(0).f(), 0.0);
  EXPECT_TRUE(ops::FindOp(proto::MEMSET)->attrs[0].written_at_default);
}

TEST(EmitterTest, PlacesOperandsInTheDefsRoleOrder) {
  // Only reduce_res of activation's three optional operands is given: bias
  // and scale stay empty slots before it.
  proto::Instruction act;
  absl::StatusOr<proto::Graph> graph = Trace1([&](Tracer&) {
    Tensor a = builder::ndarray({4, 8}, proto::FLOAT32, Buffer::kSbuf, "a");
    Tensor b = builder::ndarray({4, 8}, proto::FLOAT32, Buffer::kSbuf, "b");
    Tensor r = builder::ndarray({4, 1}, proto::FLOAT32, Buffer::kSbuf, "r");
    isa::activation(
        a, isa::ActFunc::kCopy, b,
        {.reduce_cmd = isa::ReduceCmd::kResetReduce, .reduce_res = r});
  });
  ASSERT_TRUE(graph.ok()) << graph.status();
  act = graph->streams(0).instructions(0);
  ASSERT_EQ(act.operands_size(), 5);
  const auto slot = [](absl::string_view role) {
    return *ops::RoleSlot(proto::ACTIVATION, role);
  };
  EXPECT_EQ(act.operands(slot("dst")).tensor_id(), 1u);
  EXPECT_EQ(act.operands(slot("data")).tensor_id(), 2u);
  EXPECT_EQ(act.operands(slot("bias")).tensor_id(), 0u);
  EXPECT_EQ(act.operands(slot("scale")).tensor_id(), 0u);
  EXPECT_EQ(act.operands(slot("reduce_res")).tensor_id(), 3u);
}

TEST(InstrFactsTest, AttributesReadThroughTheSchema) {
  const proto::Instruction act = TraceOne(
      [](Tensor a, Tensor b) { isa::activation(a, isa::ActFunc::kExp, b); });
  EXPECT_EQ(*ops::StrAttr(act, "func"), "exp");
  EXPECT_EQ(*ops::FloatAttr(act, "scale"), 1.0);  // the schema's default
  EXPECT_EQ(*ops::StrAttr(act, "reduce_cmd"), "idle");
  EXPECT_THAT(ops::FloatAttr(act, "scael").status().message(),
              HasSubstr("activation has no attribute 'scael'"));
  EXPECT_THAT(ops::IntAttr(act, "scale").status().message(),
              HasSubstr("'scale' is a float, not an int"));
  proto::Instruction no_func = act;
  no_func.clear_attrs();
  EXPECT_THAT(ops::StrAttr(no_func, "func").status().message(),
              HasSubstr("lacks its required 'func'"));
}

TEST(InstrFactsTest, RolesAndNames) {
  EXPECT_EQ(*ops::RoleSlot(proto::NC_MATMUL, "moving"), 2);
  EXPECT_THAT(ops::RoleSlot(proto::NC_MATMUL, "rhs").status().message(),
              HasSubstr("nc_matmul has no operand role 'rhs'"));
  EXPECT_EQ(ops::OperandName(proto::DMA_COMPUTE, 0), "dst");
  EXPECT_EQ(ops::OperandName(proto::DMA_COMPUTE, 1), "src[0]");
  EXPECT_EQ(ops::OperandName(proto::DMA_COMPUTE, 3), "src[2]");
  EXPECT_EQ(ops::OperandName(proto::TENSOR_COPY, 2), "operand 2");
  EXPECT_EQ(ops::OpcodeName(proto::NC_FIND_INDEX8), "nc_find_index8");
  EXPECT_EQ(ops::OpcodeName(static_cast<proto::Opcode>(999)), "opcode_999");
  EXPECT_EQ(ops::ShortOpcodeName(proto::COLLECTIVE_PERMUTE_IMPLICIT),
            "coll_permute");
}

TEST(InstrFactsTest, AnEngineAttributeOverridesTheOpsEngine) {
  const proto::Instruction vector = TraceOne(
      [](Tensor a, Tensor b) { isa::tensor_copy(a, b, isa::Engine::kVector); });
  const proto::Instruction gpsimd = TraceOne(
      [](Tensor a, Tensor b) { isa::tensor_copy(a, b, isa::Engine::kGpSimd); });
  EXPECT_EQ(ops::EngineOf(vector), ops::Engine::kVector);
  EXPECT_EQ(ops::EngineOf(gpsimd), ops::Engine::kGpSimd);
  const proto::Instruction transpose = TraceOne([](Tensor a, Tensor b) {
    isa::nc_transpose(a.Slice(1, 0, 4), b.Slice(1, 0, 4), isa::Engine::kVector);
  });
  EXPECT_EQ(ops::EngineOf(transpose), ops::Engine::kVector);
  proto::Instruction unknown;
  unknown.set_opcode(static_cast<proto::Opcode>(999));
  EXPECT_EQ(ops::EngineOf(unknown), std::nullopt);
}

TEST(InstrFactsTest, OperandAccessMasksAgreeWithTheOneOperandRule) {
  // By hand: nc_matmul reads stationary and moving, writes dst, and reads
  // dst as well when it accumulates.
  proto::Instruction matmul;
  matmul.set_opcode(proto::NC_MATMUL);
  for (int o = 0; o < 3; ++o) matmul.add_operands();
  const ops::OpDef& def = *ops::FindOp(proto::NC_MATMUL);
  ops::OperandAccess plain = ops::OperandAccessOf(def, matmul);
  EXPECT_EQ(plain.reads, 0b110u);
  EXPECT_EQ(plain.writes, 0b001u);
  proto::Attr* accumulate = matmul.add_attrs();
  accumulate->set_name("accumulate");
  accumulate->set_i(1);
  EXPECT_EQ(ops::OperandAccessOf(def, matmul).reads, 0b111u);

  // Every op, with more operands than roles (variadic or not), its flags
  // unset and set: the masks say what ReadsOperand / WritesOperand say.
  for (int code = 0; code < proto::Opcode_ARRAYSIZE; ++code) {
    const ops::OpDef* op = ops::FindOp(static_cast<proto::Opcode>(code));
    if (op == nullptr) continue;
    proto::Instruction instr;
    instr.set_opcode(op->opcode);
    for (size_t o = 0; o < op->roles.size() + 2; ++o) instr.add_operands();
    for (int flags_set = 0; flags_set < 2; ++flags_set) {
      if (flags_set == 1) {
        for (const ops::OperandRole& role : op->roles) {
          if (role.also_read_if.empty()) continue;
          proto::Attr* attr = instr.add_attrs();
          attr->set_name(std::string(role.also_read_if));
          attr->set_i(1);
        }
      }
      const ops::OperandAccess access = ops::OperandAccessOf(*op, instr);
      for (int o = 0; o < instr.operands_size(); ++o) {
        SCOPED_TRACE(
            absl::StrCat(op->name, " operand ", o, " flags ", flags_set));
        EXPECT_EQ((access.reads >> o) & 1, ops::ReadsOperand(instr, o));
        EXPECT_EQ((access.writes >> o) & 1, ops::WritesOperand(instr, o));
      }
    }
  }
}

}  // namespace
}  // namespace nkigraph
