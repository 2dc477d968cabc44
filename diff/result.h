#ifndef NKIGRAPH_DIFF_RESULT_H_
#define NKIGRAPH_DIFF_RESULT_H_

// The structured result of a semantic graph diff: what the text and JSON
// formatters print and what tests inspect.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace nkigraph::diff {

enum class ChangeKind { kAdded, kRemoved, kChanged };

// "added", "removed" or "changed".
const char* ChangeKindName(ChangeKind kind);

// One field that differs. A field present on one side only has no value on
// the other (an added parameter or attribute, an extra operand).
struct FieldChange {
  std::string field;  // "param m", "num_cores", "shape", "attr accumulate",
                      // "operand moving ap", "source", ...
  std::optional<std::string> before;
  std::optional<std::string> after;
};

struct TensorChange {
  ChangeKind kind = ChangeKind::kChanged;
  // How the report names the tensor: its name, with "#k" (its k-th
  // occurrence, from 0) when several tensors of the core share the name.
  std::string name_a;  // empty when added
  std::string name_b;  // empty when removed
  int64_t core = -1;   // -1: shared HBM (all cores of a rank)
  uint32_t id_a = 0;   // 0: absent in that graph
  uint32_t id_b = 0;
  std::string summary_a;  // "sbuf bfloat16 [128, 200] @64", "" if absent
  std::string summary_b;
  std::vector<FieldChange> fields;  // kChanged: what differs
};

struct InstrChange {
  ChangeKind kind = ChangeKind::kChanged;
  int64_t index_a = -1;  // position in the core's stream, -1 if absent
  int64_t index_b = -1;
  uint32_t id_a = 0;
  uint32_t id_b = 0;
  std::string opcode;  // the op name, e.g. "nc_matmul"
  std::string text_a;  // the whole instruction, "" if absent
  std::string text_b;
  std::string source_a;  // "file:line", informational
  std::string source_b;
  std::vector<FieldChange> fields;  // kChanged: what differs
};

struct Counts {
  int64_t added = 0;
  int64_t removed = 0;
  int64_t changed = 0;

  int64_t total() const { return added + removed + changed; }
  void Add(ChangeKind kind);
  Counts& operator+=(const Counts& other);
};

struct StreamDiff {
  uint32_t core = 0;
  bool in_a = true;  // false: the stream exists in B only
  bool in_b = true;
  int64_t length_a = 0;
  int64_t length_b = 0;
  Counts counts;
  // In stream order. At most DiffOptions::max_changes entries; `omitted`
  // more were counted but not detailed.
  std::vector<InstrChange> changes;
  int64_t omitted = 0;
};

struct DiffResult {
  // Kernel name, schema version, parameters and world.
  std::vector<FieldChange> header;
  std::vector<TensorChange> tensors;
  int64_t tensors_omitted = 0;
  // One entry per core present in either graph, in core order (also for
  // streams without differences, so lengths can be shown).
  std::vector<StreamDiff> streams;

  Counts header_counts;
  Counts tensor_counts;
  Counts instruction_counts;

  Counts total() const;
  bool same() const { return total().total() == 0; }
};

}  // namespace nkigraph::diff

#endif  // NKIGRAPH_DIFF_RESULT_H_
