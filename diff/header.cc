#include "diff/header.h"

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace nkigraph::diff {
namespace {

std::string TargetText(proto::Target target) {
  if (proto::Target_IsValid(target)) return proto::Target_Name(target);
  return absl::StrCat("target_", static_cast<int>(target));
}

std::string GroupsText(const proto::World& world) {
  std::vector<std::string> groups;
  for (const proto::ReplicaGroup& group : world.replica_groups()) {
    groups.push_back(absl::StrCat("[", absl::StrJoin(group.ranks(), " "), "]"));
  }
  return groups.empty() ? "(all ranks)" : absl::StrJoin(groups, " ");
}

void Record(DiffResult* result, std::string field,
            std::optional<std::string> before,
            std::optional<std::string> after) {
  if (before == after) return;
  result->header_counts.Add(!before.has_value()  ? ChangeKind::kAdded
                            : !after.has_value() ? ChangeKind::kRemoved
                                                 : ChangeKind::kChanged);
  result->header.push_back(
      {std::move(field), std::move(before), std::move(after)});
}

}  // namespace

void DiffHeader(const proto::Graph& a, const proto::Graph& b,
                DiffResult* result) {
  Record(result, "kernel_name", a.kernel_name(), b.kernel_name());
  Record(result, "schema_version", absl::StrCat(a.schema_version()),
         absl::StrCat(b.schema_version()));

  // Parameters by name, in A's order then B's new ones.
  std::vector<std::string> order;
  std::map<std::string, std::vector<std::string>> values_a, values_b;
  for (const proto::Param& param : a.params()) {
    if (values_a.count(param.name()) == 0) order.push_back(param.name());
    values_a[param.name()].push_back(param.value());
  }
  for (const proto::Param& param : b.params()) {
    if (values_a.count(param.name()) == 0 &&
        values_b.count(param.name()) == 0) {
      order.push_back(param.name());
    }
    values_b[param.name()].push_back(param.value());
  }
  for (const std::string& name : order) {
    const std::vector<std::string>& va = values_a[name];
    const std::vector<std::string>& vb = values_b[name];
    for (size_t k = 0; k < std::max(va.size(), vb.size()); ++k) {
      Record(result, absl::StrCat("param ", name),
             k < va.size() ? std::optional<std::string>(va[k]) : std::nullopt,
             k < vb.size() ? std::optional<std::string>(vb[k]) : std::nullopt);
    }
  }

  const proto::World& wa = a.world();
  const proto::World& wb = b.world();
  Record(result, "target", TargetText(wa.target()), TargetText(wb.target()));
  Record(result, "num_ranks", absl::StrCat(wa.num_ranks()),
         absl::StrCat(wb.num_ranks()));
  Record(result, "num_cores", absl::StrCat(wa.num_cores()),
         absl::StrCat(wb.num_cores()));
  Record(result, "replica_groups", GroupsText(wa), GroupsText(wb));
}

}  // namespace nkigraph::diff
