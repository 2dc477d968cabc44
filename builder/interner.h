#ifndef NKIGRAPH_BUILDER_INTERNER_H_
#define NKIGRAPH_BUILDER_INTERNER_H_

#include <cstdint>
#include <string>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/string_view.h"
#include "proto/nkigraph.pb.h"

namespace nkigraph::builder {

// A kernel source path relative to the project root, so graphs are
// identical wherever the project is built.
absl::string_view RelativeSource(const char* file);

// Interns kernel source files and scope paths into a graph's `files` and
// `scopes` tables, so each instruction names them by index. Both are asked
// for at every recorded instruction or scope entry, so each keeps the last
// answer: consecutive calls mostly come from the same kernel file, and a
// loop body enters the same scope every iteration.
class SourceInterner {
 public:
  // Adds the root scope "" (index 0) to `graph`, which must outlive this.
  explicit SourceInterner(proto::Graph* graph);

  // The index in graph.files of `file` (a std::source_location file name).
  uint32_t File(const char* file) {
    if (file == last_file_ptr_) return last_file_id_;
    last_file_ptr_ = file;
    last_file_id_ = FileSlow(file);
    return last_file_id_;
  }

  // The index in graph.scopes of scope `name` nested in scope `parent`.
  uint32_t Scope(uint32_t parent, absl::string_view name);

 private:
  uint32_t FileSlow(const char* file);

  proto::Graph* graph_;
  absl::flat_hash_map<std::string, uint32_t> scope_ids_;
  // The last scope entered and its parent.
  uint32_t last_scope_parent_ = 0;
  std::string last_scope_name_;
  uint32_t last_scope_index_ = 0;
  absl::flat_hash_map<const char*, uint32_t> file_ids_by_ptr_;
  const char* last_file_ptr_ = nullptr;
  uint32_t last_file_id_ = 0;
  absl::flat_hash_map<std::string, uint32_t> file_ids_;
};

}  // namespace nkigraph::builder

#endif  // NKIGRAPH_BUILDER_INTERNER_H_
