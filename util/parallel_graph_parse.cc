#include "util/parallel_graph_parse.h"

#include <algorithm>
#include <climits>
#include <cstdint>
#include <string>
#include <vector>

#include "google/protobuf/arena.h"
#include "google/protobuf/io/coded_stream.h"
#include "google/protobuf/wire_format_lite.h"

namespace nkigraph {
namespace {

using google::protobuf::internal::WireFormatLite;
using google::protobuf::io::CodedInputStream;

// A run of whole fields of one stream's body (instructions, and the core
// wherever it appears among them): what one task parses, as a Stream.
struct Chunk {
  int stream = 0;  // index in the graph's streams
  const char* begin = nullptr;
  int size = 0;
  int instructions = 0;
  bool has_core = false;
  proto::Stream* parsed = nullptr;  // on the graph's arena
  bool parsed_ok = false;
};

struct ParsePlan {
  // Every field of the graph but its streams, in their order: parsing
  // these alone gives the graph ParseFromArray does, without streams
  // (no other field's value depends on a stream's).
  std::string rest;
  std::vector<int> stream_instructions;  // per stream, in order
  std::vector<Chunk> chunks;             // in stream order, then body order
};

CodedInputStream InputOver(const char* data, int size) {
  return CodedInputStream(reinterpret_cast<const uint8_t*>(data), size);
}

// The walk reads tags and lengths with CodedInputStream, which accepts a
// little more than protobuf's parser does (varints of up to ten bytes for
// both). Where the two would disagree on where a field ends, the walk
// stops: a tag of more than five bytes, a length of more than five or past
// the parser's limit.
constexpr int kMaxTagBytes = 5;
constexpr int kMaxLengthBytes = 5;
constexpr uint64_t kMaxLength = INT_MAX - 16;  // protobuf's ReadSize

// Reads the next tag into `tag` (0 at the end, or on a zero tag or a bad
// varint); false on a tag the parser would refuse for its length.
bool ReadTag(CodedInputStream& input, uint32_t* tag) {
  const int start = input.CurrentPosition();
  *tag = input.ReadTag();
  return input.CurrentPosition() - start <= kMaxTagBytes;
}

// Reads a length-delimited field's length and skips its bytes, pointing
// `body` at them; false where the parser would stop.
bool SkipLengthDelimited(CodedInputStream& input, const char* data,
                         const char** body, int* size) {
  const int start = input.CurrentPosition();
  uint64_t length;
  if (!input.ReadVarint64(&length) ||
      input.CurrentPosition() - start > kMaxLengthBytes ||
      length > kMaxLength) {
    return false;
  }
  *body = data + input.CurrentPosition();
  *size = static_cast<int>(length);
  return input.Skip(*size);
}

// Whether the walk ended where protobuf's parse of the same bytes would end
// cleanly: at the end of the bytes, not on a zero tag or a bad varint.
bool EndedCleanly(CodedInputStream& input, int size) {
  return input.ConsumedEntireMessage() && input.CurrentPosition() == size;
}

// Cuts one stream's body into chunks of `per_chunk` instructions. False
// when the body holds anything but core varints and instruction messages
// (an unknown field, a mistyped one, truncation).
bool PlanStream(const char* body, int size, int stream, int per_chunk,
                ParsePlan* plan) {
  CodedInputStream input = InputOver(body, size);
  Chunk chunk;
  chunk.stream = stream;
  chunk.begin = body;
  int chunk_start = 0;
  int instructions = 0;
  while (true) {
    uint32_t tag;
    if (!ReadTag(input, &tag)) return false;
    if (tag == 0) {
      if (!EndedCleanly(input, size)) return false;
      break;
    }
    const int number = WireFormatLite::GetTagFieldNumber(tag);
    const WireFormatLite::WireType type = WireFormatLite::GetTagWireType(tag);
    if (number == proto::Stream::kCoreFieldNumber &&
        type == WireFormatLite::WIRETYPE_VARINT) {
      uint64_t core;
      if (!input.ReadVarint64(&core)) return false;
      chunk.has_core = true;
    } else if (number == proto::Stream::kInstructionsFieldNumber &&
               type == WireFormatLite::WIRETYPE_LENGTH_DELIMITED) {
      const char* instruction;
      int length;
      if (!SkipLengthDelimited(input, body, &instruction, &length)) {
        return false;
      }
      ++chunk.instructions;
      ++instructions;
    } else {
      return false;
    }
    if (chunk.instructions == per_chunk) {
      chunk.size = input.CurrentPosition() - chunk_start;
      plan->chunks.push_back(chunk);
      chunk_start = input.CurrentPosition();
      chunk = Chunk();
      chunk.stream = stream;
      chunk.begin = body + chunk_start;
    }
  }
  chunk.size = size - chunk_start;
  if (chunk.size > 0) plan->chunks.push_back(chunk);
  plan->stream_instructions.push_back(instructions);
  return true;
}

// Walks the graph's fields. False where the bytes are not the plain shape.
bool PlanGraph(absl::string_view bytes, int per_chunk, ParsePlan* plan) {
  const int size = static_cast<int>(bytes.size());
  CodedInputStream input = InputOver(bytes.data(), size);
  while (true) {
    const int field_start = input.CurrentPosition();
    uint32_t tag;
    if (!ReadTag(input, &tag)) return false;
    if (tag == 0) return EndedCleanly(input, size);
    const int number = WireFormatLite::GetTagFieldNumber(tag);
    const WireFormatLite::WireType type = WireFormatLite::GetTagWireType(tag);
    if (number == proto::Graph::kStreamsFieldNumber) {
      const char* body;
      int length;
      if (type != WireFormatLite::WIRETYPE_LENGTH_DELIMITED ||
          !SkipLengthDelimited(input, bytes.data(), &body, &length)) {
        return false;
      }
      const int stream = static_cast<int>(plan->stream_instructions.size());
      if (!PlanStream(body, length, stream, per_chunk, plan)) return false;
      continue;
    }
    // Any other field goes to protobuf as it is, so where the walk and
    // the parser would read it differently the parser refuses it. (An
    // end-group tag here ends protobuf's parse early: its business.)
    if (type == WireFormatLite::WIRETYPE_END_GROUP ||
        !WireFormatLite::SkipField(&input, tag)) {
      return false;
    }
    plan->rest.append(bytes.data() + field_start,
                      input.CurrentPosition() - field_start);
  }
}

// Parses one chunk as a Stream on `arena`, nested as deep as it is in the
// graph (protobuf counts the depth of nested messages against a limit).
void ParseChunk(google::protobuf::Arena* arena, Chunk& chunk) {
  chunk.parsed = google::protobuf::Arena::CreateMessage<proto::Stream>(arena);
  CodedInputStream input = InputOver(chunk.begin, chunk.size);
  input.SetRecursionLimit(CodedInputStream::GetDefaultRecursionLimit() - 1);
  chunk.parsed_ok = chunk.parsed->ParseFromCodedStream(&input) &&
                    input.ConsumedEntireMessage() &&
                    chunk.parsed->instructions_size() == chunk.instructions;
}

}  // namespace

bool ParseGraphInParallel(absl::string_view bytes, WorkerPool& pool,
                          proto::Graph* graph, int instructions_per_chunk,
                          ParsePath* path) {
  if (path != nullptr) *path = ParsePath::kInParallel;
  auto parse_whole = [&] {
    if (path != nullptr) *path = ParsePath::kWhole;
    graph->Clear();
    return graph->ParseFromArray(bytes.data(), static_cast<int>(bytes.size()));
  };
  google::protobuf::Arena* arena = graph->GetArena();
  if (arena == nullptr || bytes.size() > INT_MAX) return parse_whole();
  ParsePlan plan;
  if (!PlanGraph(bytes, std::max(1, instructions_per_chunk), &plan) ||
      !graph->ParseFromString(plan.rest)) {
    return parse_whole();
  }
  pool.Run(static_cast<int>(plan.chunks.size()),
           [&](int c) { ParseChunk(arena, plan.chunks[c]); });
  for (const Chunk& chunk : plan.chunks) {
    if (!chunk.parsed_ok) return parse_whole();
  }
  // Every chunk parsed: the streams, in order, take their instructions.
  graph->mutable_streams()->Reserve(
      static_cast<int>(plan.stream_instructions.size()));
  for (int count : plan.stream_instructions) {
    graph->add_streams()->mutable_instructions()->Reserve(count);
  }
  std::vector<proto::Instruction*> moved;
  for (Chunk& chunk : plan.chunks) {
    proto::Stream& stream = *graph->mutable_streams(chunk.stream);
    // The last core in the stream's bytes is its core, as in protobuf.
    if (chunk.has_core) stream.set_core(chunk.parsed->core());
    moved.resize(chunk.instructions);
    chunk.parsed->mutable_instructions()->UnsafeArenaExtractSubrange(
        0, chunk.instructions, moved.data());
    for (proto::Instruction* instr : moved) {
      stream.mutable_instructions()->UnsafeArenaAddAllocated(instr);
    }
  }
  return true;
}

}  // namespace nkigraph
