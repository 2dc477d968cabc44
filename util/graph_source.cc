#include "util/graph_source.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "util/diagnostic.h"
#include "util/graph_io.h"

namespace nkigraph {
namespace {

// A bundle's graph, when `path` parses as a bundle holding a graph that
// names a schema version this reader knows.
bool ReadBundleGraph(const std::string& path, proto::Graph* graph) {
  proto::Bundle bundle;
  if (!ReadMessage(path, &bundle).ok() || !bundle.has_graph() ||
      bundle.graph().schema_version() == proto::SCHEMA_VERSION_UNSPECIFIED ||
      !CheckSchemaVersion(bundle.graph()).ok()) {
    return false;
  }
  *graph = std::move(*bundle.mutable_graph());
  return true;
}

}  // namespace

absl::StatusOr<GraphSource> ReadGraphSource(const std::string& path,
                                            bool check_schema) {
  GraphSource source;
  const absl::Status read = ReadMessage(path, &source.graph);
  const absl::Status schema = read.ok() && check_schema
                                  ? CheckSchemaVersion(source.graph)
                                  : absl::OkStatus();
  // A bundle read as a graph either fails to parse (its arrays are no
  // graph fields) or parses with no schema version (its graph is field 1,
  // the graph's schema version, under another wire type). Files that
  // cannot be read at all are not tried again.
  const bool unreadable =
      absl::IsNotFound(read) || absl::IsPermissionDenied(read) ||
      absl::IsResourceExhausted(read) || absl::IsDataLoss(read);
  if (!unreadable && (!read.ok() || source.graph.schema_version() ==
                                        proto::SCHEMA_VERSION_UNSPECIFIED)) {
    proto::Graph graph;
    if (ReadBundleGraph(path, &graph)) {
      source.graph = std::move(graph);
      source.from_bundle = true;
      return source;
    }
  }
  if (!read.ok()) return read;
  if (!schema.ok()) {
    return DiagnosticError(
        schema.code(),
        MakeDiagnostic(DiagnosticKind::kLoad,
                       absl::StrCat("'", path, "': ", schema.message())));
  }
  return source;
}

absl::StatusOr<ArenaGraphSource> LoadGraphSource(const std::string& path,
                                                 int threads) {
  absl::StatusOr<ArenaGraph> loaded = LoadGraph(path, threads);
  if (loaded.ok()) return ArenaGraphSource{*std::move(loaded), false};
  // As in ReadGraphSource: a bundle fails to parse as a graph, or parses
  // with no schema version; files that cannot be read are not tried again.
  const absl::Status& read = loaded.status();
  if (absl::IsNotFound(read) || absl::IsPermissionDenied(read) ||
      absl::IsResourceExhausted(read) || absl::IsDataLoss(read)) {
    return read;
  }
  proto::Graph graph;
  if (!ReadBundleGraph(path, &graph)) return read;
  ArenaGraphSource source{ArenaGraph(), true};
  source.graph.mutable_graph()->Swap(&graph);
  return source;
}

bool IsGraphFile(const std::string& path) {
  proto::Graph graph;
  return ReadMessage(path, &graph).ok() && CheckSchemaVersion(graph).ok();
}

}  // namespace nkigraph
