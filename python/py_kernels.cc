// kernels(), trace() and verify(): the registered kernels, from Python.
#include <memory>
#include <optional>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "interp/interpreter.h"
#include "kernels/compare.h"
#include "kernels/registry.h"
#include "pybind11/stl.h"
#include "python/module.h"
#include "python/py_arrays.h"
#include "python/py_errors.h"
#include "tools/commands.h"
#include "tools/verify_kernel.h"

namespace nkigraph::python {
namespace py = pybind11;
namespace {

using kernels::KernelDef;
using kernels::KernelRegistry;

const char* ParamTypeName(kernels::ParamType type) {
  switch (type) {
    case kernels::ParamType::kInt:
      return "int";
    case kernels::ParamType::kFloat:
      return "float";
    case kernels::ParamType::kString:
      return "str";
    case kernels::ParamType::kBool:
      return "bool";
  }
  return "?";
}

// A keyword argument as the parameter text `--set k=v` would give: True
// and False as 1 and 0 (the kernels' flags), floats as their shortest
// round-tripping repr.
std::string ParamText(py::handle value) {
  if (py::isinstance<py::bool_>(value)) {
    return value.cast<bool>() ? "1" : "0";
  }
  if (py::isinstance<py::float_>(value)) {
    return py::repr(value).cast<std::string>();
  }
  return py::str(value).cast<std::string>();
}

const KernelDef& FindKernel(const std::string& name) {
  const KernelRegistry& registry = KernelRegistry::Global();
  if (const KernelDef* def = registry.Find(name)) return *def;
  std::vector<std::string> names;
  for (const KernelDef& def : registry.kernels()) names.push_back(def.name);
  throw StatusError(absl::NotFoundError(
      absl::StrCat("unknown kernel '", name,
                   "' (registered: ", absl::StrJoin(names, ", "), ")")));
}

// The result of verify(): the report's fields and text.
struct Verification {
  std::string kernel;
  py::dict params;
  uint64_t seed = 1;
  std::string comparison;
  double tolerance = 0;
  std::vector<tools::OutputCheck> checks;
  bool passed = false;
  std::string text;
  // The inputs as the device held them (2-byte ones as uint16 bits): run()
  // on them gives `outputs` again.
  py::dict inputs;
  py::dict outputs;
  py::dict reference;
};

Verification Verify(const std::string& name, uint64_t seed,
                    std::optional<int64_t> memory_limit,
                    const py::kwargs& params) {
  const KernelDef& def = FindKernel(name);
  const kernels::Settings settings = SettingsOf(params);
  interp::RunOptions options;
  if (memory_limit.has_value()) options.memory_limit_bytes = *memory_limit;
  tools::KernelVerification v;
  absl::Status status;
  {
    py::gil_scoped_release release;
    status = tools::VerifyKernel(KernelRegistry::Global(), def, settings, seed,
                                 options, &v);
  }
  ThrowIfError(status);
  Verification result;
  result.kernel = v.kernel;
  for (const auto& [key, value] : v.params) result.params[py::str(key)] = value;
  result.seed = v.seed;
  result.comparison = std::string(kernels::ComparisonName(v.comparison));
  result.tolerance = v.tolerance;
  result.checks = v.checks;
  result.passed = v.passed();
  result.text = tools::VerifyHeader(v) + "\n";
  for (const tools::OutputCheck& check : v.checks) {
    absl::StrAppend(&result.text, tools::FormatCheck(check, v.comparison),
                    "\n");
  }
  absl::StrAppend(&result.text, v.kernel, ": ", result.passed ? "PASS" : "FAIL",
                  "\n");
  result.inputs = ToNumpyDict(v.inputs);
  result.outputs = ToNumpyDict(v.outputs);
  result.reference = ToNumpyDict(v.reference);
  return result;
}

}  // namespace

kernels::Settings SettingsOf(const py::kwargs& params) {
  kernels::Settings settings;
  for (auto [key, value] : params) {
    settings.emplace_back(py::str(key).cast<std::string>(), ParamText(value));
  }
  return settings;
}

void DefineKernels(py::module_& m) {
  py::class_<kernels::ParamSpec>(m, "Param",
                                 "One parameter of a registered kernel.")
      .def_readonly("name", &kernels::ParamSpec::name)
      .def_property_readonly(
          "type",
          [](const kernels::ParamSpec& p) { return ParamTypeName(p.type); })
      .def_property_readonly("default",
                             [](const kernels::ParamSpec& p) -> py::object {
                               if (p.required || p.default_value.empty()) {
                                 return py::none();
                               }
                               return py::str(p.default_value);
                             })
      .def_readonly("help", &kernels::ParamSpec::help)
      .def_readonly("required", &kernels::ParamSpec::required)
      .def_readonly("choices", &kernels::ParamSpec::choices)
      .def("__repr__", [](const kernels::ParamSpec& p) {
        return absl::StrCat("<nkigraph.Param ", p.name, "=",
                            p.required ? "(required)" : p.default_value, ">");
      });
  py::class_<kernels::IoSpec>(m, "IoSpec",
                              "One input or output of a registered kernel, "
                              "as `nkigraph list` shows it.")
      .def_readonly("name", &kernels::IoSpec::name)
      .def_readonly("shape", &kernels::IoSpec::shape)
      .def_readonly("dtype", &kernels::IoSpec::dtype)
      .def("__repr__", [](const kernels::IoSpec& io) {
        return absl::StrCat("<nkigraph.IoSpec ", io.name, " ", io.shape, " ",
                            io.dtype, ">");
      });
  py::class_<KernelDef>(m, "Kernel", "A registered kernel.")
      .def_readonly("name", &KernelDef::name)
      .def_readonly("summary", &KernelDef::summary)
      .def_readonly("params", &KernelDef::params)
      .def_readonly("inputs", &KernelDef::inputs)
      .def_readonly("outputs", &KernelDef::outputs)
      .def_property_readonly("example",
                             [](const KernelDef& def) {
                               py::dict example;
                               for (const auto& [k, v] : def.example) {
                                 example[py::str(k)] = v;
                               }
                               return example;
                             })
      .def_property_readonly(
          "has_reference",
          [](const KernelDef& def) { return static_cast<bool>(def.reference); })
      .def_property_readonly("text",
                             [](const KernelDef& def) {
                               std::ostringstream out;
                               tools::PrintKernel(def, out);
                               return out.str();
                             })
      .def("__repr__", [](const KernelDef& def) {
        return absl::StrCat("<nkigraph.Kernel ", def.name, ">");
      });

  m.def(
      "kernels",
      [] {
        std::vector<const KernelDef*> defs;
        for (const KernelDef& def : KernelRegistry::Global().kernels()) {
          defs.push_back(&def);
        }
        return defs;
      },
      py::return_value_policy::reference,
      "The registered kernels, in registration order.");
  m.def(
      "kernel", [](const std::string& name) { return &FindKernel(name); },
      py::return_value_policy::reference, py::arg("name"),
      "The registered kernel called `name` (NotFoundError otherwise).");

  m.def(
      "trace",
      [](const std::string& name, const py::kwargs& params) {
        const kernels::Settings settings = SettingsOf(params);
        absl::StatusOr<proto::Graph> graph;
        {
          py::gil_scoped_release release;
          graph = KernelRegistry::Global().Trace(name, settings);
        }
        return GraphHandle{std::make_shared<const proto::Graph>(
            ValueOrThrow(std::move(graph)))};
      },
      py::arg("name"),
      "Traces the registered kernel `name` with its parameters given as "
      "keywords (trace('conv1d', c_in=64, dtype='float32')) into a Graph.");

  py::class_<tools::OutputCheck>(m, "OutputCheck",
                                 "One output of verify(), compared with the "
                                 "reference.")
      .def_readonly("name", &tools::OutputCheck::name)
      .def_readonly("shape", &tools::OutputCheck::shape)
      .def_property_readonly("ok", &tools::OutputCheck::ok)
      .def_property_readonly("error",
                             [](const tools::OutputCheck& c) -> py::object {
                               if (c.error.empty()) return py::none();
                               return py::str(c.error);
                             })
      .def_property_readonly("max_abs_error",
                             [](const tools::OutputCheck& c) {
                               return c.comparison.max_abs_error;
                             })
      .def_property_readonly("max_rel_error",
                             [](const tools::OutputCheck& c) {
                               return c.comparison.max_rel_error;
                             })
      .def_property_readonly(
          "measure",
          [](const tools::OutputCheck& c) { return c.comparison.error; },
          "the largest value of the kernel's measure: what the tolerance "
          "bounds")
      .def_property_readonly(
          "failures",
          [](const tools::OutputCheck& c) { return c.comparison.failures; })
      .def("__repr__", [](const tools::OutputCheck& c) {
        return absl::StrCat("<nkigraph.OutputCheck ", c.name, " ",
                            c.ok() ? "PASS" : "FAIL", ">");
      });
  py::class_<Verification>(m, "Verification",
                           "What verify() found: per output the comparison "
                           "with the reference, and the report's text.")
      .def_readonly("kernel", &Verification::kernel)
      .def_readonly("params", &Verification::params)
      .def_readonly("seed", &Verification::seed)
      .def_readonly("comparison", &Verification::comparison)
      .def_readonly("tolerance", &Verification::tolerance)
      .def_readonly("checks", &Verification::checks)
      .def_readonly("passed", &Verification::passed)
      .def_readonly("text", &Verification::text)
      .def_readonly("inputs", &Verification::inputs)
      .def_readonly("outputs", &Verification::outputs)
      .def_readonly("reference", &Verification::reference)
      .def("__bool__", [](const Verification& v) { return v.passed; })
      .def("__repr__", [](const Verification& v) {
        return absl::StrCat("<nkigraph.Verification ", v.kernel, " ",
                            v.passed ? "PASS" : "FAIL", ">");
      });
  m.def("verify", &Verify, py::arg("name"), py::kw_only(), py::arg("seed") = 1,
        py::arg("memory_limit") = py::none(),
        "Traces the registered kernel `name` with its parameters as keywords, "
        "runs it on deterministic random inputs drawn from `seed` and "
        "compares every output with the kernel's C++ reference, as `nkigraph "
        "verify` does. A device error raises DeviceError; a mismatch does "
        "not raise: the result's `passed` is False.");
}

}  // namespace nkigraph::python
