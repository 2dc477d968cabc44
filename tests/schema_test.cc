// The serialized graph: round trips through .pb and .pbtxt, deterministic
// bytes, version and corruption refusals, and the bookkeeping fields (ids,
// source lines, scopes) the tracer records.
#include <stdlib.h>

#include <cstdint>
#include <set>
#include <string>

#include "builder/jit.h"
#include "gmock/gmock.h"
#include "google/protobuf/util/message_differencer.h"
#include "gtest/gtest.h"
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
  void SetUp() override {
    std::string pattern = ::testing::TempDir() + "/schema_test_XXXXXX";
    ASSERT_NE(mkdtemp(pattern.data()), nullptr);
    dir_ = pattern;
  }
  std::string Path(const std::string& name) const { return dir_ + "/" + name; }

  std::string dir_;
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
