#include <optional>
#include <string>

#include "absl/strings/str_cat.h"
#include "diff/format.h"

namespace nkigraph::diff {
namespace {

char Marker(ChangeKind kind) {
  switch (kind) {
    case ChangeKind::kAdded:
      return '+';
    case ChangeKind::kRemoved:
      return '-';
    case ChangeKind::kChanged:
      return '~';
  }
  return '~';
}

std::string Value(const std::optional<std::string>& value) {
  return value.has_value() ? *value : "(absent)";
}

void AppendFields(const std::vector<FieldChange>& fields, std::string* out) {
  for (const FieldChange& field : fields) {
    absl::StrAppend(out, "      ", field.field, ": ", Value(field.before),
                    " -> ", Value(field.after), "\n");
  }
}

std::string CountsText(const Counts& counts) {
  return absl::StrCat(counts.added, " added, ", counts.removed, " removed, ",
                      counts.changed, " changed");
}

std::string TensorLine(const TensorChange& change, bool show_core) {
  const std::string core = show_core && change.core >= 0
                               ? absl::StrCat(" (core ", change.core, ")")
                               : "";
  switch (change.kind) {
    case ChangeKind::kAdded:
      return absl::StrCat("  + ", change.name_b, core, ": ", change.summary_b,
                          "  [id ", change.id_b, "]\n");
    case ChangeKind::kRemoved:
      return absl::StrCat("  - ", change.name_a, core, ": ", change.summary_a,
                          "  [id ", change.id_a, "]\n");
    case ChangeKind::kChanged:
      break;
  }
  const std::string name =
      change.name_a == change.name_b
          ? change.name_a
          : absl::StrCat(change.name_a, " -> ", change.name_b);
  return absl::StrCat("  ~ ", name, core, "  [id ", change.id_a, " -> ",
                      change.id_b, "]\n");
}

std::string InstrLine(const InstrChange& change) {
  auto with_source = [](const std::string& text, const std::string& source) {
    return source.empty() ? text : absl::StrCat(text, "  (", source, ")");
  };
  switch (change.kind) {
    case ChangeKind::kAdded:
      return absl::StrCat("  + b:", change.index_b, " [id ", change.id_b, "] ",
                          with_source(change.text_b, change.source_b), "\n");
    case ChangeKind::kRemoved:
      return absl::StrCat("  - a:", change.index_a, " [id ", change.id_a, "] ",
                          with_source(change.text_a, change.source_a), "\n");
    case ChangeKind::kChanged:
      break;
  }
  return absl::StrCat("  ~ a:", change.index_a, " b:", change.index_b, " [id ",
                      change.id_a, " -> ", change.id_b, "] ",
                      with_source(change.opcode, change.source_b), "\n");
}

}  // namespace

std::string SummaryLine(const DiffResult& result) {
  const Counts total = result.total();
  return absl::StrCat(
      "summary: ", result.same() ? "no differences (" : "", CountsText(total),
      result.same() ? ")" : "", result.same() ? "" : " (",
      result.same()
          ? ""
          : absl::StrCat(
                "instructions: ", CountsText(result.instruction_counts),
                "; tensors: ", CountsText(result.tensor_counts),
                "; header: ", CountsText(result.header_counts), ")"));
}

std::string FormatText(const DiffResult& result, const FormatOptions& options) {
  std::string out;
  if (!result.same()) {
    absl::StrAppend(&out, "--- ", options.label_a, "\n+++ ", options.label_b,
                    options.strict ? "\n(strict: source lines and scopes "
                                     "compared)\n"
                                   : "\n");
  }
  if (!result.header.empty()) {
    out += "header:\n";
    for (const FieldChange& field : result.header) {
      const ChangeKind kind = !field.before.has_value()  ? ChangeKind::kAdded
                              : !field.after.has_value() ? ChangeKind::kRemoved
                                                         : ChangeKind::kChanged;
      absl::StrAppend(&out, "  ", std::string(1, Marker(kind)), " ",
                      field.field, ": ");
      if (kind == ChangeKind::kChanged) {
        absl::StrAppend(&out, *field.before, " -> ", *field.after, "\n");
      } else {
        absl::StrAppend(
            &out, Value(field.before.has_value() ? field.before : field.after),
            "\n");
      }
    }
  }
  const bool show_core = result.streams.size() > 1;
  if (!result.tensors.empty() || result.tensors_omitted > 0) {
    absl::StrAppend(&out, "tensors: ", CountsText(result.tensor_counts), "\n");
    for (const TensorChange& change : result.tensors) {
      out += TensorLine(change, show_core);
      AppendFields(change.fields, &out);
    }
    if (result.tensors_omitted > 0) {
      absl::StrAppend(&out, "  ... ", result.tensors_omitted,
                      " more tensor changes not shown\n");
    }
  }
  for (const StreamDiff& stream : result.streams) {
    if (stream.counts.total() == 0) continue;
    absl::StrAppend(&out, "core ", stream.core, ": ");
    if (!stream.in_a) {
      out += "stream only in B, ";
    } else if (!stream.in_b) {
      out += "stream only in A, ";
    }
    absl::StrAppend(&out, stream.length_a, " -> ", stream.length_b,
                    " instructions, ", CountsText(stream.counts), "\n");
    for (const InstrChange& change : stream.changes) {
      out += InstrLine(change);
      AppendFields(change.fields, &out);
    }
    if (stream.omitted > 0) {
      absl::StrAppend(&out, "  ... ", stream.omitted,
                      " more instruction changes not shown\n");
    }
  }
  absl::StrAppend(&out, SummaryLine(result), "\n");
  return out;
}

}  // namespace nkigraph::diff
