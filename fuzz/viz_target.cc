// The viz target: a graph as `nkigraph dot` reads and analyses it, up to
// the DOT text; Graphviz's layout is not fuzzed (it runs in a child
// process, and its crashes are errors already).
#include <cstdint>
#include <string>

#include "absl/strings/str_cat.h"
#include "fuzz/harness.h"
#include "fuzz/harness_support.h"
#include "util/graph_io.h"
#include "viz/render.h"
#include "viz/viz.h"

namespace nkigraph::fuzz {
namespace {

// The dot options two bytes choose, and a hash picks values from the
// graph itself (a scope, an instruction id), so filters find something.
viz::DotOptions OptionsFor(uint8_t view_byte, uint8_t filter_byte,
                           uint64_t hash, const proto::Graph& graph) {
  static constexpr int64_t kMaxNodes[] = {0, 1, 2, 5, 20, 1000, 3, 8};
  static constexpr int64_t kMaxLaneNodes[] = {0, 1, 3, 60};
  viz::DotOptions options;
  options.view = (view_byte & 1) ? viz::View::kBarrier : viz::View::kDataflow;
  options.view_options.max_nodes = kMaxNodes[(view_byte >> 1) & 7];
  options.view_options.max_lane_nodes = kMaxLaneNodes[(view_byte >> 4) & 3];
  options.view_options.legend = (view_byte & 0x40) != 0;
  options.view_options.edge_labels = (view_byte & 0x80) != 0;
  viz::Filters& filters = options.filters;
  if (filter_byte & 1) filters.core = (filter_byte >> 1) & 3;
  if (filter_byte & 8) filters.rank = (filter_byte >> 4) & 3;
  if ((filter_byte & 0x40) && graph.scopes_size() > 0) {
    filters.scope = graph.scopes(static_cast<int>(hash % graph.scopes_size()));
    if (filter_byte & 0x80) filters.instance = (hash >> 8) % 3;
  }
  if ((filter_byte & 0x06) == 0x06) {
    for (const proto::Stream& stream : graph.streams()) {
      if (stream.instructions_size() == 0) continue;
      filters.around = stream
                           .instructions(static_cast<int>(
                               (hash >> 16) % stream.instructions_size()))
                           .id();
      filters.radius = (filter_byte >> 3) & 3;
      break;
    }
  }
  return options;
}

}  // namespace

Outcome FuzzVizInput(absl::string_view bytes) {
  if (bytes.size() < 2) return Outcome::kUnreadable;
  const uint8_t view_byte = static_cast<uint8_t>(bytes[0]);
  const uint8_t filter_byte = static_cast<uint8_t>(bytes[1]);
  bytes.remove_prefix(2);
  proto::Graph graph;
  if (!graph.ParseFromArray(bytes.data(), static_cast<int>(bytes.size())) ||
      !CheckSchemaVersion(graph).ok()) {
    return Outcome::kUnreadable;
  }
  if (InstructionCount(graph) > kMaxVizInstructions) return Outcome::kTooBig;
  const viz::DotOptions options =
      OptionsFor(view_byte, filter_byte, Fingerprint(bytes), graph);
  absl::StatusOr<viz::VizGraph> picture = viz::BuildView(graph, options);
  if (!picture.ok()) {
    Require(!picture.status().message().empty(), "a view error without text");
    return Outcome::kInvalid;
  }
  Require(!picture->nodes.empty(), "a picture without nodes");
  for (const viz::VizEdge& edge : picture->edges) {
    Require(edge.tail >= 0 && edge.tail < std::ssize(picture->nodes) &&
                edge.head >= 0 && edge.head < std::ssize(picture->nodes),
            "an edge to no node");
  }
  for (const viz::VizNode& node : picture->nodes) {
    Require(node.cluster >= -1 && node.cluster < std::ssize(picture->clusters),
            "a node in no cluster");
  }
  absl::StatusOr<std::string> dot = viz::Render(*picture, viz::Format::kDot);
  Require(dot.ok(), absl::StrCat("a built view does not write as DOT: ",
                                 dot.status().ToString()));
  Require(!dot->empty(), "empty DOT text");
  return Outcome::kDone;
}

}  // namespace nkigraph::fuzz
