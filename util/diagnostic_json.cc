#include "util/diagnostic_json.h"

#include <string>

#include "nlohmann/json.hpp"

namespace nkigraph {
namespace {

using Json = nlohmann::ordered_json;

// `text`, or null when empty.
Json TextOrNull(const std::string& text) {
  return text.empty() ? Json(nullptr) : Json(text);
}

Json Object(const Diagnostic& d, absl::string_view verb, bool note) {
  Json line;
  line["verb"] = std::string(verb);
  line["kind"] = std::string(DiagnosticKindName(d.kind));
  line["rank"] = d.rank >= 0 ? Json(d.rank) : Json(nullptr);
  line["core"] = d.core >= 0 ? Json(d.core) : Json(nullptr);
  line["instruction_id"] =
      d.instruction_id >= 0 ? Json(d.instruction_id) : Json(nullptr);
  line["opcode"] = TextOrNull(d.opcode);
  line["file"] = TextOrNull(d.file);
  line["line"] = d.file.empty() ? Json(nullptr) : Json(d.line);
  line["scope"] = TextOrNull(d.scope);
  line["tensor_id"] = d.tensor_id > 0 ? Json(d.tensor_id) : Json(nullptr);
  line["tensor"] = TextOrNull(d.tensor);
  line["message"] = d.message;
  line["note"] = note;
  line["notes"] = note ? 0 : d.notes.size();
  return line;
}

// Invalid UTF-8 (a tensor name from a corrupt file) is replaced, never
// thrown.
std::string Dump(const Json& line) {
  return line.dump(-1, ' ', false, Json::error_handler_t::replace) + "\n";
}

}  // namespace

absl::string_view DiagnosticKindName(DiagnosticKind kind) {
  switch (kind) {
    case DiagnosticKind::kLoad:
      return "load";
    case DiagnosticKind::kValidation:
      return "validation";
    case DiagnosticKind::kTrace:
      return "trace";
    case DiagnosticKind::kInput:
      return "input";
    case DiagnosticKind::kResource:
      return "resource";
    case DiagnosticKind::kDevice:
      return "device";
    case DiagnosticKind::kRace:
      return "race";
    case DiagnosticKind::kDeadlock:
      return "deadlock";
  }
  return "device";
}

std::string DiagnosticJsonLines(const Diagnostic& diagnostic,
                                absl::string_view verb) {
  std::string lines = Dump(Object(diagnostic, verb, /*note=*/false));
  for (const Diagnostic& note : diagnostic.notes) {
    lines += Dump(Object(note, verb, /*note=*/true));
  }
  return lines;
}

std::string UsageErrorJsonLine(absl::string_view message,
                               absl::string_view verb) {
  Diagnostic d;
  d.message = std::string(message);
  Json line = Object(d, verb, /*note=*/false);
  line["kind"] = "usage";
  return Dump(line);
}

}  // namespace nkigraph
