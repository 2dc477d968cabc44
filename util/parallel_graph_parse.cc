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

// A run of whole fields that one task parses: part of one stream's body
// (instructions, and the core wherever it appears among them), parsed as
// a Stream, or consecutive tensors of the graph, parsed as a Graph.
struct Chunk {
  enum Kind { kInstructions, kTensors } kind = kInstructions;
  int stream = 0;  // kInstructions: index in the graph's streams
  const char* begin = nullptr;
  int size = 0;
  int messages = 0;  // instructions or tensors
  bool has_core = false;
  // On the graph's arena, by the kind.
  proto::Stream* stream_part = nullptr;
  proto::Graph* tensor_part = nullptr;
  bool parsed_ok = false;

  const char* end() const { return begin + size; }
};

struct ParsePlan {
  // Every field of the graph but its streams and tensors, in their order:
  // parsing these alone gives the graph ParseFromArray does without those
  // (no field's value depends on another field's).
  std::string rest;
  bool rest_ok = false;
  std::vector<int> stream_instructions;  // per stream, in order
  int tensors = 0;
  // In the order of the bytes; instruction chunks of one stream and the
  // tensor chunks are each in order among themselves.
  std::vector<Chunk> chunks;
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
  chunk.kind = Chunk::kInstructions;
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
      ++chunk.messages;
      ++instructions;
    } else {
      return false;
    }
    if (chunk.messages == per_chunk) {
      chunk.size = input.CurrentPosition() - chunk_start;
      plan->chunks.push_back(chunk);
      chunk_start = input.CurrentPosition();
      chunk = Chunk();
      chunk.kind = Chunk::kInstructions;
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
    if (number == proto::Graph::kTensorsFieldNumber) {
      const char* tensor;
      int length;
      if (type != WireFormatLite::WIRETYPE_LENGTH_DELIMITED ||
          !SkipLengthDelimited(input, bytes.data(), &tensor, &length)) {
        return false;
      }
      // A tensor right after the last chunk's, if that one has room,
      // joins it.
      const char* field = bytes.data() + field_start;
      const char* field_end = bytes.data() + input.CurrentPosition();
      Chunk* last = plan->chunks.empty() ? nullptr : &plan->chunks.back();
      if (last == nullptr || last->kind != Chunk::kTensors ||
          last->end() != field || last->messages == per_chunk) {
        plan->chunks.emplace_back();
        last = &plan->chunks.back();
        last->kind = Chunk::kTensors;
        last->begin = field;
      }
      last->size = static_cast<int>(field_end - last->begin);
      ++last->messages;
      ++plan->tensors;
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

// Parses one chunk on `arena`, its messages nested as deep as they are in
// the graph (protobuf counts the depth of nested messages against a
// limit: a stream's instructions are one level further down).
void ParseChunk(google::protobuf::Arena* arena, Chunk& chunk) {
  CodedInputStream input = InputOver(chunk.begin, chunk.size);
  if (chunk.kind == Chunk::kTensors) {
    chunk.tensor_part =
        google::protobuf::Arena::CreateMessage<proto::Graph>(arena);
    chunk.parsed_ok = chunk.tensor_part->ParseFromCodedStream(&input) &&
                      input.ConsumedEntireMessage() &&
                      chunk.tensor_part->tensors_size() == chunk.messages;
    return;
  }
  chunk.stream_part =
      google::protobuf::Arena::CreateMessage<proto::Stream>(arena);
  input.SetRecursionLimit(CodedInputStream::GetDefaultRecursionLimit() - 1);
  chunk.parsed_ok = chunk.stream_part->ParseFromCodedStream(&input) &&
                    input.ConsumedEntireMessage() &&
                    chunk.stream_part->instructions_size() == chunk.messages;
}

// Moves the parsed messages of `part` to the end of `to` (same arena).
template <typename T>
void MoveAll(google::protobuf::RepeatedPtrField<T>* part,
             google::protobuf::RepeatedPtrField<T>* to,
             std::vector<T*>& scratch) {
  scratch.resize(part->size());
  part->UnsafeArenaExtractSubrange(0, part->size(), scratch.data());
  for (T* message : scratch) to->UnsafeArenaAddAllocated(message);
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
  if (!PlanGraph(bytes, std::max(1, instructions_per_chunk), &plan)) {
    return parse_whole();
  }
  // Task 0 parses the rest of the graph into it; the others a chunk each
  // (none of them touches the graph).
  pool.Run(static_cast<int>(plan.chunks.size()) + 1, [&](int task) {
    if (task == 0) {
      plan.rest_ok = graph->ParseFromString(plan.rest);
    } else {
      ParseChunk(arena, plan.chunks[task - 1]);
    }
  });
  if (!plan.rest_ok) return parse_whole();
  for (const Chunk& chunk : plan.chunks) {
    if (!chunk.parsed_ok) return parse_whole();
  }
  // Every part parsed: the graph takes the tensors, and the streams their
  // instructions, in order.
  graph->mutable_tensors()->Reserve(plan.tensors);
  graph->mutable_streams()->Reserve(
      static_cast<int>(plan.stream_instructions.size()));
  for (int count : plan.stream_instructions) {
    graph->add_streams()->mutable_instructions()->Reserve(count);
  }
  std::vector<proto::Tensor*> tensors;
  std::vector<proto::Instruction*> instructions;
  for (Chunk& chunk : plan.chunks) {
    if (chunk.kind == Chunk::kTensors) {
      MoveAll(chunk.tensor_part->mutable_tensors(), graph->mutable_tensors(),
              tensors);
      continue;
    }
    proto::Stream& stream = *graph->mutable_streams(chunk.stream);
    // The last core in the stream's bytes is its core, as in protobuf.
    if (chunk.has_core) stream.set_core(chunk.stream_part->core());
    MoveAll(chunk.stream_part->mutable_instructions(),
            stream.mutable_instructions(), instructions);
  }
  return true;
}

}  // namespace nkigraph
