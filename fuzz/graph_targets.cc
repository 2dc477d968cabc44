// The graph and text targets: a graph file, binary or text, as `nkigraph
// check` and `nkigraph run` read it.
#include "fuzz/harness.h"
#include "fuzz/harness_support.h"

namespace nkigraph::fuzz {
namespace {

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
  return FuzzGraphBytes(bytes, ".pb");
}

Outcome FuzzTextGraphFile(absl::string_view bytes) {
  return FuzzGraphBytes(bytes, ".pbtxt");
}

}  // namespace nkigraph::fuzz
