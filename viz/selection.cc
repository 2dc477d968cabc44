#include "viz/selection.h"

#include <algorithm>
#include <deque>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "viz/group_tree.h"

namespace nkigraph::viz {

bool ScopeMatches(absl::string_view path, absl::string_view query) {
  if (query.empty()) return true;
  const std::vector<absl::string_view> parts = absl::StrSplit(path, '/');
  const std::vector<absl::string_view> want = absl::StrSplit(query, '/');
  if (want.size() > parts.size()) return false;
  for (size_t start = 0; start + want.size() <= parts.size(); ++start) {
    if (std::equal(want.begin(), want.end(), parts.begin() + start)) {
      return true;
    }
  }
  return false;
}

namespace {

// Keeps, on each of `cores`, only the `n`-th outermost instance of the
// scopes matching `query`. Instances are the scope groups the pictures
// box (viz/group_tree.h), so consecutive iterations with one path count
// separately.
absl::Status KeepInstance(const graph::GraphIndex& index,
                          const std::string& query, int64_t n,
                          const std::vector<int>& cores,
                          std::vector<char>* selected) {
  for (int c : cores) {
    const std::vector<int>& stream = index.stream(c);
    if (stream.empty()) continue;
    GroupTree tree(index);
    tree.AddLane("", stream, /*wrap_runs=*/false);
    tree.Finish(1 << 30);
    std::vector<const Group*> instances;
    for (const Group& group : tree.groups()) {
      if (group.kind != GroupKind::kScope || !ScopeMatches(group.path, query)) {
        continue;
      }
      const Group& parent = tree.group(group.parent);
      if (parent.kind == GroupKind::kScope &&
          ScopeMatches(parent.path, query)) {
        continue;  // nested inside a matching instance
      }
      instances.push_back(&group);
    }
    std::sort(
        instances.begin(), instances.end(),
        [](const Group* a, const Group* b) { return a->first < b->first; });
    if (n >= static_cast<int64_t>(instances.size())) {
      return absl::NotFoundError(absl::StrCat(
          "--instance ", n, ": scope '", query, "' has ", instances.size(),
          " instance(s) on core ", c,
          instances.empty()
              ? ""
              : absl::StrCat(" (0 to ", instances.size() - 1, ")")));
    }
    const Group& keep = *instances[n];
    for (int i : stream) {
      if (i < keep.first || i > keep.last) (*selected)[i] = 0;
    }
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<Selection> Select(
    const graph::GraphIndex& index, const Filters& filters,
    const std::vector<std::pair<int, int>>& links) {
  Selection sel;
  std::vector<std::string> what;
  if (filters.core.has_value()) {
    if (*filters.core < 0 || *filters.core >= index.num_cores()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "--core ", *filters.core,
          " is out of range: the graph "
          "has ",
          index.num_cores(), " core(s) (0 to ", index.num_cores() - 1, ")"));
    }
    sel.cores.push_back(static_cast<int>(*filters.core));
    what.push_back(absl::StrCat("core ", *filters.core));
  } else {
    for (int c = 0; c < index.num_cores(); ++c) sel.cores.push_back(c);
  }
  if (filters.rank.has_value()) {
    if (*filters.rank < 0 || *filters.rank >= index.num_ranks()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "--rank ", *filters.rank,
          " is out of range: the graph "
          "has ",
          index.num_ranks(), " rank(s) (0 to ", index.num_ranks() - 1, ")"));
    }
    sel.ranks.push_back(*filters.rank);
    what.push_back(absl::StrCat("rank ", *filters.rank));
  } else {
    for (int64_t r = 0; r < index.num_ranks(); ++r) sel.ranks.push_back(r);
  }

  sel.selected.assign(index.size(), 0);
  std::vector<char> scope_ok(std::max(index.graph().scopes_size(), 1), 1);
  if (!filters.scope.empty()) {
    bool any = false;
    for (int s = 0; s < index.graph().scopes_size(); ++s) {
      scope_ok[s] = ScopeMatches(index.graph().scopes(s), filters.scope);
      any |= scope_ok[s] != 0;
    }
    if (!any) {
      std::vector<std::string> names;
      for (int s = 0; s < index.graph().scopes_size() && names.size() < 8;
           ++s) {
        if (!index.graph().scopes(s).empty()) {
          names.push_back(index.graph().scopes(s));
        }
      }
      return absl::NotFoundError(absl::StrCat(
          "--scope '", filters.scope, "' matches no scope of the graph",
          names.empty()
              ? " (it has none)"
              : absl::StrCat(
                    " (scopes: ", absl::StrJoin(names, ", "),
                    index.graph().scopes_size() > 9 ? ", ...)" : ")")));
    }
    what.push_back(absl::StrCat("scope ", filters.scope));
  }
  for (int c : sel.cores) {
    for (int i : index.stream(c)) {
      sel.selected[i] = scope_ok[index.instr(i).scope()];
    }
  }
  if (filters.instance.has_value()) {
    if (filters.scope.empty()) {
      return absl::InvalidArgumentError("--instance needs --scope PATH");
    }
    if (*filters.instance < 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("--instance ", *filters.instance, " must be 0 or more"));
    }
    if (absl::Status s = KeepInstance(index, filters.scope, *filters.instance,
                                      sel.cores, &sel.selected);
        !s.ok()) {
      return s;
    }
    what.back() += absl::StrCat(" instance ", *filters.instance);
  }

  if (filters.around.has_value()) {
    const int start = index.Find(*filters.around);
    if (start < 0) {
      return absl::NotFoundError(absl::StrCat("--around ", *filters.around,
                                              ": the graph has no instruction ",
                                              "with that id"));
    }
    if (filters.radius < 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("--radius ", filters.radius, " must be 0 or more"));
    }
    std::vector<std::vector<int>> adjacent(index.size());
    for (const auto& [a, b] : links) {
      adjacent[a].push_back(b);
      adjacent[b].push_back(a);
    }
    std::vector<int64_t> hops(index.size(), -1);
    std::deque<int> queue = {start};
    hops[start] = 0;
    while (!queue.empty()) {
      const int i = queue.front();
      queue.pop_front();
      if (hops[i] == filters.radius) continue;
      for (int j : adjacent[i]) {
        if (hops[j] >= 0) continue;
        hops[j] = hops[i] + 1;
        queue.push_back(j);
      }
    }
    for (int i = 0; i < index.size(); ++i) {
      if (hops[i] < 0) sel.selected[i] = 0;
    }
    what.push_back(
        absl::StrCat("around #", *filters.around, " radius ", filters.radius));
  }

  for (char s : sel.selected) sel.count += s;
  if (sel.count == 0) {
    return absl::NotFoundError(
        absl::StrCat("nothing to draw: no instruction matches ",
                     what.empty() ? std::string("(the graph is empty)")
                                  : absl::StrJoin(what, ", ")));
  }
  sel.description = absl::StrJoin(what, ", ");
  return sel;
}

}  // namespace nkigraph::viz
