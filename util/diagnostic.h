#ifndef NKIGRAPH_UTIL_DIAGNOSTIC_H_
#define NKIGRAPH_UTIL_DIAGNOSTIC_H_

// One value type for every error nkigraph reports about a graph, a kernel
// or a run: the loader's, the validator's, the tracer's and the
// interpreter's. It travels inside the absl::Status as a payload, so a
// caller that wants more than the text (a JSON report, a Python
// exception, a test) reads the fields instead of parsing the message; the
// status message is always Render() of the diagnostic it carries.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "proto/diagnostic.pb.h"

namespace nkigraph {

// What kind of error; the values are the wire form's.
enum class DiagnosticKind {
  kLoad = proto::Diagnostic::LOAD,  // a graph file that cannot be read
  kValidation = proto::Diagnostic::VALIDATION,  // a graph the validator refuses
  kTrace = proto::Diagnostic::TRACE,  // a kernel's mistake found while tracing
  kInput = proto::Diagnostic::INPUT,  // host inputs/outputs that do not fit
  kResource = proto::Diagnostic::RESOURCE,  // over the memory limit
  kDevice = proto::Diagnostic::DEVICE,      // an instruction failing as it runs
  kRace = proto::Diagnostic::RACE,  // unordered shared-HBM accesses of 2 cores
  kDeadlock = proto::Diagnostic::DEADLOCK,  // programs stuck at synchronisation
};

struct Diagnostic {
  DiagnosticKind kind = DiagnosticKind::kDevice;
  // The program the error happened in; -1 when not applicable. Producers
  // leave rank (core) at -1 also when the world has a single rank (core),
  // where naming it tells nothing; a deadlock report names every program.
  int rank = -1;
  int core = -1;
  // The instruction; -1 when none.
  int64_t instruction_id = -1;
  std::string opcode;  // its op name; empty when unknown or none
  // Kernel source of the instruction or of the trace-time call, relative
  // to the project root; empty when unknown.
  std::string file;
  int line = 0;
  std::string scope;  // scope path; empty for the root scope or none
  // The tensor the error is about: its id (0: none) and name.
  uint32_t tensor_id = 0;
  std::string tensor;
  // What went wrong, without the location above.
  std::string message;
  // Diagnostics listed under this one: every problem of an invalid graph,
  // every program of a deadlock. One level deep.
  std::vector<Diagnostic> notes;
};

// A diagnostic of `kind` with only a message; set the other fields as they
// apply.
Diagnostic MakeDiagnostic(DiagnosticKind kind, std::string message);
// The same about tensor `id` named `name` (the graph's declaration).
Diagnostic MakeTensorDiagnostic(DiagnosticKind kind, uint32_t id,
                                absl::string_view name, std::string message);

// The text users see. Where the error is comes first, in the form of its
// producer:
//   instruction:  "rank 1 core 0 instruction #12 nc_matmul at k.cc:40
//                  (scope): message" (rank, core, file:line and scope
//                  only when set)
//   trace call:   "k.cc:40 (scope) [core 1]: message"
//   tensor (validation): "tensor 3 ('x'): message"
//   program of a deadlock report: "rank 0 core 1 waits at instruction #12
//                  ..." (message "waits"), "rank 0 core 0 finished its
//                  stream"
//   otherwise the message alone;
// then each note on its own line, indented by two spaces.
std::string Render(const Diagnostic& diagnostic);

// The instruction part alone: "instruction #12 nc_matmul at k.cc:40
// (scope)"; "(unknown opcode)" when the opcode is empty.
std::string RenderInstruction(const Diagnostic& diagnostic);

// An error with message Render(diagnostic) carrying the diagnostic.
absl::Status DiagnosticError(absl::StatusCode code,
                             const Diagnostic& diagnostic);

// The diagnostic `status` carries, if any.
std::optional<Diagnostic> DiagnosticOf(const absl::Status& status);

// The diagnostic `status` carries, or one of `kind` holding its message.
Diagnostic DiagnosticOr(const absl::Status& status, DiagnosticKind kind);

// The wire form, for renderings such as JSON.
proto::Diagnostic ToProto(const Diagnostic& diagnostic);
Diagnostic FromProto(const proto::Diagnostic& message);

// The payload's type URL.
inline constexpr absl::string_view kDiagnosticTypeUrl =
    "type.googleapis.com/nkigraph.proto.Diagnostic";

}  // namespace nkigraph

#endif  // NKIGRAPH_UTIL_DIAGNOSTIC_H_
