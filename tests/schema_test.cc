// The serialized graph: round trips through .pb and .pbtxt, deterministic
// bytes, version and corruption refusals, and the bookkeeping fields (ids,
// source lines, scopes) the tracer records.

#include <cstdint>
#include <limits>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "builder/instr_encoding.h"
#include "builder/jit.h"
#include "builder/stream_buffer.h"
#include "gmock/gmock.h"
#include "google/protobuf/util/message_differencer.h"
#include "gtest/gtest.h"
#include "ops/access_pattern.h"
#include "tests/scoped_temp_dir.h"
#include "tests/test_util.h"
#include "util/file_io.h"
#include "util/graph_io.h"

namespace nkigraph {
namespace {

using builder::Buffer;
using builder::Tensor;
using builder::Tracer;
namespace isa = builder::isa;
using ::google::protobuf::util::MessageDifferencer;
using ::testing::HasSubstr;

constexpr char kFile[] = "tests/schema_test.cc";

// A two-rank, two-core graph with params, scopes, a jit kernel, float
// attributes, a dynamic offset and an output.
absl::StatusOr<proto::Graph> TraceSample() {
  builder::WorldConfig world;
  world.num_ranks = 2;
  world.num_cores = 2;
  builder::Tracer tracer(
      builder::TraceConfig{"sample", {{"m", "8"}, {"n", "16"}}, world});
  const auto scale_rows = builder::jit(
      "scale_rows", [](const Tensor& dst, const Tensor& src, float scale) {
        isa::activation(dst, isa::ActFunc::kCopy, src, {.scale = scale});
      });
  return tracer.Trace([&](Tracer& t) {
    Tensor in = t.Input("in", {8, 16}, proto::FLOAT32);
    Tensor rows = t.Input("rows", {4, 1}, proto::INT32, /*per_rank=*/false);
    Tensor out = t.Allocate({8, 16}, proto::FLOAT32, Buffer::kSharedHbm, "o");
    const int64_t half = 4 * t.program_id();
    builder::Scope outer("outer");
    Tensor index = builder::ndarray({4, 1}, proto::INT32, Buffer::kSbuf, "idx");
    Tensor tile =
        builder::ndarray({4, 16}, proto::FLOAT32, Buffer::kSbuf, "tile");
    Tensor res = builder::ndarray({4, 16}, proto::FLOAT32, Buffer::kSbuf, "r");
    isa::dma_copy(index, rows);
    isa::dma_copy(tile, in.Slice(0, 0, 4).WithVectorOffset(index, 0));
    {
      builder::Scope inner("inner");
      scale_rows(res, tile, 0.5f);
    }
    isa::dma_copy(out.Slice(0, half, 4), res);
    t.Output("out", out);
  });
}

class SchemaTest : public ::testing::Test {
 protected:
  std::string Path(const std::string& name) const { return dir_.Path(name); }

  const testing::ScopedTempDir dir_{"schema_test"};
};

TEST_F(SchemaTest, SampleGraphIsNotTrivial) {
  absl::StatusOr<proto::Graph> graph = TraceSample();
  ASSERT_TRUE(graph.ok()) << graph.status();
  EXPECT_EQ(graph->schema_version(), proto::SCHEMA_VERSION_CURRENT);
  EXPECT_EQ(graph->kernel_name(), "sample");
  ASSERT_EQ(graph->params_size(), 2);
  EXPECT_EQ(graph->params(1).name(), "n");
  EXPECT_EQ(graph->params(1).value(), "16");
  EXPECT_EQ(graph->world().num_ranks(), 2u);
  EXPECT_EQ(graph->world().num_cores(), 2u);
  ASSERT_EQ(graph->streams_size(), 2);
  EXPECT_EQ(graph->streams(0).instructions_size(), 4);
  EXPECT_EQ(graph->streams(1).instructions_size(), 4);
}

TEST_F(SchemaTest, BinaryRoundTripIsExact) {
  absl::StatusOr<proto::Graph> graph = TraceSample();
  ASSERT_TRUE(graph.ok()) << graph.status();
  const std::string path = Path("g.pb");
  ASSERT_TRUE(WriteGraph(*graph, path).ok());
  absl::StatusOr<std::string> bytes = ReadFile(path);
  ASSERT_TRUE(bytes.ok()) << bytes.status();
  EXPECT_EQ(*bytes, SerializeDeterministic(*graph));

  absl::StatusOr<proto::Graph> read = ReadGraph(path);
  ASSERT_TRUE(read.ok()) << read.status();
  std::string diff;
  MessageDifferencer differencer;
  differencer.ReportDifferencesToString(&diff);
  EXPECT_TRUE(differencer.Compare(*graph, *read)) << diff;
  EXPECT_TRUE(MessageDifferencer::Equals(*graph, *read));
}

TEST_F(SchemaTest, TextRoundTripIsExact) {
  absl::StatusOr<proto::Graph> graph = TraceSample();
  ASSERT_TRUE(graph.ok()) << graph.status();
  const std::string path = Path("g.pbtxt");
  ASSERT_TRUE(WriteGraph(*graph, path).ok());
  absl::StatusOr<std::string> text = ReadFile(path);
  ASSERT_TRUE(text.ok()) << text.status();
  EXPECT_THAT(*text, HasSubstr("kernel_name: \"sample\""));
  EXPECT_THAT(*text, HasSubstr("scopes: \"outer/inner/scale_rows\""));

  absl::StatusOr<proto::Graph> read = ReadGraph(path);
  ASSERT_TRUE(read.ok()) << read.status();
  std::string diff;
  MessageDifferencer differencer;
  differencer.ReportDifferencesToString(&diff);
  EXPECT_TRUE(differencer.Compare(*graph, *read)) << diff;
}

TEST_F(SchemaTest, TracingTheSameKernelTwiceGivesIdenticalBytesAndFiles) {
  absl::StatusOr<proto::Graph> a = TraceSample();
  absl::StatusOr<proto::Graph> b = TraceSample();
  ASSERT_TRUE(a.ok()) << a.status();
  ASSERT_TRUE(b.ok()) << b.status();
  const std::string bytes = SerializeDeterministic(*a);
  EXPECT_GT(bytes.size(), 100u);
  EXPECT_EQ(bytes, SerializeDeterministic(*b));
  for (const char* ext : {".pb", ".pbtxt"}) {
    ASSERT_TRUE(WriteGraph(*a, Path(std::string("a") + ext)).ok());
    ASSERT_TRUE(WriteGraph(*b, Path(std::string("b") + ext)).ok());
    absl::StatusOr<std::string> file_a = ReadFile(Path(std::string("a") + ext));
    absl::StatusOr<std::string> file_b = ReadFile(Path(std::string("b") + ext));
    ASSERT_TRUE(file_a.ok() && file_b.ok());
    EXPECT_FALSE(file_a->empty());
    EXPECT_EQ(*file_a, *file_b) << ext;
  }
}

// A graph with every kind of field an instruction carries: absent optional
// operands, a variadic role, int, float, string and int-list attributes,
// a bitcast view (which raises the schema version), a scalar dynamic
// offset, two cores, nested scopes.
absl::StatusOr<builder::SerializedGraph> TraceEveryField(
    proto::Graph* as_messages) {
  builder::WorldConfig world;
  world.num_cores = 2;
  const builder::TraceConfig config{"every_field", {{"k", "v"}}, world};
  const auto body = [](Tracer& t) {
    Tensor in = t.Input("in", {4, 16}, proto::FLOAT32);
    Tensor at = t.Input("at", {1}, proto::INT32);
    Tensor out = t.Allocate({4, 16}, proto::FLOAT32, Buffer::kSharedHbm, "o");
    builder::Scope outer("outer");
    Tensor idx = builder::ndarray({4, 8}, proto::INT32, Buffer::kSbuf, "idx");
    Tensor a = builder::ndarray({4, 16}, proto::FLOAT32, Buffer::kSbuf, "a");
    Tensor b = builder::ndarray({4, 16}, proto::FLOAT32, Buffer::kSbuf, "b");
    Tensor h = builder::ndarray({4, 32}, proto::BFLOAT16, Buffer::kSbuf, "h");
    isa::iota(idx, {{1, 8}}, 3, t.program_id() + 1);
    isa::memset(a, -2.5f);
    {
      builder::Scope inner("inner");
      isa::dma_copy(b, in.WithScalarOffset(at, 0, builder::OobMode::kSkip));
      isa::tensor_scalar(a, b, isa::Alu::kMultiply, 0.0f,
                         {.op1 = isa::Alu::kAdd, .operand1 = -1.0f});
    }
    isa::tensor_copy(h, a.Bitcast(proto::BFLOAT16));
    isa::dma_compute(out, {a, b}, /*accumulate=*/false);
    t.Output("out", out);
  };
  builder::Tracer messages(config);
  absl::StatusOr<proto::Graph> traced = messages.Trace(body);
  if (!traced.ok()) return traced.status();
  *as_messages = *std::move(traced);
  builder::Tracer serialized(config);
  return serialized.TraceSerialized(body);
}

TEST_F(SchemaTest, SerializedTraceIsTheDeterministicSerialization) {
  proto::Graph graph;
  absl::StatusOr<builder::SerializedGraph> traced = TraceEveryField(&graph);
  ASSERT_TRUE(traced.ok()) << traced.status();
  EXPECT_EQ(graph.schema_version(), proto::SCHEMA_VERSION_VIEW_DTYPE);
  ASSERT_EQ(graph.streams_size(), 2);
  EXPECT_EQ(graph.streams(1).core(), 1u);
  EXPECT_EQ(traced->num_instructions, 12);
  EXPECT_EQ(traced->num_tensors, graph.tensors_size());
  EXPECT_EQ(traced->num_cores, 2);
  // Written field by field, the bytes are still what protobuf writes for
  // the whole message: same fields, in field-number order.
  EXPECT_EQ(traced->bytes, SerializeDeterministic(graph));
  int attrs = 0;
  bool ints = false, dynamic = false, absent = false;
  for (const proto::Stream& stream : graph.streams()) {
    for (const proto::Instruction& instr : stream.instructions()) {
      attrs += instr.attrs_size();
      for (const proto::Attr& attr : instr.attrs()) ints |= attr.has_ints();
      for (const proto::AccessPattern& ap : instr.operands()) {
        dynamic |= ap.has_dynamic();
        absent |= ap.tensor_id() == 0;
      }
    }
  }
  EXPECT_GT(attrs, 12);
  EXPECT_TRUE(ints && dynamic && absent);
}

// The tracer's instruction encoder against protobuf's own serialization,
// on values a trace rarely makes: negative and huge numbers, -0.0, empty
// strings and lists, an all-zero dynamic offset, more operands and
// attributes than the encoder keeps sizes for inline.
TEST_F(SchemaTest, InstructionEncodingIsProtobufs) {
  proto::Stream stream;
  proto::Instruction& instr = *stream.add_instructions();
  instr.set_id(4'000'000'000u);
  instr.set_opcode(proto::DMA_COMPUTE);
  instr.set_file(3);
  instr.set_line(300);
  for (int i = 0; i < 20; ++i) {
    proto::AccessPattern* ap = instr.add_operands();
    if (i == 1) continue;  // an absent operand: an empty message
    ap->set_tensor_id(i * 1000);
    ap->set_offset(i % 2 ? -i : int64_t{1} << 40);
    for (int64_t v :
         {int64_t{-1}, int64_t{127}, int64_t{128}, int64_t{-1000} - i}) {
      ap->add_pattern(v);
    }
    if (i % 3 == 0) ap->mutable_dynamic();  // present, every field zero
    if (i % 3 == 1) {
      proto::DynamicOffset* d = ap->mutable_dynamic();
      d->set_kind(proto::DynamicOffset::VECTOR);
      d->set_tensor_id(7);
      d->set_offset_element(-3);
      d->set_offset_stride(1 << 20);
      d->set_indirect_dim(1);
      d->set_oob_mode(proto::DynamicOffset::OOB_SKIP);
    }
    if (i == 5) ap->set_view_dtype(proto::BFLOAT16);
    if (i == 6) {
      // Each varint length, at both of its ends, and the longest ones.
      for (int bits = 7; bits < 64; bits += 7) {
        ap->add_pattern((int64_t{1} << bits) - 1);
        ap->add_pattern(int64_t{1} << bits);
      }
      ap->add_pattern(std::numeric_limits<int64_t>::max());
      ap->add_pattern(std::numeric_limits<int64_t>::min());
    }
  }
  for (int i = 0; i < 20; ++i) {
    proto::Attr* attr = instr.add_attrs();
    if (i != 3) attr->set_name(absl::StrCat("attr_", i));
    switch (i % 6) {
      case 0:
        attr->set_i(i == 0 ? 0 : -int64_t{1} << 62);
        break;
      case 1:
        attr->set_f(i == 1 ? -0.0 : 1e300);
        break;
      case 2:
        attr->set_s(i == 2 ? "" : std::string(200, 'x'));
        break;
      case 3:
        attr->mutable_ints();  // an empty list
        break;
      case 4:
        for (int64_t v : {int64_t{0}, int64_t{-5}, int64_t{1} << 50}) {
          attr->mutable_ints()->add_values(v);
        }
        break;
      case 5:
        break;  // no value
    }
  }
  std::string encoded;
  builder::AppendInstruction(instr, &encoded);
  EXPECT_EQ(encoded, SerializeDeterministic(stream));
  // The tracer's form: the operands held apart, as plain patterns, and the
  // message without them.
  {
    std::vector<ops::PatternRef> operands;
    for (const proto::AccessPattern& ap : instr.operands()) {
      operands.push_back(ops::PatternOf(ap));
    }
    proto::Instruction header = instr;
    header.clear_operands();
    builder::StreamBuffer buffer;
    builder::AppendInstruction(header, static_cast<int>(operands.size()),
                               operands.data(), &buffer);
    EXPECT_EQ(buffer.view(), SerializeDeterministic(stream));
  }
  // The smallest instruction: every field zero.
  proto::Stream empty;
  empty.add_instructions();
  encoded.clear();
  builder::AppendInstruction(empty.instructions(0), &encoded);
  EXPECT_EQ(encoded, SerializeDeterministic(empty));
}

// The tracer's tensor encoder against protobuf's own serialization: every
// field set to values a trace rarely makes (huge and negative numbers, a
// long name, an enum value the schema does not name), every field left at
// zero, and a value range present with both ends zero (still written).
TEST_F(SchemaTest, TensorEncodingIsProtobufs) {
  proto::Graph graph;
  proto::Tensor* full = graph.add_tensors();
  full->set_id(4'000'000'000u);
  full->set_name(std::string(300, 'n'));
  full->set_space(proto::SBUF);
  full->set_dtype(static_cast<proto::DType>(-7));
  for (int64_t d : {int64_t{128}, int64_t{1} << 40, int64_t{-1}}) {
    full->add_shape(d);
  }
  full->set_address(-(int64_t{1} << 50));
  full->set_partition_offset(127);
  full->set_role(proto::ROLE_INPUT_OUTPUT);
  full->set_output_name("out");
  full->set_per_rank(true);
  full->set_core(1);
  full->set_live_begin(3'000'000'000u);
  full->set_live_end(4'000'000'000u);
  full->mutable_value_range()->set_lo(-5);
  full->mutable_value_range()->set_hi(int64_t{1} << 62);
  graph.add_tensors();  // every field zero: an empty message
  graph.add_tensors()->mutable_value_range();
  builder::StreamBuffer buffer;
  for (const proto::Tensor& tensor : graph.tensors()) {
    builder::AppendTensor(tensor, &buffer);
  }
  EXPECT_EQ(buffer.view(), SerializeDeterministic(graph));
}

// The encoders write the fields the schema has today; a new field must be
// added there (builder/instr_encoding.cc) before this passes again.
TEST_F(SchemaTest, InstructionEncodingKnowsEveryField) {
  EXPECT_EQ(proto::Instruction::descriptor()->field_count(), 7);
  EXPECT_EQ(proto::AccessPattern::descriptor()->field_count(), 5);
  EXPECT_EQ(proto::DynamicOffset::descriptor()->field_count(), 6);
  EXPECT_EQ(proto::Attr::descriptor()->field_count(), 5);
  EXPECT_EQ(proto::IntList::descriptor()->field_count(), 1);
  EXPECT_EQ(proto::Tensor::descriptor()->field_count(), 14);
  EXPECT_EQ(proto::ValueRange::descriptor()->field_count(), 2);
  // The tracer writes the graph's fields in number order around the
  // tensors (5) and streams (6) it writes itself (builder/tracer.cc).
  EXPECT_EQ(proto::Graph::descriptor()->field_count(), 8);
}

TEST_F(SchemaTest, LoadGraphReadsWhatReadGraphReads) {
  absl::StatusOr<proto::Graph> graph = TraceSample();
  ASSERT_TRUE(graph.ok()) << graph.status();
  for (const char* name : {"g.pb", "g.pbtxt"}) {
    ASSERT_TRUE(WriteGraph(*graph, Path(name)).ok());
    absl::StatusOr<ArenaGraph> loaded = LoadGraph(Path(name));
    ASSERT_TRUE(loaded.ok()) << loaded.status();
    EXPECT_TRUE(MessageDifferencer::Equals(*graph, **loaded)) << name;
  }
  // The same refusals, with the same messages.
  proto::Graph newer = *graph;
  newer.set_schema_version(static_cast<proto::SchemaVersion>(99));
  ASSERT_TRUE(WriteGraph(newer, Path("newer.pb")).ok());
  absl::StatusOr<std::string> bytes = ReadFile(Path("g.pb"));
  ASSERT_TRUE(bytes.ok());
  ASSERT_TRUE(
      WriteFileAtomically(Path("cut.pb"), bytes->substr(0, bytes->size() - 1))
          .ok());
  for (const char* name : {"newer.pb", "cut.pb", "missing.pb"}) {
    absl::StatusOr<proto::Graph> read = ReadGraph(Path(name));
    absl::StatusOr<ArenaGraph> loaded = LoadGraph(Path(name));
    ASSERT_FALSE(read.ok()) << name;
    ASSERT_FALSE(loaded.ok()) << name;
    EXPECT_EQ(read.status(), loaded.status()) << name;
  }
}

TEST_F(SchemaTest, GraphFromANewerSchemaIsRefused) {
  absl::StatusOr<proto::Graph> graph = TraceSample();
  ASSERT_TRUE(graph.ok()) << graph.status();
  graph->set_schema_version(static_cast<proto::SchemaVersion>(99));
  const std::string path = Path("future.pb");
  ASSERT_TRUE(WriteGraph(*graph, path).ok());
  absl::StatusOr<proto::Graph> read = ReadGraph(path);
  ASSERT_FALSE(read.ok());
  EXPECT_EQ(read.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(read.status().message(), HasSubstr("future.pb"));
  EXPECT_THAT(read.status().message(),
              HasSubstr("graph schema version 99 is newer than this nkigraph"));
  EXPECT_THAT(CheckSchemaVersion(*graph).message(), HasSubstr("newer"));
}

TEST_F(SchemaTest, GraphWithoutASchemaVersionIsRefused) {
  proto::Graph graph;
  graph.set_kernel_name("handmade");
  const std::string path = Path("unversioned.pb");
  ASSERT_TRUE(WriteGraph(graph, path).ok());
  absl::StatusOr<proto::Graph> read = ReadGraph(path);
  ASSERT_FALSE(read.ok());
  EXPECT_THAT(read.status().message(), HasSubstr("has no schema_version"));
}

TEST_F(SchemaTest, TruncatedBinaryGraphIsRefused) {
  absl::StatusOr<proto::Graph> graph = TraceSample();
  ASSERT_TRUE(graph.ok()) << graph.status();
  const std::string bytes = SerializeDeterministic(*graph);
  const std::string path = Path("truncated.pb");
  // The last field is the scopes string list: dropping its last byte cuts
  // a length-delimited field short.
  ASSERT_TRUE(
      WriteFileAtomically(path, bytes.substr(0, bytes.size() - 1)).ok());
  absl::StatusOr<proto::Graph> read = ReadGraph(path);
  ASSERT_FALSE(read.ok());
  EXPECT_EQ(read.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(read.status().message(), HasSubstr("truncated or corrupt"));
}

TEST_F(SchemaTest, EveryPrefixOfABinaryGraphReadsOrFailsCleanly) {
  absl::StatusOr<proto::Graph> graph = TraceSample();
  ASSERT_TRUE(graph.ok()) << graph.status();
  const std::string bytes = SerializeDeterministic(*graph);
  const std::string path = Path("prefix.pb");
  int refused = 0;
  for (size_t n = 0; n < bytes.size(); n += 7) {
    ASSERT_TRUE(WriteFileAtomically(path, bytes.substr(0, n)).ok());
    absl::StatusOr<proto::Graph> read = ReadGraph(path);
    if (!read.ok()) {
      ++refused;
    } else {
      // A prefix that ends on a field boundary parses; it is never the
      // whole graph.
      EXPECT_FALSE(MessageDifferencer::Equals(*graph, *read)) << n;
    }
  }
  EXPECT_GT(refused, 0);
}

TEST_F(SchemaTest, MissingAndGarbageFilesAreErrors) {
  EXPECT_FALSE(ReadGraph(Path("does_not_exist.pb")).ok());
  const std::string path = Path("garbage.pbtxt");
  ASSERT_TRUE(WriteFileAtomically(path, "kernel_name: [not text format").ok());
  absl::StatusOr<proto::Graph> read = ReadGraph(path);
  ASSERT_FALSE(read.ok());
  EXPECT_THAT(read.status().message(), HasSubstr("not a valid text-format"));
}

TEST_F(SchemaTest, InstructionIdsAreUniqueAndTensorIdsArePositions) {
  absl::StatusOr<proto::Graph> graph = TraceSample();
  ASSERT_TRUE(graph.ok()) << graph.status();
  std::set<uint32_t> ids;
  int count = 0;
  for (int c = 0; c < graph->streams_size(); ++c) {
    EXPECT_EQ(graph->streams(c).core(), static_cast<uint32_t>(c));
    for (const proto::Instruction& instr : graph->streams(c).instructions()) {
      ids.insert(instr.id());
      ++count;
    }
  }
  EXPECT_EQ(count, 8);
  EXPECT_EQ(ids.size(), static_cast<size_t>(count));
  ASSERT_GT(graph->tensors_size(), 0);
  for (int i = 0; i < graph->tensors_size(); ++i) {
    EXPECT_EQ(graph->tensors(i).id(), static_cast<uint32_t>(i + 1)) << i;
  }
  // Per-core on-chip tensors (3 per core) plus the shared in, rows and out.
  EXPECT_EQ(graph->tensors_size(), 3 + 2 * 3);
}

TEST_F(SchemaTest, SourceFileLineAndScopePathAreRecorded) {
  int line_top = 0, line_outer = 0, line_inner = 0, line_kernel = 0;
  const auto kernel =
      builder::jit("copy_kernel", [&](const Tensor& dst, const Tensor& src) {
        line_kernel = __LINE__ + 1;
        isa::tensor_copy(dst, src);
      });
  absl::StatusOr<proto::Graph> graph = testing::Trace1([&](Tracer& t) {
    Tensor a = t.Allocate({4, 4}, proto::FLOAT32, Buffer::kSbuf, "a");
    Tensor b = t.Allocate({4, 4}, proto::FLOAT32, Buffer::kSbuf, "b");
    line_top = __LINE__ + 1;
    isa::memset(a, 1.0f);
    builder::Scope outer("outer");
    line_outer = __LINE__ + 1;
    isa::tensor_copy(b, a);
    {
      builder::Scope inner("inner");
      line_inner = __LINE__ + 1;
      isa::tensor_copy(a, b);
      kernel(b, a);
    }
  });
  ASSERT_TRUE(graph.ok()) << graph.status();
  ASSERT_EQ(graph->streams(0).instructions_size(), 4);
  ASSERT_GE(graph->scopes_size(), 1);
  EXPECT_EQ(graph->scopes(0), "");
  struct Expected {
    int line;
    std::string scope;
  };
  const Expected expected[] = {{line_top, ""},
                               {line_outer, "outer"},
                               {line_inner, "outer/inner"},
                               {line_kernel, "outer/inner/copy_kernel"}};
  for (int i = 0; i < 4; ++i) {
    const proto::Instruction& instr = graph->streams(0).instructions(i);
    ASSERT_LT(instr.file(), static_cast<uint32_t>(graph->files_size()));
    ASSERT_LT(instr.scope(), static_cast<uint32_t>(graph->scopes_size()));
    EXPECT_EQ(graph->files(instr.file()), kFile) << i;
    EXPECT_EQ(instr.line(), static_cast<uint32_t>(expected[i].line)) << i;
    EXPECT_EQ(graph->scopes(instr.scope()), expected[i].scope) << i;
  }
  // Files and scopes are interned: one entry each.
  EXPECT_EQ(graph->files_size(), 1);
  EXPECT_EQ(graph->scopes_size(), 4);
}

}  // namespace
}  // namespace nkigraph
