// Hostile or corrupt graphs and inputs get an error naming the problem,
// never a crash, hang or unbounded allocation.
#include <cstdint>
#include <fstream>
#include <limits>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "graph/validate.h"
#include "gtest/gtest.h"
#include "tests/scoped_temp_dir.h"
#include "tests/test_util.h"
#include "util/diagnostic.h"
#include "util/graph_io.h"

namespace nkigraph {
namespace {

using builder::Buffer;
using builder::Tensor;
using builder::Tracer;
namespace isa = builder::isa;
using ::testing::AllOf;
using testing::Floats;
using ::testing::HasSubstr;
using testing::Ints;
using testing::MutableOperandOf;
using testing::OperandOf;
using testing::RunGraph;
using testing::ScopedTempDir;
using testing::Trace1;

constexpr int64_t kHuge = int64_t{1} << 40;

// Tensors: 1 x [2, 3] input, 2 e [1] int32 input, 3 s [2, 3] sbuf,
// 4 r [1, 3] sbuf, 5 out [2, 3].
// Instructions: #0 dma_copy s <- x; #1 dma_copy r <- x[e] (scalar dynamic
// offset); #2 tensor_tensor s[0] = s[0] + r; #3 dma_copy out <- s.
proto::Graph BaseGraph() {
  absl::StatusOr<proto::Graph> graph = Trace1([](Tracer& t) {
    Tensor x = t.Input("x", {2, 3}, proto::FLOAT32);
    Tensor e = t.Input("e", {1}, proto::INT32);
    Tensor s = builder::ndarray({2, 3}, proto::FLOAT32, Buffer::kSbuf, "s");
    Tensor r = builder::ndarray({1, 3}, proto::FLOAT32, Buffer::kSbuf, "r");
    Tensor out = t.Allocate({2, 3}, proto::FLOAT32, Buffer::kSharedHbm, "o");
    isa::dma_copy(s, x);
    isa::dma_copy(r, x.Slice(0, 0, 1).WithScalarOffset(e, 0));
    isa::tensor_tensor(s.Slice(0, 0, 1), s.Slice(0, 0, 1), r, isa::Alu::kAdd);
    isa::dma_copy(out, s);
    t.Output("out", out);
  });
  EXPECT_TRUE(graph.ok()) << graph.status();
  return graph.ok() ? *graph : proto::Graph();
}

std::vector<HostArray> BaseInputs() {
  return {Floats("x", {2, 3}, {1, 2, 3, 4, 5, 6}), Ints("e", {1}, {1})};
}

proto::Instruction* Instr(proto::Graph& graph, int position) {
  return graph.mutable_streams(0)->mutable_instructions(position);
}

std::string Problems(const proto::Graph& graph) {
  std::string all;
  for (const Diagnostic& problem : graph::ValidateGraph(graph)) {
    absl::StrAppend(&all, Render(problem), "\n");
  }
  return all;
}

// The graph is refused when loaded, with `what` in the message.
void ExpectRefused(const proto::Graph& graph, absl::string_view what) {
  EXPECT_THAT(Problems(graph), HasSubstr(what));
  absl::StatusOr<std::unique_ptr<interp::Interpreter>> interp =
      interp::Interpreter::Create(graph);
  ASSERT_FALSE(interp.ok()) << what;
  EXPECT_EQ(interp.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(interp.status().message(), HasSubstr(what));
}

void WriteBytes(const std::string& path, const std::string& bytes) {
  std::ofstream file(path, std::ios::binary | std::ios::trunc);
  file.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

TEST(MalformedBaseTest, TheBaseGraphIsValidAndRuns) {
  proto::Graph graph = BaseGraph();
  EXPECT_EQ(Problems(graph), "");
  absl::StatusOr<std::map<std::string, HostArray>> out =
      RunGraph(graph, BaseInputs());
  ASSERT_TRUE(out.ok()) << out.status();
  // Row 0 of x plus row e = 1 of x; row 1 unchanged.
  EXPECT_THAT(out->at("out").f32, ::testing::ElementsAre(5, 7, 9, 4, 5, 6));
}

// ---------------------------------------------------------------------------
// Files

TEST(MalformedFileTest, TruncatedBinaryGraphIsAnError) {
  const proto::Graph graph = BaseGraph();
  const ScopedTempDir dir;
  const std::string path = dir.Path("full.pb");
  ASSERT_TRUE(WriteGraph(graph, path).ok());
  const std::string bytes = SerializeDeterministic(graph);
  ASSERT_GT(bytes.size(), 100u);
  const std::string cut = dir.Path("cut.pb");
  for (size_t size : {bytes.size() - 1, bytes.size() / 2, size_t{3}}) {
    WriteBytes(cut, bytes.substr(0, size));
    absl::StatusOr<proto::Graph> read = ReadGraph(cut);
    ASSERT_FALSE(read.ok()) << "truncated to " << size;
    EXPECT_THAT(read.status().message(), HasSubstr("truncated or corrupt"));
  }
  // Every truncation is refused somewhere, or (cut between whole fields,
  // e.g. only the source file names lost) still runs; nothing crashes.
  int refused = 0;
  for (size_t size = 0; size < bytes.size(); ++size) {
    proto::Graph partial;
    if (!partial.ParseFromString(bytes.substr(0, size))) {
      ++refused;
      continue;
    }
    absl::StatusOr<std::unique_ptr<interp::Interpreter>> interp =
        interp::Interpreter::Create(partial);
    if (!interp.ok()) {
      ++refused;
      continue;
    }
    EXPECT_TRUE((*interp)->FillRandomInputs(size).ok());
    (void)(*interp)->Run();
  }
  EXPECT_GT(refused, static_cast<int>(bytes.size()) * 9 / 10);
}

TEST(MalformedFileTest, RandomBytesAreAnError) {
  std::mt19937 rng(12345);
  const ScopedTempDir dir;
  const std::string path = dir.Path("random.pb");
  for (int trial = 0; trial < 200; ++trial) {
    std::string bytes(1 + rng() % 2000, '\0');
    for (char& c : bytes) c = static_cast<char>(rng());
    WriteBytes(path, bytes);
    absl::StatusOr<proto::Graph> read = ReadGraph(path);
    if (!read.ok()) continue;
    EXPECT_FALSE(interp::Interpreter::Create(*read).ok()) << "trial " << trial;
  }
}

TEST(MalformedFileTest, NewerSchemaVersionIsRefusedByTheReader) {
  proto::Graph graph = BaseGraph();
  graph.set_schema_version(static_cast<proto::SchemaVersion>(3));
  const ScopedTempDir dir;
  const std::string path = dir.Path("newer.pb");
  WriteBytes(path, SerializeDeterministic(graph));
  absl::StatusOr<proto::Graph> read = ReadGraph(path);
  ASSERT_FALSE(read.ok());
  EXPECT_THAT(read.status().message(),
              HasSubstr("graph schema version 3 is newer than this nkigraph"));
  ExpectRefused(graph, "graph schema version 3 is newer than this nkigraph");
}

TEST(MalformedFileTest, MissingSchemaVersionIsRefused) {
  proto::Graph graph = BaseGraph();
  graph.clear_schema_version();
  ExpectRefused(graph, "graph has no schema_version");
}

// Flips random bytes of a valid graph: whatever still parses is refused or
// runs to an error or a result; nothing crashes or allocates without bound.
TEST(MalformedFileTest, BitFlippedGraphsNeverCrash) {
  const std::string bytes = SerializeDeterministic(BaseGraph());
  std::mt19937 rng(777);
  interp::RunOptions options;
  options.memory_limit_bytes = int64_t{64} << 20;
  int parsed = 0;
  int ran = 0;
  for (int trial = 0; trial < 3000; ++trial) {
    std::string mutated = bytes;
    const int flips = 1 + static_cast<int>(rng() % 3);
    for (int f = 0; f < flips; ++f) {
      mutated[rng() % mutated.size()] ^= static_cast<char>(1u << (rng() % 8));
    }
    proto::Graph graph;
    if (!graph.ParseFromString(mutated)) continue;
    ++parsed;
    absl::StatusOr<std::unique_ptr<interp::Interpreter>> interp =
        interp::Interpreter::Create(graph, options);
    if (!interp.ok()) {
      EXPECT_FALSE(interp.status().message().empty());
      continue;
    }
    EXPECT_TRUE((*interp)->FillRandomInputs(trial).ok());
    absl::Status status = (*interp)->Run();
    if (status.ok()) ++ran;
  }
  EXPECT_GT(parsed, 100);
  EXPECT_GT(ran, 0);
}

// ---------------------------------------------------------------------------
// Operands and dynamic offsets

TEST(MalformedOperandTest, TensorIdOutOfRange) {
  proto::Graph graph = BaseGraph();
  MutableOperandOf(Instr(graph, 0), "src")->set_tensor_id(99);
  ExpectRefused(graph,
                "operand 'src' names tensor id 99, which does not exist");
  EXPECT_THAT(Problems(graph), HasSubstr("instruction #0 dma_copy"));
}

TEST(MalformedOperandTest, MissingRequiredOperand) {
  proto::Graph graph = BaseGraph();
  MutableOperandOf(Instr(graph, 2), "data2")->set_tensor_id(0);
  ExpectRefused(graph, "operand 'data2' is missing");
  graph = BaseGraph();
  Instr(graph, 2)->mutable_operands()->RemoveLast();
  ExpectRefused(graph, "operand 'data2' is missing");
}

TEST(MalformedOperandTest, TooManyOperands) {
  proto::Graph graph = BaseGraph();
  *Instr(graph, 0)->add_operands() = OperandOf(*Instr(graph, 0), "dst");
  ExpectRefused(graph, "has 3 operands; at most 2 allowed");
}

TEST(MalformedOperandTest, OperandInTheWrongMemorySpace) {
  proto::Graph graph = BaseGraph();
  MutableOperandOf(Instr(graph, 2), "data1")->set_tensor_id(1);  // x: HBM
  ExpectRefused(graph, "operand 'data1' ('x') is in shared_hbm");
}

TEST(MalformedOperandTest, DynamicOffsetTensorIdOutOfRange) {
  proto::Graph graph = BaseGraph();
  proto::DynamicOffset* dyn =
      MutableOperandOf(Instr(graph, 1), "src")->mutable_dynamic();
  dyn->set_tensor_id(77);
  ExpectRefused(graph,
                "dynamic offset names tensor id 77, which does not exist");
  dyn->set_tensor_id(0);
  ExpectRefused(graph,
                "dynamic offset names tensor id 0, which does not exist");
}

TEST(MalformedOperandTest, DynamicOffsetProblems) {
  auto dyn = [](proto::Graph& graph) {
    return MutableOperandOf(Instr(graph, 1), "src")->mutable_dynamic();
  };
  proto::Graph graph = BaseGraph();
  dyn(graph)->set_offset_element(5);
  ExpectRefused(graph,
                "dynamic offset reads elements [5, 5] of 'e', which "
                "has 1");
  graph = BaseGraph();
  dyn(graph)->set_offset_element(-1);
  ExpectRefused(graph, "dynamic offset reads elements [-1, -1]");
  graph = BaseGraph();
  dyn(graph)->set_tensor_id(1);
  ExpectRefused(graph,
                "dynamic offset tensor 'x' is float32; it must be "
                "int32 or uint32");
  graph = BaseGraph();
  dyn(graph)->set_indirect_dim(5);
  ExpectRefused(graph, "indirect_dim 5 is not a dim of 'x' (rank 2)");
  graph = BaseGraph();
  dyn(graph)->set_kind(static_cast<proto::DynamicOffset::Kind>(7));
  ExpectRefused(graph, "dynamic offset has an unknown kind");
  graph = BaseGraph();
  dyn(graph)->set_oob_mode(static_cast<proto::DynamicOffset::OobMode>(9));
  ExpectRefused(graph, "dynamic offset has an unknown kind");
  graph = BaseGraph();
  dyn(graph)->set_kind(proto::DynamicOffset::VECTOR);
  dyn(graph)->set_offset_stride(-1);
  ExpectRefused(graph, "dynamic offset stride is absurd");
}

// A vector offset whose entry stride times entry count overflows int64 must
// not pass the bounds check by wrapping around.
TEST(MalformedOperandTest, VectorOffsetStrideOverflowIsRefused) {
  proto::Graph graph = BaseGraph();
  // dma_copy out <- x with x read through a vector offset of 2^24 + 1
  // rows (stride 0, so the static pattern stays inside x) and entry stride
  // 2^40: the last entry index 2^24 * 2^40 = 2^64 wraps to 0.
  proto::Instruction* copy = Instr(graph, 3);
  MutableOperandOf(copy, "src")->set_tensor_id(1);
  MutableOperandOf(copy, "dst")->set_tensor_id(5);
  for (const char* role : {"dst", "src"}) {
    proto::AccessPattern* ap = MutableOperandOf(copy, role);
    ap->clear_pattern();
    ap->set_offset(0);
    ap->add_pattern(0);
    ap->add_pattern((int64_t{1} << 24) + 1);
    ap->add_pattern(1);
    ap->add_pattern(3);
  }
  proto::DynamicOffset* dyn = MutableOperandOf(copy, "src")->mutable_dynamic();
  dyn->set_kind(proto::DynamicOffset::VECTOR);
  dyn->set_tensor_id(2);
  dyn->set_offset_element(0);
  dyn->set_offset_stride(kHuge);
  dyn->set_indirect_dim(0);
  EXPECT_THAT(Problems(graph), HasSubstr("instruction #3 dma_copy"));
  absl::StatusOr<std::unique_ptr<interp::Interpreter>> interp =
      interp::Interpreter::Create(graph);
  ASSERT_FALSE(interp.ok());
  EXPECT_THAT(interp.status().message(), HasSubstr("dynamic offset"));
}

// ---------------------------------------------------------------------------
// Access patterns

TEST(MalformedPatternTest, OddNumberOfEntries) {
  proto::Graph graph = BaseGraph();
  MutableOperandOf(Instr(graph, 0), "src")->add_pattern(1);
  ExpectRefused(graph, "access pattern is not a list of [stride, count] pairs");
}

TEST(MalformedPatternTest, AbsurdStridesCountsAndOffsets) {
  auto ap = [](proto::Graph& graph) {
    return MutableOperandOf(Instr(graph, 0), "src");  // x, pattern [3,2,1,3]
  };
  proto::Graph graph = BaseGraph();
  ap(graph)->set_pattern(0, kHuge * 4);
  ExpectRefused(graph, "access pattern dim 0 has stride 4398046511104");
  graph = BaseGraph();
  ap(graph)->set_pattern(0, std::numeric_limits<int64_t>::min());
  ExpectRefused(graph, "access pattern dim 0 has stride");
  graph = BaseGraph();
  ap(graph)->set_pattern(3, 0);
  ExpectRefused(graph, "access pattern dim 1 has count 0");
  graph = BaseGraph();
  ap(graph)->set_pattern(3, -3);
  ExpectRefused(graph, "access pattern dim 1 has count -3");
  graph = BaseGraph();
  ap(graph)->set_pattern(1, kHuge * 2);
  ExpectRefused(graph, "access pattern dim 0 has count 2199023255552");
  graph = BaseGraph();
  ap(graph)->set_pattern(0, 0);  // stride 0: in bounds however many rows
  ap(graph)->set_pattern(1, int64_t{1} << 30);
  ap(graph)->set_pattern(2, 0);
  ap(graph)->set_pattern(3, int64_t{1} << 30);
  ExpectRefused(graph, "access pattern has too many elements");
  graph = BaseGraph();
  ap(graph)->set_offset(std::numeric_limits<int64_t>::max() - 1);
  ExpectRefused(graph, "is absurd");
  graph = BaseGraph();
  ap(graph)->set_offset(-1);
  ExpectRefused(graph, "access outside tensor 'x': flat elements [-1, 4]");
  graph = BaseGraph();
  ap(graph)->set_offset(1);
  ExpectRefused(graph,
                "access outside tensor 'x': flat elements [1, 6] not "
                "within [0, 5]");
}

// stride * (count - 1) of 2^40 * 2^24 wraps to 0 in int64: the pattern
// must not pass as staying at its first element.
TEST(MalformedPatternTest, StrideTimesCountOverflowIsRefused) {
  proto::Graph graph = BaseGraph();
  proto::Instruction* copy = Instr(graph, 3);       // out <- s
  MutableOperandOf(copy, "src")->set_tensor_id(1);  // out <- x, both in HBM
  for (const char* role : {"dst", "src"}) {
    proto::AccessPattern* ap = MutableOperandOf(copy, role);
    ap->clear_pattern();
    ap->add_pattern(kHuge);
    ap->add_pattern((int64_t{1} << 24) + 1);
  }
  ExpectRefused(graph,
                "access pattern dim 0 (stride 1099511627776, count "
                "16777217) reaches beyond the int64 range");
}

TEST(MalformedPatternTest, TooManyOrNoDims) {
  proto::Graph graph = BaseGraph();
  proto::AccessPattern* ap = MutableOperandOf(Instr(graph, 3), "src");
  for (int d = 0; d < 7; ++d) {
    ap->add_pattern(0);
    ap->add_pattern(1);
  }
  ExpectRefused(graph, "access pattern has 9 dims (1 to 8 allowed)");
  graph = BaseGraph();
  MutableOperandOf(Instr(graph, 3), "src")->clear_pattern();
  ExpectRefused(graph, "access pattern has 0 dims (1 to 8 allowed)");
}

TEST(MalformedPatternTest, OnChipPatternMustWalkPartitions) {
  proto::Graph graph = BaseGraph();
  // s is [2, 3]: its dim-0 stride must be 3.
  MutableOperandOf(Instr(graph, 3), "src")->set_pattern(0, 1);
  ExpectRefused(graph,
                "on-chip access pattern of 's' must walk partitions in "
                "its first dim (stride 3), not 1");
}

// ---------------------------------------------------------------------------
// Instructions

TEST(MalformedInstructionTest, UnknownOpcode) {
  proto::Graph graph = BaseGraph();
  Instr(graph, 2)->set_opcode(static_cast<proto::Opcode>(999));
  ExpectRefused(graph, "instruction #2 (unknown opcode)");
  EXPECT_THAT(Problems(graph), HasSubstr("unknown opcode 999"));
  graph = BaseGraph();
  Instr(graph, 2)->set_opcode(proto::OPCODE_UNSPECIFIED);
  ExpectRefused(graph, "unknown opcode 0");
}

TEST(MalformedInstructionTest, DuplicateIdsAndBadSourceIndexes) {
  proto::Graph graph = BaseGraph();
  Instr(graph, 2)->set_id(1);
  ExpectRefused(graph, "instruction #1 tensor_tensor");
  EXPECT_THAT(Problems(graph), HasSubstr("duplicate instruction id"));
  graph = BaseGraph();
  Instr(graph, 2)->set_file(50);
  ExpectRefused(graph, "source file or scope index out of range");
  graph = BaseGraph();
  Instr(graph, 2)->set_scope(7);
  ExpectRefused(graph, "source file or scope index out of range");
}

// Ids far beyond the instruction count (a hand-made graph may number its
// instructions so): a duplicate is still found, distinct ones still pass.
TEST(MalformedInstructionTest, DuplicateIdsFarBeyondTheCountAreFound) {
  proto::Graph graph = BaseGraph();
  Instr(graph, 1)->set_id(4000000000u);
  Instr(graph, 2)->set_id(4000000000u);
  EXPECT_THAT(Problems(graph), HasSubstr("duplicate instruction id"));
  graph = BaseGraph();
  Instr(graph, 1)->set_id(3000000000u);
  Instr(graph, 2)->set_id(4000000000u);
  EXPECT_EQ(Problems(graph), "");
}

// `graph`, written to a .pb file and read back, is refused with `what`,
// naming instruction `id` (`opcode`).
void ExpectRefusedFromFile(const proto::Graph& graph, int id,
                           absl::string_view opcode, absl::string_view what) {
  const ScopedTempDir dir;
  const std::string path = dir.Path("attrs.pb");
  ASSERT_TRUE(WriteGraph(graph, path).ok());
  absl::StatusOr<proto::Graph> read = ReadGraph(path);
  ASSERT_TRUE(read.ok()) << read.status();
  ExpectRefused(*read, what);
  EXPECT_THAT(Problems(*read), HasSubstr(absl::StrCat("instruction #", id, " ",
                                                      opcode, " at ")));
}

proto::Attr* AddAttr(proto::Instruction* instr, const std::string& name) {
  proto::Attr* attr = instr->add_attrs();
  attr->set_name(name);
  return attr;
}

TEST(MalformedInstructionTest, AttributesFollowTheOpsSchema) {
  // Instruction #2 is tensor_tensor, whose one attribute is the string 'op'.
  proto::Graph graph = BaseGraph();
  AddAttr(Instr(graph, 2), "opp")->set_s("add");
  ExpectRefusedFromFile(graph, 2, "tensor_tensor",
                        "tensor_tensor: unknown attribute 'opp' (it takes op)");

  graph = BaseGraph();
  Instr(graph, 2)->mutable_attrs(0)->set_i(3);  // op as an int, not a name
  ExpectRefusedFromFile(graph, 2, "tensor_tensor",
                        "attribute 'op' is an int; it must be a string");

  graph = BaseGraph();
  Instr(graph, 2)->mutable_attrs(0)->set_s("frobnicate");
  ExpectRefusedFromFile(
      graph, 2, "tensor_tensor",
      "attribute 'op' is 'frobnicate'; one of add, subtract, multiply");

  graph = BaseGraph();
  AddAttr(Instr(graph, 2), "op")->set_s("add");
  ExpectRefusedFromFile(graph, 2, "tensor_tensor",
                        "attribute 'op' is given twice");

  graph = BaseGraph();
  Instr(graph, 2)->clear_attrs();
  ExpectRefusedFromFile(graph, 2, "tensor_tensor", "attribute 'op' is missing");

  graph = BaseGraph();
  AddAttr(Instr(graph, 2), "");  // a name and no value
  ExpectRefusedFromFile(graph, 2, "tensor_tensor", "unknown attribute ''");

  graph = BaseGraph();
  Instr(graph, 2)->mutable_attrs(0)->clear_value();
  ExpectRefusedFromFile(graph, 2, "tensor_tensor",
                        "attribute 'op' has no value; it must be a string");
}

TEST(MalformedInstructionTest, IntAttributesStayInTheirRange) {
  absl::StatusOr<proto::Graph> traced = Trace1([](Tracer& t) {
    Tensor x = t.Input("x", {2, 3}, proto::FLOAT32);
    Tensor s = builder::ndarray({2, 3}, proto::FLOAT32, Buffer::kSbuf, "s");
    Tensor m = builder::ndarray({2, 1}, proto::FLOAT32, Buffer::kSbuf, "m");
    Tensor out = t.Allocate({2, 1}, proto::FLOAT32, Buffer::kSharedHbm, "o");
    isa::dma_copy(s, x);
    isa::tensor_reduce(m, isa::Alu::kMaximum, s, 1, /*negate=*/true);
    isa::dma_copy(out, m);
    t.Output("out", out);
  });
  ASSERT_TRUE(traced.ok()) << traced.status();
  proto::Graph graph = *traced;
  proto::Instruction* reduce = Instr(graph, 1);
  ASSERT_EQ(reduce->opcode(), proto::TENSOR_REDUCE);
  ASSERT_EQ(reduce->attrs(1).name(), "negate");
  reduce->mutable_attrs(1)->set_i(2);
  ExpectRefusedFromFile(graph, 1, "tensor_reduce",
                        "attribute 'negate' is 2; 0 to 1 allowed");
}

// Instructions: #0 dma_copy x -> s; #1 bn_stats st <- s[:, :512];
// #2 bn_aggr a <- st; #3 tensor_tensor_scan y <- s, s from an immediate;
// #4 tensor_scalar_reduce y, r <- s; #5 tensor_scalar p <- s > 0 (uint8);
// #6 tensor_copy_predicated y <- s where p; #7 dma_copy out <- a.
proto::Graph StatisticsScanSelectGraph() {
  absl::StatusOr<proto::Graph> graph = Trace1([](Tracer& t) {
    Tensor x = t.Input("x", {2, 600}, proto::FLOAT32);
    Tensor s = builder::ndarray({2, 600}, proto::FLOAT32, Buffer::kSbuf, "s");
    Tensor st = builder::ndarray({2, 6}, proto::FLOAT32, Buffer::kSbuf, "st");
    Tensor a = builder::ndarray({2, 2}, proto::FLOAT32, Buffer::kSbuf, "a");
    Tensor y = builder::ndarray({2, 600}, proto::FLOAT32, Buffer::kSbuf, "y");
    Tensor r = builder::ndarray({2, 1}, proto::FLOAT32, Buffer::kSbuf, "r");
    Tensor p = builder::ndarray({2, 600}, proto::UINT8, Buffer::kSbuf, "p");
    Tensor out = t.Allocate({2, 2}, proto::FLOAT32, Buffer::kSharedHbm, "o");
    isa::dma_copy(s, x);
    isa::bn_stats(st, s.Slice(1, 0, 512));
    isa::bn_aggr(a, st);
    isa::tensor_tensor_scan(y, s, s, 0.5f, isa::Alu::kMultiply, isa::Alu::kAdd);
    isa::tensor_scalar_reduce(y, s, isa::Alu::kAdd, 1.0f, isa::Alu::kMaximum,
                              r);
    isa::tensor_scalar(p, s, isa::Alu::kGreater, 0.0f);
    isa::tensor_copy_predicated(y, s, p);
    isa::dma_copy(out, a);
    t.Output("out", out);
  });
  EXPECT_TRUE(graph.ok()) << graph.status();
  return graph.ok() ? *graph : proto::Graph();
}

TEST(MalformedInstructionTest, StatisticsScanAndSelectOpsRefuseHostileFiles) {
  proto::Graph graph = StatisticsScanSelectGraph();
  ASSERT_EQ(Instr(graph, 1)->opcode(), proto::BN_STATS);
  EXPECT_EQ(Problems(graph), "");
  // bn_stats over 600 elements per partition: past bn_stats_fmax.
  MutableOperandOf(Instr(graph, 1), "data")->set_pattern(3, 600);
  ExpectRefusedFromFile(graph, 1, "bn_stats",
                        "'data' has 600 elements per partition; bn_stats "
                        "takes at most 512");
  // bn_aggr reading 5 values a partition: not whole triples.
  graph = StatisticsScanSelectGraph();
  MutableOperandOf(Instr(graph, 2), "data")->set_pattern(3, 5);
  ExpectRefusedFromFile(graph, 2, "bn_aggr",
                        "'data' has 5 elements per partition");
  // The scan without op1.
  graph = StatisticsScanSelectGraph();
  {
    auto* attrs = Instr(graph, 3)->mutable_attrs();
    for (int i = 0; i < attrs->size(); ++i) {
      if (attrs->Get(i).name() == "op1") attrs->DeleteSubrange(i, 1);
    }
  }
  ExpectRefusedFromFile(graph, 3, "tensor_tensor_scan",
                        "attribute 'op1' is missing");
  // A reduction the vector engine's reduce does not offer.
  graph = StatisticsScanSelectGraph();
  for (proto::Attr& attr : *Instr(graph, 4)->mutable_attrs()) {
    if (attr.name() == "reduce_op") attr.set_s("bitwise_or");
  }
  ExpectRefusedFromFile(graph, 4, "tensor_scalar_reduce",
                        "attribute 'reduce_op' is 'bitwise_or'");
  // The predicated copy without its predicate, and with a float one.
  graph = StatisticsScanSelectGraph();
  MutableOperandOf(Instr(graph, 6), "predicate")->set_tensor_id(0);
  ExpectRefused(graph, "operand 'predicate' is missing");
  graph = StatisticsScanSelectGraph();
  MutableOperandOf(Instr(graph, 6), "predicate")
      ->set_tensor_id(OperandOf(*Instr(graph, 6), "src").tensor_id());
  ExpectRefusedFromFile(graph, 6, "tensor_copy_predicated",
                        "'predicate' is float32; uint8, uint16 or uint32");
}

TEST(MalformedFileTest, BitFlippedStatisticsScanSelectGraphsNeverCrash) {
  const std::string bytes = SerializeDeterministic(StatisticsScanSelectGraph());
  std::mt19937 rng(4242);
  interp::RunOptions options;
  options.memory_limit_bytes = int64_t{64} << 20;
  int parsed = 0;
  int ran = 0;
  for (int trial = 0; trial < 1500; ++trial) {
    std::string mutated = bytes;
    const int flips = 1 + static_cast<int>(rng() % 3);
    for (int f = 0; f < flips; ++f) {
      mutated[rng() % mutated.size()] ^= static_cast<char>(1u << (rng() % 8));
    }
    proto::Graph graph;
    if (!graph.ParseFromString(mutated)) continue;
    ++parsed;
    absl::StatusOr<std::unique_ptr<interp::Interpreter>> interp =
        interp::Interpreter::Create(graph, options);
    if (!interp.ok()) {
      EXPECT_FALSE(interp.status().message().empty());
      continue;
    }
    EXPECT_TRUE((*interp)->FillRandomInputs(trial).ok());
    if ((*interp)->Run().ok()) ++ran;
  }
  EXPECT_GT(parsed, 100);
  EXPECT_GT(ran, 0);
}

TEST(MalformedInstructionTest, StreamCountMustMatchCores) {
  proto::Graph graph = BaseGraph();
  graph.add_streams()->set_core(1);
  ExpectRefused(graph, "graph has 2 instruction streams for 1 cores");
  graph = BaseGraph();
  graph.clear_streams();
  ExpectRefused(graph, "graph has 0 instruction streams for 1 cores");
  graph = BaseGraph();
  graph.mutable_streams(0)->set_core(3);
  ExpectRefused(graph, "stream 0 claims core 3");
}

// ---------------------------------------------------------------------------
// Tensors

TEST(MalformedTensorTest, AbsurdShapes) {
  auto shape = [](proto::Graph& graph) {
    return graph.mutable_tensors(0)->mutable_shape();
  };
  proto::Graph graph = BaseGraph();
  shape(graph)->Set(0, kHuge);
  shape(graph)->Set(1, kHuge);
  ExpectRefused(graph, "tensor 1 ('x'): shape has too many elements");
  graph = BaseGraph();
  shape(graph)->Set(0, -3);
  ExpectRefused(graph, "tensor 1 ('x'): shape dim -3 is not positive");
  graph = BaseGraph();
  shape(graph)->Set(1, 0);
  ExpectRefused(graph, "tensor 1 ('x'): shape dim 0 is not positive");
  graph = BaseGraph();
  for (int d = 0; d < 7; ++d) shape(graph)->Add(1);
  ExpectRefused(graph, "tensor 1 ('x'): shape has 9 dims (1 to 8 allowed)");
  graph = BaseGraph();
  shape(graph)->Clear();
  ExpectRefused(graph, "tensor 1 ('x'): shape has 0 dims (1 to 8 allowed)");
}

TEST(MalformedTensorTest, AHugeButWellFormedTensorExceedsTheMemoryLimit) {
  proto::Graph graph = BaseGraph();
  proto::Tensor* big = graph.add_tensors();
  big->set_id(graph.tensors_size());
  big->set_name("big");
  big->set_space(proto::HBM);
  big->set_dtype(proto::FLOAT32);
  big->add_shape(kHuge);
  big->set_address(4096);
  EXPECT_EQ(Problems(graph), "");
  absl::StatusOr<std::unique_ptr<interp::Interpreter>> interp =
      interp::Interpreter::Create(graph);
  ASSERT_FALSE(interp.ok());
  EXPECT_EQ(interp.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_THAT(interp.status().message(), HasSubstr("over the limit of"));
}

TEST(MalformedTensorTest, UnknownDtypeSpaceAndRole) {
  proto::Graph graph = BaseGraph();
  graph.mutable_tensors(2)->set_dtype(static_cast<proto::DType>(42));
  ExpectRefused(graph, "tensor 3 ('s'): unknown dtype 42");
  graph = BaseGraph();
  graph.mutable_tensors(2)->set_dtype(proto::DTYPE_UNSPECIFIED);
  ExpectRefused(graph, "tensor 3 ('s'): unknown dtype 0");
  graph = BaseGraph();
  graph.mutable_tensors(2)->set_space(static_cast<proto::MemorySpace>(9));
  ExpectRefused(graph, "tensor 3 ('s'): unknown memory space 9");
  graph = BaseGraph();
  graph.mutable_tensors(4)->set_role(static_cast<proto::TensorRole>(8));
  ExpectRefused(graph, "unknown role 8");
}

TEST(MalformedTensorTest, IdsCoresAndAddresses) {
  proto::Graph graph = BaseGraph();
  graph.mutable_tensors(0)->set_id(7);
  ExpectRefused(graph, "tensor 1 ('x'): id 7 does not match its position (1)");
  graph = BaseGraph();
  graph.mutable_tensors(2)->set_core(5);
  ExpectRefused(graph,
                "tensor 3 ('s'): belongs to core 5, which does not "
                "exist");
  graph = BaseGraph();
  graph.mutable_tensors(4)->set_address(-8);
  ExpectRefused(graph, "tensor 5 ('out'): negative address -8");
  graph = BaseGraph();
  graph.mutable_tensors(4)->set_address(kHuge * 1024);
  ExpectRefused(graph, "tensor 5 ('out'): address 1125899906842624 is absurd");
  graph = BaseGraph();
  graph.mutable_tensors(2)->set_role(proto::ROLE_OUTPUT);
  ExpectRefused(graph, "tensor 3 ('s'): an input or output must live in HBM");
}

TEST(MalformedTensorTest, ValueRangeOnlyOnInputsAndNotEmpty) {
  proto::Graph graph = BaseGraph();
  graph.mutable_tensors(1)->mutable_value_range()->set_lo(0);
  graph.mutable_tensors(1)->mutable_value_range()->set_hi(1);
  EXPECT_EQ(Problems(graph), "");
  graph.mutable_tensors(1)->mutable_value_range()->set_lo(2);
  ExpectRefused(graph, "tensor 2 ('e'): value range [2, 1] is empty");
  graph = BaseGraph();
  graph.mutable_tensors(4)->mutable_value_range()->set_hi(3);
  ExpectRefused(graph,
                "tensor 5 ('out'): declares a value range but is not an "
                "input");
}

// The host gives inputs and reads outputs by name: two inputs, or two
// outputs, of one name are refused (a fuzzed graph with two inputs 'rhs'
// validated, then left one of them without a value).
TEST(MalformedTensorTest, InputAndOutputNamesAreTheirOwn) {
  proto::Graph graph = BaseGraph();
  graph.mutable_tensors(1)->set_name("x");
  ExpectRefused(graph,
                "tensor 2 ('x'): input name 'x' is taken by tensor 1; the "
                "host gives inputs and reads outputs by name");
  // A second output 'out', and an in-place tensor publishing 'out'.
  graph = BaseGraph();
  proto::Tensor* second = graph.add_tensors();
  *second = graph.tensors(4);
  second->set_id(6);
  ExpectRefused(graph,
                "tensor 6 ('out'): output name 'out' is taken by "
                "tensor 5");
  graph = BaseGraph();
  graph.mutable_tensors(0)->set_role(proto::ROLE_INPUT_OUTPUT);
  graph.mutable_tensors(0)->set_output_name("out");
  ExpectRefused(graph,
                "tensor 5 ('out'): output name 'out' is taken by "
                "tensor 1");
  // An output may share an input's name: they are looked up apart.
  graph = BaseGraph();
  graph.mutable_tensors(4)->set_name("x");
  EXPECT_EQ(Problems(graph), "");
  // An in-place tensor that names no output could never be read back.
  graph = BaseGraph();
  graph.mutable_tensors(0)->set_role(proto::ROLE_INPUT_OUTPUT);
  ExpectRefused(graph,
                "tensor 1 ('x'): is an output without a name (an "
                "input-output tensor names its output in output_name)");
}

TEST(MalformedTensorTest, MisalignedAddressIsRefused) {
  proto::Graph graph = BaseGraph();
  graph.mutable_tensors(2)->set_address(6);  // s holds 4-byte floats
  ExpectRefused(graph,
                "tensor 3 ('s'): address 6 is not a multiple of its "
                "4-byte elements");
  graph.mutable_tensors(2)->set_address(8);
  EXPECT_EQ(Problems(graph), "");
}

// An on-chip address so large that address + row bytes overflows must not
// slip past the capacity check.
TEST(MalformedTensorTest, OnChipAddressThatOverflowsIsRefused) {
  proto::Graph graph = BaseGraph();
  graph.mutable_tensors(2)->set_address(std::numeric_limits<int64_t>::max() -
                                        4);
  ExpectRefused(graph, "tensor 3 ('s'): sbuf capacity exceeded");
}

// ---------------------------------------------------------------------------
// World

TEST(MalformedWorldTest, RankAndCoreCounts) {
  proto::Graph graph = BaseGraph();
  graph.mutable_world()->set_num_ranks(0);
  ExpectRefused(graph, "world: num_ranks 0 is not in [1, 4096]");
  graph.mutable_world()->set_num_ranks(100000);
  ExpectRefused(graph, "world: num_ranks 100000 is not in [1, 4096]");
  graph = BaseGraph();
  graph.mutable_world()->set_num_cores(0);
  ExpectRefused(graph, "world: num_cores 0 is not 1 or 2");
  graph.mutable_world()->set_num_cores(3);
  ExpectRefused(graph, "world: num_cores 3 is not 1 or 2");
  graph = BaseGraph();
  graph.mutable_world()->set_target(static_cast<proto::Target>(17));
  ExpectRefused(graph, "world: unknown target 17");
}

void SetGroups(proto::Graph& graph, int num_ranks,
               const std::vector<std::vector<uint32_t>>& groups) {
  proto::World* world = graph.mutable_world();
  world->set_num_ranks(num_ranks);
  world->clear_replica_groups();
  for (const std::vector<uint32_t>& group : groups) {
    proto::ReplicaGroup* g = world->add_replica_groups();
    for (uint32_t r : group) g->add_ranks(r);
  }
}

TEST(MalformedWorldTest, ReplicaGroups) {
  proto::Graph graph = BaseGraph();
  SetGroups(graph, 4, {{0, 1}, {2, 3}});
  EXPECT_EQ(Problems(graph), "");
  SetGroups(graph, 4, {{0, 1}, {1, 2}});
  ExpectRefused(graph, "world: rank 1 is in more than one replica group");
  EXPECT_THAT(Problems(graph), HasSubstr("world: rank 3 is in no replica "
                                         "group"));
  SetGroups(graph, 4, {{0, 1}, {2}});
  ExpectRefused(graph,
                "world: replica group 1 has 1 ranks; every group must "
                "have 2");
  SetGroups(graph, 4, {{0, 1}, {2, 9}});
  ExpectRefused(graph,
                "world: replica group 1 names rank 9, outside the "
                "world");
  SetGroups(graph, 4, {{}, {}});
  ExpectRefused(graph, "world: replica group 0 has 0 ranks");
  SetGroups(graph, 2, {{0, 0}});
  ExpectRefused(graph, "world: rank 0 is in more than one replica group");
}

// ---------------------------------------------------------------------------
// Resources and inputs

TEST(MalformedResourceTest, MemoryLimitIsResourceExhausted) {
  interp::RunOptions options;
  options.memory_limit_bytes = 1024;
  absl::StatusOr<std::unique_ptr<interp::Interpreter>> interp =
      interp::Interpreter::Create(BaseGraph(), options);
  ASSERT_FALSE(interp.ok());
  EXPECT_EQ(interp.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_THAT(interp.status().message(),
              AllOf(HasSubstr("bytes of device memory"),
                    HasSubstr("over the limit of 1024")));
  options.memory_limit_bytes = int64_t{64} << 20;
  EXPECT_TRUE(interp::Interpreter::Create(BaseGraph(), options).ok());
}

// An instruction that walks 2^33 elements of a tiny tensor (stride 0)
// would need tens of gigabytes of buffers; it is refused up front.
TEST(MalformedResourceTest, AnOperandTooLargeForTheMemoryLimitIsRefused) {
  proto::Graph graph = BaseGraph();
  proto::Instruction* copy = Instr(graph, 3);       // out <- s, both [2, 3]
  MutableOperandOf(copy, "src")->set_tensor_id(1);  // out <- x, both in HBM
  for (const char* role : {"dst", "src"}) {
    proto::AccessPattern* ap = MutableOperandOf(copy, role);
    ap->set_pattern(0, 0);
    ap->set_pattern(1, int64_t{1} << 33);
  }
  EXPECT_EQ(Problems(graph), "");
  absl::StatusOr<std::unique_ptr<interp::Interpreter>> interp =
      interp::Interpreter::Create(graph);
  ASSERT_FALSE(interp.ok());
  EXPECT_EQ(interp.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_THAT(interp.status().message(), HasSubstr("instruction #3 dma_copy"));
}

TEST(MalformedInputTest, InputsWithTheWrongShapeDtypeNameOrSizeAreRefused) {
  absl::StatusOr<std::unique_ptr<interp::Interpreter>> interp =
      interp::Interpreter::Create(BaseGraph());
  ASSERT_TRUE(interp.ok()) << interp.status();
  interp::Interpreter& in = **interp;
  absl::Status s = in.SetInput(Floats("y", {2, 3}, std::vector<float>(6)));
  EXPECT_THAT(s.message(), HasSubstr("'y' is not an input"));
  s = in.SetInput(Floats("x", {3, 2}, std::vector<float>(6)));
  EXPECT_THAT(
      s.message(),
      HasSubstr("input 'x' has shape [3, 2]; the graph expects [2, 3]"));
  s = in.SetInput(Ints("x", {2, 3}, std::vector<int32_t>(6)));
  EXPECT_THAT(s.message(), HasSubstr("the graph expects float32"));
  // The shape is right but the values are missing.
  s = in.SetInput(Floats("x", {2, 3}, {1, 2}));
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(s.message(), HasSubstr("'x'"));
  s = in.SetInput(Ints("e", {1}, {}));
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  // Shapes whose element count overflows int64 unless a zero dimension is
  // seen first (numpy makes an empty array of [2^62, 2^62, 0]), or at all.
  const int64_t huge = int64_t{1} << 62;
  s = in.SetInput(Floats("x", {huge, huge, 0}, {}));
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(s.message(), HasSubstr("the graph expects [2, 3]"));
  s = in.SetInput(Floats("x", {huge, 4}, {1, 2}));
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(s.message(), HasSubstr("the graph expects [2, 3]"));
  // Nothing was set, so running names the missing inputs.
  s = in.Run();
  EXPECT_THAT(s.message(), HasSubstr("inputs x, e not given"));
}

}  // namespace
}  // namespace nkigraph
