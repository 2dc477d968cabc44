#include "util/diagnostic.h"

#include <string>
#include <utility>

#include "absl/strings/cord.h"
#include "absl/strings/str_cat.h"
#include "util/utf8.h"

namespace nkigraph {
namespace {

// "rank 1 core 0 " for the fields that are set.
std::string Program(const Diagnostic& d) {
  std::string who;
  if (d.rank >= 0) absl::StrAppend(&who, "rank ", d.rank, " ");
  if (d.core >= 0) absl::StrAppend(&who, "core ", d.core, " ");
  return who;
}

// One diagnostic without its notes.
std::string RenderOne(const Diagnostic& d) {
  if (d.kind == DiagnosticKind::kDeadlock && d.rank >= 0) {
    // A program of a deadlock report: always both coordinates, then its
    // state and where it stopped.
    std::string text =
        absl::StrCat("rank ", d.rank, " core ", d.core, " ", d.message);
    if (d.instruction_id >= 0) {
      absl::StrAppend(&text, " at ", RenderInstruction(d));
    }
    return text;
  }
  if (d.instruction_id >= 0) {
    return absl::StrCat(Program(d), RenderInstruction(d), ": ", d.message);
  }
  if (!d.file.empty()) {
    return absl::StrCat(d.file, ":", d.line,
                        d.scope.empty() ? "" : absl::StrCat(" (", d.scope, ")"),
                        d.core >= 0 ? absl::StrCat(" [core ", d.core, "]") : "",
                        ": ", d.message);
  }
  if (d.kind == DiagnosticKind::kValidation && d.tensor_id > 0) {
    return absl::StrCat("tensor ", d.tensor_id, " ('", d.tensor,
                        "'): ", d.message);
  }
  return d.message;
}

}  // namespace

Diagnostic MakeDiagnostic(DiagnosticKind kind, std::string message) {
  Diagnostic d;
  d.kind = kind;
  d.message = std::move(message);
  return d;
}

Diagnostic MakeTensorDiagnostic(DiagnosticKind kind, uint32_t id,
                                absl::string_view name, std::string message) {
  Diagnostic d = MakeDiagnostic(kind, std::move(message));
  d.tensor_id = id;
  d.tensor = std::string(name);
  return d;
}

std::string RenderInstruction(const Diagnostic& d) {
  std::string text =
      absl::StrCat("instruction #", d.instruction_id, " ",
                   d.opcode.empty() ? "(unknown opcode)" : d.opcode);
  if (!d.file.empty()) absl::StrAppend(&text, " at ", d.file, ":", d.line);
  if (!d.scope.empty()) absl::StrAppend(&text, " (", d.scope, ")");
  return text;
}

std::string Render(const Diagnostic& diagnostic) {
  std::string text = RenderOne(diagnostic);
  for (const Diagnostic& note : diagnostic.notes) {
    absl::StrAppend(&text, "\n  ", RenderOne(note));
  }
  return text;
}

proto::Diagnostic ToProto(const Diagnostic& d) {
  proto::Diagnostic out;
  out.set_kind(static_cast<proto::Diagnostic::Kind>(d.kind));
  if (d.rank >= 0) out.set_rank(d.rank);
  if (d.core >= 0) out.set_core(d.core);
  if (d.instruction_id >= 0) {
    out.set_instruction_id(static_cast<uint32_t>(d.instruction_id));
  }
  out.set_opcode(ToValidUtf8(d.opcode));
  out.set_file(ToValidUtf8(d.file));
  out.set_line(static_cast<uint32_t>(d.line));
  out.set_scope(ToValidUtf8(d.scope));
  out.set_tensor_id(d.tensor_id);
  out.set_tensor(ToValidUtf8(d.tensor));
  out.set_message(ToValidUtf8(d.message));
  for (const Diagnostic& note : d.notes) *out.add_notes() = ToProto(note);
  return out;
}

Diagnostic FromProto(const proto::Diagnostic& in) {
  Diagnostic d;
  d.kind = proto::Diagnostic::Kind_IsValid(in.kind()) &&
                   in.kind() != proto::Diagnostic::KIND_UNSPECIFIED
               ? static_cast<DiagnosticKind>(in.kind())
               : DiagnosticKind::kDevice;
  d.rank = in.has_rank() ? in.rank() : -1;
  d.core = in.has_core() ? in.core() : -1;
  d.instruction_id =
      in.has_instruction_id() ? static_cast<int64_t>(in.instruction_id()) : -1;
  d.opcode = in.opcode();
  d.file = in.file();
  d.line = static_cast<int>(in.line());
  d.scope = in.scope();
  d.tensor_id = in.tensor_id();
  d.tensor = in.tensor();
  d.message = in.message();
  for (const proto::Diagnostic& note : in.notes()) {
    d.notes.push_back(FromProto(note));
  }
  return d;
}

absl::Status DiagnosticError(absl::StatusCode code,
                             const Diagnostic& diagnostic) {
  // The message renders what the payload carries: the diagnostic's own
  // text but for bytes that are not UTF-8, which ToProto replaces.
  const proto::Diagnostic wire = ToProto(diagnostic);
  absl::Status status(code, Render(FromProto(wire)));
  status.SetPayload(kDiagnosticTypeUrl, absl::Cord(wire.SerializeAsString()));
  return status;
}

std::optional<Diagnostic> DiagnosticOf(const absl::Status& status) {
  const auto payload = status.GetPayload(kDiagnosticTypeUrl);
  if (!payload.has_value()) return std::nullopt;
  proto::Diagnostic message;
  if (!message.ParseFromString(std::string(*payload))) return std::nullopt;
  return FromProto(message);
}

Diagnostic DiagnosticOr(const absl::Status& status, DiagnosticKind kind) {
  if (std::optional<Diagnostic> d = DiagnosticOf(status)) return *std::move(d);
  return MakeDiagnostic(kind, std::string(status.message()));
}

}  // namespace nkigraph
