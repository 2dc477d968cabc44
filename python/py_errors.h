#ifndef NKIGRAPH_PYTHON_PY_ERRORS_H_
#define NKIGRAPH_PYTHON_PY_ERRORS_H_

// Errors on their way to Python. A failed absl::Status is thrown as a
// StatusError; the translator RegisterErrors installs raises it as
// nkigraph.Error or one of its subclasses (python/nkigraph/__init__.py
// defines them), the message being the status's (Render of its
// diagnostic) and the attributes the diagnostic's fields: kind, rank,
// core, instruction_id, opcode, file, line, scope, tensor_id, tensor,
// message, notes, and the status code.

#include <exception>
#include <string>
#include <utility>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "pybind11/pybind11.h"

namespace nkigraph::python {

class StatusError : public std::exception {
 public:
  explicit StatusError(absl::Status status);
  const absl::Status& status() const { return status_; }
  const char* what() const noexcept override { return what_.c_str(); }

 private:
  absl::Status status_;
  std::string what_;
};

inline void ThrowIfError(const absl::Status& status) {
  if (!status.ok()) throw StatusError(status);
}

template <typename T>
T ValueOrThrow(absl::StatusOr<T> value) {
  if (!value.ok()) throw StatusError(value.status());
  return *std::move(value);
}

// A bad argument from Python (a wrong dtype, an unknown name): raised as
// nkigraph.InvalidArgumentError, a ValueError.
[[noreturn]] void ThrowInvalidArgument(std::string message);

void RegisterErrors(pybind11::module_& module);

}  // namespace nkigraph::python

#endif  // NKIGRAPH_PYTHON_PY_ERRORS_H_
