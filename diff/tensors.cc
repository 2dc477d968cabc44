#include "diff/tensors.h"

#include <algorithm>
#include <deque>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "diff/align.h"
#include "diff/model.h"
#include "diff/render.h"

namespace nkigraph::diff {
namespace {

int64_t CoreOf(const proto::Tensor& tensor) {
  return tensor.space() == proto::SHARED_HBM
             ? -1
             : static_cast<int64_t>(tensor.core());
}

// An input's declared values as "[lo, hi]", or "" when it declares none.
std::string ValueRange(const proto::Tensor& tensor) {
  if (!tensor.has_value_range()) return "";
  return absl::StrCat("[", tensor.value_range().lo(), ", ",
                      tensor.value_range().hi(), "]");
}

// Everything compared about a tensor except its name and live range.
uint32_t ContentKey(const proto::Tensor& tensor, KeyTable& keys) {
  std::string key;
  PutInt(&key, CoreOf(tensor));
  PutInt(&key, tensor.space());
  PutInt(&key, tensor.dtype());
  PutInt(&key, tensor.shape_size());
  for (int64_t d : tensor.shape()) PutInt(&key, d);
  PutInt(&key, tensor.address());
  PutInt(&key, tensor.partition_offset());
  PutInt(&key, tensor.role());
  PutString(&key, tensor.output_name());
  PutInt(&key, tensor.per_rank() ? 1 : 0);
  PutString(&key, ValueRange(tensor));
  return keys.Intern(key);
}

struct Group {
  std::string name;
  int64_t core = -1;
  std::vector<int> a;  // tensor indexes, in table order
  std::vector<int> b;
};

// One side of a tensor: its index in its table and display name.
struct Side {
  int index = -1;
  std::string name;
};

std::string DisplayName(const Group& group, size_t occurrence) {
  if (group.a.size() <= 1 && group.b.size() <= 1) return group.name;
  return absl::StrCat(group.name, "#", occurrence);
}

void AddField(std::vector<FieldChange>& fields, const char* field,
              const std::string& before, const std::string& after) {
  if (before != after) fields.push_back({field, before, after});
}

std::string Shape(const proto::Tensor& tensor) {
  return absl::StrCat("[", absl::StrJoin(tensor.shape(), ", "), "]");
}

std::vector<FieldChange> TensorFields(const proto::Tensor& a,
                                      const proto::Tensor& b) {
  std::vector<FieldChange> fields;
  AddField(fields, "name", a.name(), b.name());
  AddField(fields, "space", proto::MemorySpace_Name(a.space()),
           proto::MemorySpace_Name(b.space()));
  AddField(fields, "dtype", proto::DType_Name(a.dtype()),
           proto::DType_Name(b.dtype()));
  AddField(fields, "shape", Shape(a), Shape(b));
  AddField(fields, "address", absl::StrCat(a.address()),
           absl::StrCat(b.address()));
  AddField(fields, "partition_offset", absl::StrCat(a.partition_offset()),
           absl::StrCat(b.partition_offset()));
  AddField(fields, "role", proto::TensorRole_Name(a.role()),
           proto::TensorRole_Name(b.role()));
  AddField(fields, "output_name", a.output_name(), b.output_name());
  AddField(fields, "per_rank", a.per_rank() ? "true" : "false",
           b.per_rank() ? "true" : "false");
  AddField(fields, "core", absl::StrCat(CoreOf(a)), absl::StrCat(CoreOf(b)));
  AddField(fields, "value_range", ValueRange(a), ValueRange(b));
  return fields;
}

}  // namespace

void DiffTensors(const proto::Graph& a, const proto::Graph& b,
                 int64_t max_changes, DiffResult* result) {
  // Group by (name, core), groups in order of first appearance.
  std::vector<Group> groups;
  absl::flat_hash_map<std::pair<std::string, int64_t>, int> group_of;
  auto add = [&](const proto::Tensor& tensor, int index, bool in_a) {
    auto [it, inserted] =
        group_of.try_emplace(std::make_pair(tensor.name(), CoreOf(tensor)),
                             static_cast<int>(groups.size()));
    if (inserted) groups.push_back({tensor.name(), CoreOf(tensor), {}, {}});
    (in_a ? groups[it->second].a : groups[it->second].b).push_back(index);
  };
  for (int t = 0; t < a.tensors_size(); ++t) add(a.tensors(t), t, true);
  for (int t = 0; t < b.tensors_size(); ++t) add(b.tensors(t), t, false);

  KeyTable keys;
  std::vector<uint32_t> content_a(a.tensors_size()),
      content_b(b.tensors_size());
  for (int t = 0; t < a.tensors_size(); ++t) {
    content_a[t] = ContentKey(a.tensors(t), keys);
  }
  for (int t = 0; t < b.tensors_size(); ++t) {
    content_b[t] = ContentKey(b.tensors(t), keys);
  }

  std::vector<std::pair<Side, Side>> changed;
  std::vector<Side> removed, added;
  for (const Group& group : groups) {
    std::vector<uint32_t> seq_a, seq_b;
    for (int t : group.a) seq_a.push_back(content_a[t]);
    for (int t : group.b) seq_b.push_back(content_b[t]);
    const Alignment alignment = Align(seq_a, seq_b);
    for (const Hunk& hunk : Hunks(alignment)) {
      const int64_t pairs =
          std::min(hunk.a_end - hunk.a_begin, hunk.b_end - hunk.b_begin);
      for (int64_t k = 0; k < pairs; ++k) {
        const size_t i = static_cast<size_t>(hunk.a_begin + k);
        const size_t j = static_cast<size_t>(hunk.b_begin + k);
        if (seq_a[i] == seq_b[j]) continue;  // a non-minimal script
        changed.push_back({{group.a[i], DisplayName(group, i)},
                           {group.b[j], DisplayName(group, j)}});
      }
      for (int64_t i = hunk.a_begin + pairs; i < hunk.a_end; ++i) {
        removed.push_back(
            {group.a[i], DisplayName(group, static_cast<size_t>(i))});
      }
      for (int64_t j = hunk.b_begin + pairs; j < hunk.b_end; ++j) {
        added.push_back(
            {group.b[j], DisplayName(group, static_cast<size_t>(j))});
      }
    }
  }

  // Renames: a removed and an added tensor with the same content.
  std::sort(removed.begin(), removed.end(),
            [](const Side& x, const Side& y) { return x.index < y.index; });
  std::sort(added.begin(), added.end(),
            [](const Side& x, const Side& y) { return x.index < y.index; });
  absl::flat_hash_map<uint32_t, std::deque<size_t>> added_by_content;
  for (size_t k = 0; k < added.size(); ++k) {
    added_by_content[content_b[added[k].index]].push_back(k);
  }
  std::vector<uint8_t> added_taken(added.size(), 0);
  std::vector<Side> still_removed;
  for (const Side& side : removed) {
    auto it = added_by_content.find(content_a[side.index]);
    if (it == added_by_content.end() || it->second.empty()) {
      still_removed.push_back(side);
      continue;
    }
    const size_t k = it->second.front();
    it->second.pop_front();
    added_taken[k] = 1;
    changed.push_back({side, added[k]});
  }

  std::vector<TensorChange> changes;
  for (const auto& [side_a, side_b] : changed) {
    const proto::Tensor& ta = a.tensors(side_a.index);
    const proto::Tensor& tb = b.tensors(side_b.index);
    TensorChange change;
    change.kind = ChangeKind::kChanged;
    change.name_a = side_a.name;
    change.name_b = side_b.name;
    change.core = CoreOf(tb);
    change.id_a = ta.id();
    change.id_b = tb.id();
    change.summary_a = TensorSummary(ta);
    change.summary_b = TensorSummary(tb);
    change.fields = TensorFields(ta, tb);
    // Same name and content, only allocated in another order: not a
    // difference of the program.
    if (change.fields.empty()) continue;
    changes.push_back(std::move(change));
  }
  for (const Side& side : still_removed) {
    const proto::Tensor& ta = a.tensors(side.index);
    TensorChange change;
    change.kind = ChangeKind::kRemoved;
    change.name_a = side.name;
    change.core = CoreOf(ta);
    change.id_a = ta.id();
    change.summary_a = TensorSummary(ta);
    changes.push_back(std::move(change));
  }
  for (size_t k = 0; k < added.size(); ++k) {
    if (added_taken[k]) continue;
    const proto::Tensor& tb = b.tensors(added[k].index);
    TensorChange change;
    change.kind = ChangeKind::kAdded;
    change.name_b = added[k].name;
    change.core = CoreOf(tb);
    change.id_b = tb.id();
    change.summary_b = TensorSummary(tb);
    changes.push_back(std::move(change));
  }

  // Report order: by position in A (B for added tensors).
  std::stable_sort(changes.begin(), changes.end(),
                   [](const TensorChange& x, const TensorChange& y) {
                     const uint32_t px = x.id_a != 0 ? x.id_a : x.id_b;
                     const uint32_t py = y.id_a != 0 ? y.id_a : y.id_b;
                     return px < py;
                   });
  for (const TensorChange& change : changes) {
    result->tensor_counts.Add(change.kind);
  }
  if (max_changes > 0 && static_cast<int64_t>(changes.size()) > max_changes) {
    result->tensors_omitted =
        static_cast<int64_t>(changes.size()) - max_changes;
    changes.resize(static_cast<size_t>(max_changes));
  }
  result->tensors = std::move(changes);
}

}  // namespace nkigraph::diff
