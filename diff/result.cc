#include "diff/result.h"

namespace nkigraph::diff {

const char* ChangeKindName(ChangeKind kind) {
  switch (kind) {
    case ChangeKind::kAdded:
      return "added";
    case ChangeKind::kRemoved:
      return "removed";
    case ChangeKind::kChanged:
      return "changed";
  }
  return "changed";
}

void Counts::Add(ChangeKind kind) {
  switch (kind) {
    case ChangeKind::kAdded:
      ++added;
      break;
    case ChangeKind::kRemoved:
      ++removed;
      break;
    case ChangeKind::kChanged:
      ++changed;
      break;
  }
}

Counts& Counts::operator+=(const Counts& other) {
  added += other.added;
  removed += other.removed;
  changed += other.changed;
  return *this;
}

Counts DiffResult::total() const {
  Counts counts = header_counts;
  counts += tensor_counts;
  counts += instruction_counts;
  return counts;
}

}  // namespace nkigraph::diff
