#include "python/py_errors.h"

#include <optional>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "interp/interpreter.h"
#include "proto/diagnostic.pb.h"
#include "util/diagnostic.h"

namespace nkigraph::python {
namespace py = pybind11;
namespace {

// The Python class a status is raised as, by its code.
const char* ErrorClass(absl::StatusCode code) {
  switch (code) {
    case interp::kDeviceErrorCode:
      return "DeviceError";
    case absl::StatusCode::kInvalidArgument:
    case absl::StatusCode::kOutOfRange:
      return "InvalidArgumentError";
    case absl::StatusCode::kNotFound:
      return "NotFoundError";
    case absl::StatusCode::kResourceExhausted:
      return "ResourceError";
    default:
      return "Error";
  }
}

// The diagnostic's fields, as the exception's attributes (None where the
// diagnostic leaves a field unset).
py::dict Fields(const Diagnostic& d) {
  auto or_none = [](bool set, py::object value) {
    return set ? value : py::none();
  };
  py::dict fields;
  fields["kind"] = absl::AsciiStrToLower(proto::Diagnostic::Kind_Name(
      static_cast<proto::Diagnostic::Kind>(d.kind)));
  fields["rank"] = or_none(d.rank >= 0, py::int_(d.rank));
  fields["core"] = or_none(d.core >= 0, py::int_(d.core));
  fields["instruction_id"] =
      or_none(d.instruction_id >= 0, py::int_(d.instruction_id));
  fields["opcode"] = or_none(!d.opcode.empty(), py::str(d.opcode));
  fields["file"] = or_none(!d.file.empty(), py::str(d.file));
  fields["line"] = or_none(d.line > 0, py::int_(d.line));
  fields["scope"] = or_none(!d.scope.empty(), py::str(d.scope));
  fields["tensor_id"] = or_none(d.tensor_id > 0, py::int_(d.tensor_id));
  fields["tensor"] = or_none(!d.tensor.empty(), py::str(d.tensor));
  fields["message"] = d.message;
  py::list notes;
  for (const Diagnostic& note : d.notes) {
    py::dict note_fields = Fields(note);
    note_fields["text"] = Render(note);
    notes.append(note_fields);
  }
  fields["notes"] = notes;
  return fields;
}

void Raise(const absl::Status& status) {
  py::object package = py::module_::import("nkigraph");
  py::object cls = package.attr(ErrorClass(status.code()));
  py::object error = cls(std::string(status.message()));
  const std::optional<Diagnostic> diagnostic = DiagnosticOf(status);
  if (diagnostic.has_value()) {
    for (auto [name, value] : Fields(*diagnostic)) {
      py::setattr(error, name, value);
    }
  } else {
    // No diagnostic: the message alone; the other fields stay None.
    py::setattr(error, "message", py::str(std::string(status.message())));
  }
  py::setattr(error, "code", py::str(absl::StatusCodeToString(status.code())));
  PyErr_SetObject(cls.ptr(), error.ptr());
}

}  // namespace

StatusError::StatusError(absl::Status status)
    : status_(std::move(status)), what_(status_.message()) {}

void ThrowInvalidArgument(std::string message) {
  throw StatusError(absl::InvalidArgumentError(std::move(message)));
}

void RegisterErrors(py::module_& module) {
  (void)module;
  py::register_exception_translator([](std::exception_ptr thrown) {
    try {
      if (thrown) std::rethrow_exception(thrown);
    } catch (const StatusError& e) {
      Raise(e.status());
    }
  });
}

}  // namespace nkigraph::python
