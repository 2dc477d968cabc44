// The parallel graph parse (util/parallel_graph_parse.h) gives exactly the
// message protobuf's ParseFromArray gives, or fails where it fails: on
// traced kernels, on hand-made odd encodings and on random mutations of
// valid graphs.
#include "util/parallel_graph_parse.h"

#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "bench/streaming_kernel.h"
#include "google/protobuf/arena.h"
#include "google/protobuf/io/coded_stream.h"
#include "google/protobuf/stubs/logging.h"
#include "google/protobuf/util/message_differencer.h"
#include "google/protobuf/wire_format_lite.h"
#include "gtest/gtest.h"
#include "kernels/registry.h"
#include "util/graph_io.h"
#include "util/worker_pool.h"

namespace nkigraph {
namespace {

using google::protobuf::Arena;
using google::protobuf::internal::WireFormatLite;

WorkerPool& Pool() {
  static WorkerPool* pool = new WorkerPool(2);
  return *pool;
}

struct Parsed {
  bool ok = false;
  ParsePath path = ParsePath::kWhole;
};

// Parses `bytes` both ways (the parallel one in chunks of `per_chunk`
// instructions) and expects the same verdict and, when both succeed, the
// same message, unknown fields included.
Parsed ExpectSameParse(const std::string& bytes, int per_chunk,
                       const std::string& what) {
  SCOPED_TRACE(absl::StrCat(what, ", chunks of ", per_chunk));
  // (Protobuf logs the strings it refuses; the verdicts are compared.)
  const google::protobuf::LogSilencer silence_protobuf_log;
  Arena whole_arena, parallel_arena;
  proto::Graph* whole = Arena::CreateMessage<proto::Graph>(&whole_arena);
  proto::Graph* parallel = Arena::CreateMessage<proto::Graph>(&parallel_arena);
  const bool whole_ok =
      whole->ParseFromArray(bytes.data(), static_cast<int>(bytes.size()));
  Parsed result;
  result.ok =
      ParseGraphInParallel(bytes, Pool(), parallel, per_chunk, &result.path);
  EXPECT_EQ(result.ok, whole_ok);
  if (result.ok && whole_ok) {
    EXPECT_TRUE(
        google::protobuf::util::MessageDifferencer::Equals(*whole, *parallel));
    EXPECT_EQ(SerializeDeterministic(*whole),
              SerializeDeterministic(*parallel));
  }
  return result;
}

// Wire pieces, written with protobuf's own encoders.
std::string Varint(uint64_t value) {
  uint8_t buffer[10];
  uint8_t* end = google::protobuf::io::CodedOutputStream::WriteVarint64ToArray(
      value, buffer);
  return std::string(reinterpret_cast<char*>(buffer), end - buffer);
}
std::string Tag(int number, WireFormatLite::WireType type) {
  return Varint(WireFormatLite::MakeTag(number, type));
}
std::string VarintField(int number, uint64_t value) {
  return Tag(number, WireFormatLite::WIRETYPE_VARINT) + Varint(value);
}
std::string LengthField(int number, const std::string& body) {
  return Tag(number, WireFormatLite::WIRETYPE_LENGTH_DELIMITED) +
         Varint(body.size()) + body;
}

constexpr int kStreams = proto::Graph::kStreamsFieldNumber;
constexpr int kCore = proto::Stream::kCoreFieldNumber;
constexpr int kInstructions = proto::Stream::kInstructionsFieldNumber;

std::string Instruction(uint32_t id) {
  proto::Instruction instr;
  instr.set_id(id);
  instr.set_opcode(proto::TENSOR_COPY);
  instr.set_line(10 + id);
  for (int o = 0; o < 2; ++o) {
    proto::AccessPattern* ap = instr.add_operands();
    ap->set_tensor_id(1);
    ap->set_offset(o * 4);
    for (int64_t v : {4, 2, 1, 4}) ap->add_pattern(v);
  }
  proto::Attr* attr = instr.add_attrs();
  attr->set_name("engine");
  attr->set_i(id % 3);
  return SerializeDeterministic(instr);
}

// Instruction fields (of a stream's body) for ids [first, first + count).
std::string Instructions(uint32_t first, int count) {
  std::string body;
  for (int i = 0; i < count; ++i) {
    body += LengthField(kInstructions, Instruction(first + i));
  }
  return body;
}

constexpr int kTensors = proto::Graph::kTensorsFieldNumber;

std::string TensorField(uint32_t id) {
  proto::Tensor t;
  t.set_id(id);
  t.set_name(absl::StrCat("t", id));
  t.set_space(proto::SBUF);
  t.set_dtype(proto::BFLOAT16);
  t.add_shape(128);
  t.add_shape(id);
  return LengthField(kTensors, SerializeDeterministic(t));
}

// The graph's fields but its streams.
std::string Head() {
  proto::Graph graph;
  graph.set_schema_version(proto::SCHEMA_VERSION_VIEW_DTYPE);
  graph.set_kernel_name("odd");
  graph.mutable_world()->set_num_ranks(1);
  graph.mutable_world()->set_num_cores(2);
  proto::Tensor* t = graph.add_tensors();
  t->set_id(1);
  t->set_name("t");
  t->set_space(proto::HBM);
  t->set_dtype(proto::FLOAT32);
  t->add_shape(16);
  graph.add_files("odd.cc");
  graph.add_scopes("");
  return SerializeDeterministic(graph);
}

std::string PlainGraph() {
  return Head() +
         LengthField(kStreams, VarintField(kCore, 0) + Instructions(1, 5)) +
         LengthField(kStreams, VarintField(kCore, 1) + Instructions(6, 3));
}

// Encodings the walk handles itself: the same message, parsed in parallel.
TEST(ParallelGraphParseTest, OddButPlainEncodingsParseInParallel) {
  const std::string head = Head();
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"plain", PlainGraph()},
      {"core after the instructions",
       head +
           LengthField(kStreams, Instructions(1, 4) + VarintField(kCore, 1))},
      {"core twice, the last wins",
       head + LengthField(kStreams, VarintField(kCore, 1) + Instructions(1, 3) +
                                        VarintField(kCore, 0) +
                                        Instructions(4, 2))},
      {"core between instructions",
       head + LengthField(kStreams, Instructions(1, 2) + VarintField(kCore, 1) +
                                        Instructions(3, 2))},
      {"streams first, the head's fields after and between them",
       LengthField(kStreams, Instructions(1, 2)) + head.substr(0, 2) +
           LengthField(kStreams, VarintField(kCore, 1) + Instructions(3, 2)) +
           head.substr(2)},
      {"world twice (merged)",
       head + LengthField(proto::Graph::kWorldFieldNumber, VarintField(3, 1)) +
           LengthField(kStreams, Instructions(1, 2))},
      {"schema version twice", VarintField(1, 1) + head + VarintField(1, 2) +
                                   LengthField(kStreams, Instructions(1, 2))},
      {"unknown fields of the graph, a group among them",
       head + VarintField(99, 7) + LengthField(100, "abc") +
           LengthField(kStreams, Instructions(1, 3)) +
           Tag(101, WireFormatLite::WIRETYPE_FIXED32) + "wxyz" +
           Tag(102, WireFormatLite::WIRETYPE_START_GROUP) + VarintField(1, 5) +
           Tag(102, WireFormatLite::WIRETYPE_END_GROUP)},
      {"an unknown field inside an instruction",
       head + LengthField(kStreams,
                          LengthField(kInstructions,
                                      Instruction(1) + VarintField(77, 3)) +
                              Instructions(2, 2))},
      {"an instruction in two occurrences of its fields",
       head + LengthField(
                  kStreams,
                  LengthField(kInstructions, Instruction(1) + Instruction(2)))},
      {"empty streams and a stream of only its core",
       head + LengthField(kStreams, "") +
           LengthField(kStreams, VarintField(kCore, 1)) +
           LengthField(kStreams, Instructions(1, 2))},
      {"a core written in ten bytes",
       head +
           LengthField(kStreams, Tag(kCore, WireFormatLite::WIRETYPE_VARINT) +
                                     std::string("\x81\x80\x80\x80\x80\x80"
                                                 "\x80\x80\x80\x01",
                                                 10) +
                                     Instructions(1, 2))},
      {"tensors among streams and other fields",
       head + TensorField(2) + TensorField(3) +
           LengthField(kStreams, Instructions(1, 2)) + TensorField(4) +
           LengthField(proto::Graph::kFilesFieldNumber, "b.cc") +
           TensorField(5) + TensorField(6) + TensorField(7)},
      {"a tensor with an unknown field",
       head + LengthField(kTensors, VarintField(1, 2) + VarintField(60, 1)) +
           TensorField(3) + TensorField(4)},
      {"no streams", head},
      {"nothing", ""},
  };
  for (const auto& [what, bytes] : cases) {
    for (int per_chunk : {1, 2, 1000}) {
      const Parsed parsed = ExpectSameParse(bytes, per_chunk, what);
      EXPECT_TRUE(parsed.ok) << what;
      EXPECT_EQ(parsed.path, ParsePath::kInParallel) << what;
    }
  }
  // The last core in a stream's bytes is the stream's core.
  Arena arena;
  proto::Graph* graph = Arena::CreateMessage<proto::Graph>(&arena);
  ASSERT_TRUE(ParseGraphInParallel(
      head + LengthField(kStreams, VarintField(kCore, 1) + Instructions(1, 3) +
                                       VarintField(kCore, 0)),
      Pool(), graph, 1));
  ASSERT_EQ(graph->streams_size(), 1);
  EXPECT_EQ(graph->streams(0).core(), 0u);
  ASSERT_EQ(graph->streams(0).instructions_size(), 3);
  EXPECT_EQ(graph->streams(0).instructions(2).id(), 3u);
}

// Encodings outside the plain shape go to protobuf whole, and get its
// verdict and its message.
TEST(ParallelGraphParseTest, OtherEncodingsAreParsedWhole) {
  const std::string head = Head();
  const std::string bad_utf8_instruction = [] {
    std::string attr = LengthField(1, "\xff\xfe");  // Attr.name
    return LengthField(
        kInstructions,
        LengthField(proto::Instruction::kAttrsFieldNumber, attr));
  }();
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"an unknown field in a stream",
       head + LengthField(kStreams, Instructions(1, 2) + VarintField(3, 9))},
      {"a stream's core as a length",
       head +
           LengthField(kStreams, LengthField(kCore, "x") + Instructions(1, 2))},
      {"streams as a varint", head + VarintField(kStreams, 3)},
      {"tensors as a varint", head + VarintField(kTensors, 3) + TensorField(2)},
      {"a tensor longer than the graph",
       head + TensorField(2) +
           Tag(kTensors, WireFormatLite::WIRETYPE_LENGTH_DELIMITED) +
           Varint(100) + "xy"},
      {"instructions as a varint",
       head + LengthField(kStreams, VarintField(kInstructions, 1))},
      {"a zero tag in a stream",
       head + LengthField(kStreams, Instructions(1, 2) + std::string(1, '\0'))},
      {"a zero tag in the graph", head + std::string(1, '\0') + head},
      {"an end-group tag in the graph",
       head + Tag(9, WireFormatLite::WIRETYPE_END_GROUP) +
           LengthField(kStreams, Instructions(1, 2))},
      {"a string that is not UTF-8 in an instruction",
       head + LengthField(kStreams, Instructions(1, 2) + bad_utf8_instruction)},
      {"an instruction longer than its stream",
       head + LengthField(kStreams,
                          Tag(kInstructions,
                              WireFormatLite::WIRETYPE_LENGTH_DELIMITED) +
                              Varint(1000) + Instruction(1))},
      {"a stream longer than the graph",
       head + Tag(kStreams, WireFormatLite::WIRETYPE_LENGTH_DELIMITED) +
           Varint(1 << 20) + Instructions(1, 2)},
      {"a length beyond int",
       head + Tag(kStreams, WireFormatLite::WIRETYPE_LENGTH_DELIMITED) +
           Varint(uint64_t{1} << 33)},
      {"a stream's length in six bytes",
       head + Tag(kStreams, WireFormatLite::WIRETYPE_LENGTH_DELIMITED) +
           std::string("\x80\x80\x80\x80\x80\x00", 6)},
      {"an instruction's length in six bytes",
       head + LengthField(kStreams,
                          Tag(kInstructions,
                              WireFormatLite::WIRETYPE_LENGTH_DELIMITED) +
                              std::string("\x80\x80\x80\x80\x80\x00", 6))},
      {"an instruction's tag in six bytes",
       head + LengthField(kStreams, std::string("\x92\x80\x80\x80\x80\x00", 6) +
                                        Varint(0))},
      {"a stream's tag in six bytes",
       head + std::string("\xb2\x80\x80\x80\x80\x00", 6) + Varint(0)},
      {"a varint of eleven bytes in a stream",
       head +
           LengthField(kStreams, Tag(kCore, WireFormatLite::WIRETYPE_VARINT) +
                                     std::string(10, '\x80') + "\x01")},
  };
  for (const auto& [what, bytes] : cases) {
    for (int per_chunk : {1, 1000}) {
      const Parsed parsed = ExpectSameParse(bytes, per_chunk, what);
      EXPECT_EQ(parsed.path, ParsePath::kWhole) << what;
    }
  }
}

// Protobuf limits how deep messages (and unknown groups) nest; a chunk
// parsed alone counts the depth it has inside the graph.
TEST(ParallelGraphParseTest, NestingLimitIsTheWholeParses) {
  bool some_refused = false, some_accepted = false;
  for (int depth = 90; depth <= 102; ++depth) {
    std::string groups;
    for (int d = 0; d < depth; ++d) {
      groups += Tag(50, WireFormatLite::WIRETYPE_START_GROUP);
    }
    for (int d = 0; d < depth; ++d) {
      groups += Tag(50, WireFormatLite::WIRETYPE_END_GROUP);
    }
    const std::string bytes =
        Head() +
        LengthField(kStreams,
                    Instructions(1, 2) +
                        LengthField(kInstructions, Instruction(3) + groups));
    const Parsed parsed =
        ExpectSameParse(bytes, 1, absl::StrCat("groups ", depth, " deep"));
    (parsed.ok ? some_accepted : some_refused) = true;
  }
  // The range straddles the limit, so both sides of it were compared.
  EXPECT_TRUE(some_accepted);
  EXPECT_TRUE(some_refused);
}

TEST(ParallelGraphParseTest, EveryTruncationAgrees) {
  const std::string bytes = PlainGraph();
  for (size_t size = 0; size < bytes.size(); ++size) {
    ExpectSameParse(bytes.substr(0, size), 2,
                    absl::StrCat("the first ", size, " bytes"));
  }
}

std::string TracedKernel(const std::string& name) {
  absl::StatusOr<builder::SerializedGraph> traced =
      kernels::KernelRegistry::Global().TraceSerialized(name, {});
  EXPECT_TRUE(traced.ok()) << traced.status();
  return traced.ok() ? traced->bytes : std::string();
}

TEST(ParallelGraphParseTest, TracedKernelsAndTheirMutationsAgree) {
  std::mt19937_64 random(17);
  for (const char* kernel : {"tiled_matmul", "bwmm_shard_on_H"}) {
    const std::string bytes = TracedKernel(kernel);
    ASSERT_FALSE(bytes.empty());
    for (int per_chunk : {1, 7, kInstructionsPerParseChunk}) {
      const Parsed parsed = ExpectSameParse(bytes, per_chunk, kernel);
      EXPECT_TRUE(parsed.ok);
      EXPECT_EQ(parsed.path, ParsePath::kInParallel);
    }
    int failed = 0, parallel = 0;
    constexpr int kMutations = 150;
    for (int m = 0; m < kMutations; ++m) {
      std::string mutated = bytes;
      const size_t at = random() % mutated.size();
      switch (m % 3) {
        case 0:  // flip one to three bytes
          for (int i = 0; i <= static_cast<int>(random() % 3); ++i) {
            mutated[(at + i * 13) % mutated.size()] ^=
                static_cast<char>(1 + random() % 255);
          }
          break;
        case 1:  // truncate
          mutated.resize(at);
          break;
        case 2:  // drop a few bytes in the middle
          mutated.erase(at, 1 + random() % 8);
          break;
      }
      const Parsed parsed = ExpectSameParse(
          mutated, 7, absl::StrCat(kernel, " mutation ", m, " at ", at));
      failed += !parsed.ok;
      parallel += parsed.path == ParsePath::kInParallel;
    }
    // Both kinds of outcome were met: the comparison covered both.
    EXPECT_GT(failed, 0) << kernel;
    EXPECT_LT(failed, kMutations) << kernel;
    EXPECT_GT(parallel, 0) << kernel;
  }
}

// ParseGraph takes the parallel path on a big graph: the same graph as on
// one thread, and the same error for the same broken bytes.
TEST(ParallelGraphParseTest, ParseGraphOnTwoThreadsIsOneThreads) {
  const std::string bytes = bench::SerializeStreamingKernel(4000).bytes;
  ASSERT_GT(bytes.size(), size_t{1} << 20);
  absl::StatusOr<ArenaGraph> one = ParseGraph(bytes, "big.pb", 1);
  absl::StatusOr<ArenaGraph> two = ParseGraph(bytes, "big.pb", 2);
  ASSERT_TRUE(one.ok()) << one.status();
  ASSERT_TRUE(two.ok()) << two.status();
  EXPECT_EQ((**one).streams(0).instructions_size(), 20000);
  EXPECT_EQ(SerializeDeterministic(**one), SerializeDeterministic(**two));
  EXPECT_EQ(SerializeDeterministic(**two), bytes);

  const std::string cut = bytes.substr(0, bytes.size() - 100);
  absl::StatusOr<ArenaGraph> cut_one = ParseGraph(cut, "big.pb", 1);
  absl::StatusOr<ArenaGraph> cut_two = ParseGraph(cut, "big.pb", 2);
  ASSERT_FALSE(cut_one.ok());
  EXPECT_EQ(cut_one.status(), cut_two.status());
  EXPECT_NE(cut_two.status().message().find("truncated or corrupt"),
            absl::string_view::npos);
}

}  // namespace
}  // namespace nkigraph
