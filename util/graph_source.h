#ifndef NKIGRAPH_UTIL_GRAPH_SOURCE_H_
#define NKIGRAPH_UTIL_GRAPH_SOURCE_H_

// What the verbs that read a graph are given: a graph file, or a replay
// bundle (`nkigraph run --save-bundle`), which stands for the graph it
// holds. Telling them apart is the reader's job, so that a bundle given to
// `info` is summarised rather than called a corrupt graph.

#include <string>

#include "absl/status/statusor.h"
#include "proto/nkigraph.pb.h"
#include "util/graph_io.h"

namespace nkigraph {

struct GraphSource {
  proto::Graph graph;
  bool from_bundle = false;  // the file is a replay bundle; `graph` is its
};

// Reads `path` as a graph (.pb or .pbtxt by extension) or, when it is not
// one, as a replay bundle with a graph of a known schema version. Errors
// are the graph reader's (ReadGraph's). With `check_schema` false, a graph
// without a known schema version is returned as read (for `check`, which
// lists it as a problem).
absl::StatusOr<GraphSource> ReadGraphSource(const std::string& path,
                                            bool check_schema = true);

// ReadGraphSource onto an arena (LoadGraph, its instructions parsed on
// `threads` threads, 0: the machine's): for the verbs that only look at the
// graph, and `run`. Tells a bundle from a graph the same way.
struct ArenaGraphSource {
  ArenaGraph graph;
  bool from_bundle = false;  // the file is a replay bundle; `graph` is its
};
absl::StatusOr<ArenaGraphSource> LoadGraphSource(const std::string& path,
                                                 int threads = 0);

// Whether `path` holds a graph rather than a replay bundle: what `replay`
// asks to say so when it is given one.
bool IsGraphFile(const std::string& path);

}  // namespace nkigraph

#endif  // NKIGRAPH_UTIL_GRAPH_SOURCE_H_
