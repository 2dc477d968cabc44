#ifndef NKIGRAPH_UTIL_DIAGNOSTIC_JSON_H_
#define NKIGRAPH_UTIL_DIAGNOSTIC_JSON_H_

// Diagnostics as JSON lines, for CI annotations and tools
// (`--diagnostics json`): one object per line, read from the diagnostic's
// fields, never from its rendered text.

#include <string>

#include "absl/strings/string_view.h"
#include "util/diagnostic.h"

namespace nkigraph {

// "load", "validation", "trace", "input", "resource", "device", "race",
// "deadlock".
absl::string_view DiagnosticKindName(DiagnosticKind kind);

// One line (ending in '\n') for `diagnostic`, then one for each note:
//   {"verb": "run", "kind": "device", "rank": 1, "core": 0,
//    "instruction_id": 12, "opcode": "nc_matmul", "file": "k.cc",
//    "line": 40, "scope": "block", "tensor_id": 3, "tensor": "x",
//    "message": "...", "note": false, "notes": 0}
// Every key is always present; what the diagnostic leaves unset is null
// (rank, core, instruction_id, opcode, file, line, scope, tensor_id,
// tensor). A note has "note": true and the kind of its own; "notes" counts
// the notes that follow the diagnostic's line.
std::string DiagnosticJsonLines(const Diagnostic& diagnostic,
                                absl::string_view verb);

// A line for an error that carries no diagnostic (bad usage, an
// unreadable option): kind "usage" and the message, every other field null.
std::string UsageErrorJsonLine(absl::string_view message,
                               absl::string_view verb);

}  // namespace nkigraph

#endif  // NKIGRAPH_UTIL_DIAGNOSTIC_JSON_H_
