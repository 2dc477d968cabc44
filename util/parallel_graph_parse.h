#ifndef NKIGRAPH_UTIL_PARALLEL_GRAPH_PARSE_H_
#define NKIGRAPH_UTIL_PARALLEL_GRAPH_PARSE_H_

// Parsing a binary proto::Graph over several threads. Nearly all of a big
// graph's bytes are its streams' instructions and its tensors, each a
// message of its own: the graph's wire bytes are walked (tags and lengths
// only) to find every tensor, every stream and the span of every
// instruction in it; the spans are parsed in chunks on a worker pool onto
// the graph's arena, and the tensors and instructions are appended to the
// graph and their streams in order. Everything else (world, files, ...) is
// parsed by protobuf as usual, beside the chunks.
//
// The result is the message ParseFromArray gives, bit for bit: where the
// bytes are not in the plain shape this walk understands (an unknown or
// mistyped field in a stream, a stray tag, truncation, a chunk protobuf
// refuses), the whole graph is parsed again by ParseFromArray, so every
// odd encoding gets protobuf's own semantics and its verdict.

#include "absl/strings/string_view.h"
#include "proto/nkigraph.pb.h"
#include "util/worker_pool.h"

namespace nkigraph {

// Instructions (or tensors) per parse task: big enough that a task's
// bookkeeping is noise, small enough that two threads finish close together.
inline constexpr int kInstructionsPerParseChunk = 1 << 12;

// How ParseGraphInParallel parsed a graph (for tests and benchmarks).
enum class ParsePath {
  kInParallel,  // the instructions in chunks on the pool
  kWhole,       // ParseFromArray of all the bytes: not the plain shape
};

// Parses `bytes` into `graph`, which must be empty and on an arena (the
// chunks' messages are created on it from the pool's threads). Returns
// what graph->ParseFromArray(bytes) returns; on false the graph's contents
// are unspecified. `instructions_per_chunk` is for tests; `path`, if not
// null, is set to the way the graph was parsed.
bool ParseGraphInParallel(
    absl::string_view bytes, WorkerPool& pool, proto::Graph* graph,
    int instructions_per_chunk = kInstructionsPerParseChunk,
    ParsePath* path = nullptr);

}  // namespace nkigraph

#endif  // NKIGRAPH_UTIL_PARALLEL_GRAPH_PARSE_H_
