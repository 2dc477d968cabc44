#ifndef NKIGRAPH_UTIL_GRAPH_IO_H_
#define NKIGRAPH_UTIL_GRAPH_IO_H_

#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
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

absl::StatusOr<proto::Graph> ReadGraph(const std::string& path);
absl::Status WriteGraph(const proto::Graph& graph, const std::string& path);

}  // namespace nkigraph

#endif  // NKIGRAPH_UTIL_GRAPH_IO_H_
