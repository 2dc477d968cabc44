#include "util/graph_io.h"

#include "absl/strings/str_cat.h"
#include "google/protobuf/io/coded_stream.h"
#include "google/protobuf/io/tokenizer.h"
#include "google/protobuf/io/zero_copy_stream_impl_lite.h"
#include "google/protobuf/stubs/logging.h"
#include "google/protobuf/text_format.h"
#include "util/diagnostic.h"
#include "util/file_io.h"
#include "util/graph_arena.h"
#include "util/parallel_graph_parse.h"
#include "util/status_macros.h"
#include "util/worker_pool.h"

namespace nkigraph {
namespace {

bool IsTextPath(const std::string& path) { return EndsWith(path, ".pbtxt"); }

// Below this size a graph parses in a few milliseconds on one thread, less
// than starting threads for it would save.
constexpr size_t kParallelParseBytes = size_t{1} << 20;

absl::Status LoadError(absl::StatusCode code, std::string message) {
  return DiagnosticError(
      code, MakeDiagnostic(DiagnosticKind::kLoad, std::move(message)));
}

absl::Status NotBinaryError(absl::string_view name,
                            const google::protobuf::Message& message) {
  return LoadError(
      absl::StatusCode::kInvalidArgument,
      absl::StrCat("'", name, "' is not a valid binary ", message.GetTypeName(),
                   " (truncated or corrupt)"));
}

// CheckSchemaVersion, the message naming the file.
absl::Status CheckSchemaVersionOf(const proto::Graph& graph,
                                  absl::string_view name);

}  // namespace

std::string SerializeDeterministic(const google::protobuf::Message& message) {
  // One sizing pass (which also caches every submessage's size for the
  // write), then one pass straight into the string's buffer: no growth, no
  // copy. Deterministic mode only orders map entries, and the schema has no
  // maps, so it costs nothing today and keeps the promise if one is added.
  const size_t size = message.ByteSizeLong();
  std::string bytes(size, '\0');
  google::protobuf::io::ArrayOutputStream array(bytes.data(),
                                                static_cast<int>(size));
  google::protobuf::io::CodedOutputStream out(&array);
  out.SetSerializationDeterministic(true);
  message.SerializeWithCachedSizes(&out);
  out.Trim();
  if (out.HadError() || static_cast<size_t>(out.ByteCount()) != size) {
    // Only if the message changed while being written.
    bytes.clear();
    message.SerializeToString(&bytes);
  }
  return bytes;
}

absl::Status WriteMessage(const google::protobuf::Message& message,
                          const std::string& path) {
  if (IsTextPath(path)) {
    std::string text;
    if (!google::protobuf::TextFormat::PrintToString(message, &text)) {
      return absl::InternalError("cannot print message as text format");
    }
    return WriteFileAtomically(path, text);
  }
  return WriteFileAtomically(path, SerializeDeterministic(message));
}

absl::Status ReadMessage(const std::string& path,
                         google::protobuf::Message* message) {
  absl::StatusOr<std::string> read = ReadFile(path);
  if (!read.ok()) {
    return LoadError(read.status().code(),
                     std::string(read.status().message()));
  }
  const std::string& contents = *read;
  // Protobuf logs some parse failures itself (a string field that is not
  // UTF-8); the status below reports them, so its log stays silent.
  const google::protobuf::LogSilencer silence_protobuf_log;
  if (IsTextPath(path)) {
    // Collects the parser's complaint into the status instead of letting
    // protobuf log it to stderr.
    class FirstError : public google::protobuf::io::ErrorCollector {
     public:
      void AddError(int line, int column, const std::string& message) override {
        if (text.empty())
          text = absl::StrCat(line + 1, ":", column + 1, ": ", message);
      }
      std::string text;
    } errors;
    google::protobuf::TextFormat::Parser parser;
    parser.RecordErrorsTo(&errors);
    if (!parser.ParseFromString(contents, message)) {
      return LoadError(
          absl::StatusCode::kInvalidArgument,
          absl::StrCat("'", path, "' is not a valid text-format ",
                       message->GetTypeName(), " (", errors.text, ")"));
    }
    return absl::OkStatus();
  }
  if (!message->ParseFromString(contents))
    return NotBinaryError(path, *message);
  return absl::OkStatus();
}

absl::Status CheckSchemaVersion(const proto::Graph& graph) {
  const int version = graph.schema_version();
  if (version > kNewestSchemaVersion) {
    return LoadError(absl::StatusCode::kFailedPrecondition,
                     absl::StrCat("graph schema version ", version,
                                  " is newer than this nkigraph (",
                                  static_cast<int>(kNewestSchemaVersion),
                                  "); upgrade nkigraph to read it"));
  }
  if (version == proto::SCHEMA_VERSION_UNSPECIFIED) {
    return LoadError(
        absl::StatusCode::kInvalidArgument,
        "graph has no schema_version; it was not written by nkigraph");
  }
  return absl::OkStatus();
}

namespace {

absl::Status CheckSchemaVersionOf(const proto::Graph& graph,
                                  absl::string_view name) {
  if (absl::Status status = CheckSchemaVersion(graph); !status.ok()) {
    return LoadError(status.code(),
                     absl::StrCat("'", name, "': ", status.message()));
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<proto::Graph> ReadGraph(const std::string& path) {
  proto::Graph graph;
  NKI_RETURN_IF_ERROR(ReadMessage(path, &graph));
  NKI_RETURN_IF_ERROR(CheckSchemaVersionOf(graph, path));
  return graph;
}

ArenaGraph::ArenaGraph()
    : arena_(std::make_unique<google::protobuf::Arena>(GraphArenaOptions())),
      graph_(
          google::protobuf::Arena::CreateMessage<proto::Graph>(arena_.get())) {}

absl::StatusOr<ArenaGraph> ParseGraph(absl::string_view bytes,
                                      absl::string_view name, int threads) {
  ArenaGraph graph;
  // Parse failures are reported below, not in protobuf's log.
  const google::protobuf::LogSilencer silence_protobuf_log;
  if (threads <= 0) threads = WorkerPool::MachineThreads();
  bool parsed;
  if (threads > 1 && bytes.size() >= kParallelParseBytes) {
    WorkerPool pool(threads);
    parsed = ParseGraphInParallel(bytes, pool, graph.mutable_graph());
  } else {
    parsed = graph.mutable_graph()->ParseFromArray(
        bytes.data(), static_cast<int>(bytes.size()));
  }
  if (!parsed) return NotBinaryError(name, *graph);
  NKI_RETURN_IF_ERROR(CheckSchemaVersionOf(*graph, name));
  return graph;
}

absl::StatusOr<ArenaGraph> LoadGraph(const std::string& path, int threads) {
  if (IsTextPath(path)) {
    ArenaGraph graph;
    NKI_RETURN_IF_ERROR(ReadMessage(path, graph.mutable_graph()));
    NKI_RETURN_IF_ERROR(CheckSchemaVersionOf(*graph, path));
    return graph;
  }
  absl::StatusOr<std::string> bytes = ReadFile(path);
  if (!bytes.ok()) {
    return LoadError(bytes.status().code(),
                     std::string(bytes.status().message()));
  }
  return ParseGraph(*bytes, path, threads);
}

absl::Status WriteGraph(const proto::Graph& graph, const std::string& path) {
  return WriteMessage(graph, path);
}

}  // namespace nkigraph
