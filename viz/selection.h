#ifndef NKIGRAPH_VIZ_SELECTION_H_
#define NKIGRAPH_VIZ_SELECTION_H_

// Which instructions, cores and ranks a picture shows: --core, --rank,
// --scope and --around/--radius.

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "graph/graph_index.h"

namespace nkigraph::viz {

struct Filters {
  std::optional<int64_t> core;
  std::optional<int64_t> rank;
  // A scope path, or a run of its components ("layer_3", "attn/k_tile"):
  // every scope containing it, with everything nested inside.
  std::string scope;
  // With `scope`: only its N-th instance (0-based, program order) on each
  // core — one unrolled layer or block of many with the same path.
  std::optional<int64_t> instance;
  std::optional<uint32_t> around;  // an instruction id
  int64_t radius = 2;              // hops from `around`
};

struct Selection {
  std::vector<char> selected;  // per instruction index
  std::vector<int> cores;      // cores shown
  std::vector<int64_t> ranks;  // ranks shown
  int64_t count = 0;           // selected instructions
  std::string description;     // "core 1, scope layer_3", for titles
};

// `links` are the undirected adjacencies --around walks (the view's
// edges, as instruction index pairs). Errors name the filter and the
// allowed values; a selection with no instructions is an error.
absl::StatusOr<Selection> Select(const graph::GraphIndex& index,
                                 const Filters& filters,
                                 const std::vector<std::pair<int, int>>& links);

// True if scope `path` contains the components of `query` consecutively.
bool ScopeMatches(absl::string_view path, absl::string_view query);

}  // namespace nkigraph::viz

#endif  // NKIGRAPH_VIZ_SELECTION_H_
