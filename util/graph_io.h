#ifndef NKIGRAPH_UTIL_GRAPH_IO_H_
#define NKIGRAPH_UTIL_GRAPH_IO_H_

#include <memory>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "google/protobuf/arena.h"
#include "google/protobuf/message.h"
#include "proto/nkigraph.pb.h"

namespace nkigraph {

// Binary bytes of `message`; identical bytes for identical messages.
std::string SerializeDeterministic(const google::protobuf::Message& message);

// Writes `message` to `path`: text format when the path ends in ".pbtxt",
// binary otherwise. Atomic (temp file + rename).
absl::Status WriteMessage(const google::protobuf::Message& message,
                          const std::string& path);

// Reads `path` into `message`, by the same extension rule.
absl::Status ReadMessage(const std::string& path,
                         google::protobuf::Message* message);

// The newest schema version this nkigraph reads and writes.
inline constexpr proto::SchemaVersion kNewestSchemaVersion =
    proto::SCHEMA_VERSION_VIEW_DTYPE;

// Refuses graphs written by a newer schema than this reader knows.
absl::Status CheckSchemaVersion(const proto::Graph& graph);

// A graph read onto a graph file's heap (proto::Graph on the heap): for
// callers that take the graph by value. Readers that only look at it use
// LoadGraph, several times faster on big graphs.
absl::StatusOr<proto::Graph> ReadGraph(const std::string& path);
absl::Status WriteGraph(const proto::Graph& graph, const std::string& path);

// A graph that lives on its own arena: parsing a big graph there takes a
// fraction of the time it takes on the heap (no allocation per message),
// and the whole graph is freed at once. Movable; the graph's address stays.
class ArenaGraph {
 public:
  ArenaGraph();
  const proto::Graph& operator*() const { return *graph_; }
  const proto::Graph* operator->() const { return graph_; }
  const proto::Graph& graph() const { return *graph_; }
  proto::Graph* mutable_graph() { return graph_; }
  // Bytes the graph's messages take on its arena, and the bytes of the
  // arena's blocks (what the process holds for them).
  uint64_t arena_bytes_used() const { return arena_->SpaceUsed(); }
  uint64_t arena_bytes_allocated() const { return arena_->SpaceAllocated(); }

 private:
  std::unique_ptr<google::protobuf::Arena> arena_;
  proto::Graph* graph_;
};

// Parses the bytes of a binary graph file and checks its schema version;
// `name` (a path) names it in errors. A big graph's instructions are parsed
// on `threads` threads (0: the machine's; util/parallel_graph_parse.h),
// giving the same message as one thread.
absl::StatusOr<ArenaGraph> ParseGraph(absl::string_view bytes,
                                      absl::string_view name, int threads = 0);

// Reads a graph file (binary, or text format for ".pbtxt") onto an arena,
// with ReadGraph's checks and messages; `threads` as for ParseGraph.
absl::StatusOr<ArenaGraph> LoadGraph(const std::string& path, int threads = 0);

}  // namespace nkigraph

#endif  // NKIGRAPH_UTIL_GRAPH_IO_H_
