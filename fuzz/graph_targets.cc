// The graph and text targets: a graph file, binary or text, as `nkigraph
// check` and `nkigraph run` read it.
#include "fuzz/harness.h"
#include "fuzz/harness_support.h"
#include "google/protobuf/arena.h"
#include "util/graph_io.h"
#include "util/parallel_graph_parse.h"
#include "util/worker_pool.h"

namespace nkigraph::fuzz {
namespace {

// The parallel parse `nkigraph run` and the other readers load big graphs
// with gives protobuf's message, or fails where protobuf does. Chunks of a
// few instructions, so that a small input is cut into several.
void RequireParallelParseAgrees(absl::string_view bytes) {
  static WorkerPool* const pool = new WorkerPool(2);
  google::protobuf::Arena whole_arena, parallel_arena;
  auto* whole =
      google::protobuf::Arena::CreateMessage<proto::Graph>(&whole_arena);
  auto* parallel =
      google::protobuf::Arena::CreateMessage<proto::Graph>(&parallel_arena);
  const bool whole_ok =
      whole->ParseFromArray(bytes.data(), static_cast<int>(bytes.size()));
  const bool parallel_ok = ParseGraphInParallel(bytes, *pool, parallel,
                                                /*instructions_per_chunk=*/3);
  Require(whole_ok == parallel_ok,
          "the parallel parse and ParseFromArray disagree on success");
  if (whole_ok) {
    Require(SerializeDeterministic(*whole) == SerializeDeterministic(*parallel),
            "the parallel parse gives another message than ParseFromArray");
  }
}

Outcome FuzzGraphBytes(absl::string_view bytes, absl::string_view extension) {
  absl::StatusOr<proto::Graph> graph = ReadGraphBytes(bytes, extension);
  if (!graph.ok()) {
    RequireDiagnosed(graph.status(), "ReadGraph");
    return Outcome::kUnreadable;
  }
  return CheckAndRun(*graph, Fingerprint(bytes));
}

}  // namespace

Outcome FuzzGraphFile(absl::string_view bytes) {
  RequireParallelParseAgrees(bytes);
  return FuzzGraphBytes(bytes, ".pb");
}

Outcome FuzzTextGraphFile(absl::string_view bytes) {
  return FuzzGraphBytes(bytes, ".pbtxt");
}

}  // namespace nkigraph::fuzz
