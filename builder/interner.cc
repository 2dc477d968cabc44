#include "builder/interner.h"

#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"

namespace nkigraph::builder {

absl::string_view RelativeSource(const char* file) {
  absl::string_view path(file);
  absl::string_view root(NKIGRAPH_SOURCE_DIR "/");
  if (path.substr(0, root.size()) == root) {
    path.remove_prefix(root.size());
    return path;
  }
  // A build that compiles with paths relative to its build directory (a
  // compiler cache shared between checkouts rewrites them so) names files
  // "../kernels/x.cc": the build directory sits inside the source tree.
  while (absl::ConsumePrefix(&path, "../") ||
         absl::ConsumePrefix(&path, "./")) {
  }
  return path;
}

SourceInterner::SourceInterner(proto::Graph* graph) : graph_(graph) {
  graph_->add_scopes("");
  scope_ids_[""] = 0;
}

uint32_t SourceInterner::FileSlow(const char* file) {
  auto it = file_ids_by_ptr_.find(file);
  if (it != file_ids_by_ptr_.end()) return it->second;
  const std::string path(RelativeSource(file));
  auto [by_name, inserted] = file_ids_.try_emplace(path, graph_->files_size());
  if (inserted) graph_->add_files(path);
  file_ids_by_ptr_[file] = by_name->second;
  return by_name->second;
}

uint32_t SourceInterner::Scope(uint32_t parent, absl::string_view name) {
  if (parent == last_scope_parent_ && name == last_scope_name_) {
    return last_scope_index_;
  }
  const std::string& parent_path = graph_->scopes(parent);
  std::string path = parent_path.empty() ? std::string(name)
                                         : absl::StrCat(parent_path, "/", name);
  auto [it, inserted] =
      scope_ids_.try_emplace(std::move(path), graph_->scopes_size());
  if (inserted) graph_->add_scopes(it->first);
  last_scope_parent_ = parent;
  last_scope_name_.assign(name.data(), name.size());
  last_scope_index_ = it->second;
  return it->second;
}

}  // namespace nkigraph::builder
