// nkigraph._nkigraph._Tracer: the builder's Tracer for kernels written in
// Python (nkigraph.nki). Python runs the kernel body inside trace(); each
// call records through the same Emitter as the C++ DSL's ISA calls, with
// the Python file:line as the instruction's source. A recorded error is
// raised at the call that made it, as nkigraph.Error, so the traceback
// points at the kernel line.
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/inlined_vector.h"
#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "builder/emitter.h"
#include "builder/tracer.h"
#include "ops/access_pattern.h"
#include "ops/attr_spec.h"
#include "ops/device_profile.h"
#include "ops/op_def.h"
#include "pybind11/stl.h"
#include "python/module.h"
#include "python/py_errors.h"
#include "util/dtype.h"

namespace nkigraph::python {
namespace py = pybind11;
namespace {

using builder::Tensor;
using builder::Tracer;

// The C++ location given to the tracer's calls: never shown, since every
// call from Python sets the source override first.
const builder::Loc kPythonLoc = builder::Loc::current();

builder::Buffer BufferOf(absl::string_view space) {
  if (space == "sbuf") return builder::Buffer::kSbuf;
  if (space == "psum") return builder::Buffer::kPsum;
  if (space == "hbm") return builder::Buffer::kHbm;
  if (space == "shared_hbm") return builder::Buffer::kSharedHbm;
  ThrowInvalidArgument(absl::StrCat("unknown buffer '", space,
                                    "' (sbuf, psum, hbm, shared_hbm)"));
}

proto::DType DTypeOf(const std::string& name) {
  return ValueOrThrow(ParseDType(name));
}

int64_t AsInt(PyObject* h) {
  const long long v = PyLong_AsLongLong(h);
  if (v == -1 && PyErr_Occurred()) throw py::error_already_set();
  return v;
}

absl::string_view AsView(PyObject* h) {
  Py_ssize_t size = 0;
  const char* data = PyUnicode_AsUTF8AndSize(h, &size);
  if (data == nullptr) throw py::error_already_set();
  return absl::string_view(data, static_cast<size_t>(size));
}

// One trace of a Python kernel. Holds the Tracer and the file names the
// instructions point at (the override keeps a pointer to each).
class PyTracer {
 public:
  PyTracer(const std::string& kernel_name,
           const std::vector<std::pair<std::string, std::string>>& params,
           const std::string& target, int num_ranks, int num_cores) {
    builder::TraceConfig config;
    config.kernel_name = kernel_name;
    config.params = params;
    config.world.target = ValueOrThrow(ops::ParseTarget(target));
    config.world.num_ranks = num_ranks;
    config.world.num_cores = num_cores;
    config.explicit_release = true;
    tracer_ = std::make_unique<Tracer>(std::move(config));
  }

  // Runs `body(core)` once per core and returns the graph. A Python
  // exception from the body (the kernel's own, or a recorded error raised
  // at its call) stops the trace and is raised again here.
  GraphHandle Trace(const py::function& body) {
    std::optional<py::error_already_set> raised;
    absl::StatusOr<builder::SerializedGraph> graph =
        tracer_->TraceSerialized([&](Tracer& tracer) {
          if (raised.has_value()) return;
          active_ = true;
          try {
            body(tracer.program_id());
          } catch (py::error_already_set& e) {
            raised.emplace(std::move(e));
            // The other core's body must not run: a recorded error stops
            // the tracer at the end of this one.
            if (!tracer.failed()) {
              tracer.RecordError("the kernel raised a Python exception",
                                 kPythonLoc);
            }
          }
          active_ = false;
        });
    if (raised.has_value()) throw std::move(*raised);
    proto::Graph parsed;
    if (!parsed.ParseFromString(ValueOrThrow(std::move(graph)).bytes)) {
      throw StatusError(absl::InternalError("a traced graph does not parse"));
    }
    return GraphHandle{std::make_shared<const proto::Graph>(std::move(parsed))};
  }

  // Where the next calls come from.
  void SetLoc(const std::string& file, int line) {
    last_file_obj_ = py::object();
    if (file != last_file_) {
      auto [it, inserted] = files_.try_emplace(file, nullptr);
      if (inserted) it->second = std::make_unique<std::string>(file);
      last_file_ = file;
      last_file_ptr_ = it->second->c_str();
    }
    tracer_->SetSourceOverride(last_file_ptr_, line);
  }

  uint32_t Input(const std::string& name, const std::vector<int64_t>& shape,
                 const std::string& dtype, bool per_rank) {
    return Checked(tracer_
                       ->Input(name, shape, DTypeOf(dtype), per_rank,
                               std::nullopt, kPythonLoc)
                       .id());
  }

  uint32_t Allocate(const std::vector<int64_t>& shape, const std::string& dtype,
                    const std::string& space, const std::string& name,
                    const std::string& file, int line) {
    SetLoc(file, line);
    return Checked(
        tracer_
            ->Allocate(shape, DTypeOf(dtype), BufferOf(space), name, kPythonLoc)
            .id());
  }

  void Release(uint32_t id) {
    // A tile may outlive a failed trace (held by the exception's frames).
    if (!active_ || tracer_->failed()) return;
    tracer_->Release(id, kPythonLoc);
    Checked(0);
  }

  void Output(const std::string& name, uint32_t id) {
    Tensor t = tracer_->View(id, 0, FullPattern(id), kPythonLoc);
    tracer_->Output(name, t, kPythonLoc);
    Checked(0);
  }

  void PushScope(const std::string& name) { tracer_->PushScope(name); }
  void PopScope() { tracer_->PopScope(); }

  // Records one instruction of `opcode` (its proto enum value) made at
  // `file`:`line`.
  // `operands`: (role, tensor id, offset, pattern) tuples, the pattern a
  // flat tuple of [stride, count] values. `attrs`: (name, value) pairs,
  // each value converted to the type the op's schema gives the name.
  int64_t Emit(int opcode, const py::list& operands, const py::iterable& attrs,
               const py::handle& file, int line) {
    // A kernel's calls come from a few files: the same str object each
    // time (the code object's), recognised without reading it.
    if (file.ptr() != last_file_obj_.ptr()) {
      SetLoc(py::cast<std::string>(file), line);
      last_file_obj_ = py::reinterpret_borrow<py::object>(file);
    } else {
      tracer_->SetSourceOverride(last_file_ptr_, line);
    }
    if (!proto::Opcode_IsValid(opcode) || opcode == 0) {
      ThrowInvalidArgument(absl::StrCat("no opcode ", opcode));
    }
    const auto op = static_cast<proto::Opcode>(opcode);
    const ops::OpDef* def = ops::FindOp(op);
    // The views live until Finish: the Emitter points at them. (Read
    // with the C API: this runs once per traced instruction.)
    absl::InlinedVector<Tensor, 6> views;
    absl::InlinedVector<absl::string_view, 6> roles;
    const Py_ssize_t n = PyList_GET_SIZE(operands.ptr());
    views.reserve(static_cast<size_t>(n));
    for (Py_ssize_t i = 0; i < n; ++i) {
      PyObject* operand = PyList_GET_ITEM(operands.ptr(), i);
      if (!PyTuple_Check(operand) || PyTuple_GET_SIZE(operand) != 4 ||
          !PyTuple_Check(PyTuple_GET_ITEM(operand, 3))) {
        ThrowInvalidArgument(
            "an operand is (role, tensor id, offset, pattern tuple)");
      }
      PyObject* pattern = PyTuple_GET_ITEM(operand, 3);
      absl::InlinedVector<int64_t, 12> flat;
      for (Py_ssize_t k = 0; k < PyTuple_GET_SIZE(pattern); ++k) {
        flat.push_back(AsInt(PyTuple_GET_ITEM(pattern, k)));
      }
      roles.push_back(AsView(PyTuple_GET_ITEM(operand, 0)));
      views.push_back(tracer_->View(
          static_cast<uint32_t>(AsInt(PyTuple_GET_ITEM(operand, 1))),
          AsInt(PyTuple_GET_ITEM(operand, 2)), flat, kPythonLoc));
    }
    builder::Emitter e(op, Tensor(), kPythonLoc);
    for (size_t i = 0; i < views.size(); ++i) e.Operand(roles[i], views[i]);
    size_t next_attr = 0;
    for (py::handle item : attrs) {
      if (!PyTuple_Check(item.ptr()) || PyTuple_GET_SIZE(item.ptr()) != 2) {
        ThrowInvalidArgument("an attribute is (name, value)");
      }
      const absl::string_view name = AsView(PyTuple_GET_ITEM(item.ptr(), 0));
      const py::handle value = PyTuple_GET_ITEM(item.ptr(), 1);
      const absl::Span<const ops::AttrSpec> specs = def->attrs;
      const size_t k = ops::FindByName(specs, name, &next_attr);
      if (k == specs.size()) {
        ThrowInvalidArgument(
            absl::StrCat(def->name, " has no attribute '", name, "'"));
      }
      switch (specs[k].type) {
        case ops::AttrType::kInt:
          e.Int(name, AsInt(value.ptr()));
          break;
        case ops::AttrType::kFloat:
          e.Float(name, value.cast<double>());
          break;
        case ops::AttrType::kString:
          e.Str(name, AsView(value.ptr()));
          break;
        case ops::AttrType::kInts:
          e.Ints(name, value.cast<std::vector<int64_t>>());
          break;
      }
    }
    const builder::Instr instr = e.Finish();
    Checked(0);
    return instr.id;
  }

  bool failed() const { return tracer_->failed(); }

 private:
  // The [stride, count] pairs of tensor `id`'s whole row-major layout.
  std::vector<int64_t> FullPattern(uint32_t id) {
    if (id < 1 || static_cast<int>(id) > tracer_->num_tensors()) return {1, 1};
    const proto::Tensor& t = tracer_->decl(id);
    std::vector<int64_t> pattern;
    for (int d = 0; d < t.shape_size(); ++d) {
      pattern.push_back(ops::DimStride(t, d));
      pattern.push_back(t.shape(d));
    }
    return pattern;
  }
  // Raises the tracer's error, if any, at this call; else returns `value`.
  uint32_t Checked(uint32_t value) {
    if (tracer_->failed()) throw StatusError(tracer_->error());
    return value;
  }

  std::unique_ptr<Tracer> tracer_;
  absl::flat_hash_map<std::string, std::unique_ptr<std::string>> files_;
  std::string last_file_;
  const char* last_file_ptr_ = nullptr;
  py::object last_file_obj_;  // the str object last_file_ came from
  bool active_ = false;
};

}  // namespace

void DefineTracer(py::module_& m) {
  py::class_<PyTracer>(m, "_Tracer",
                       "The builder's tracer, for kernels written in Python "
                       "(nkigraph.nki).")
      .def(py::init<const std::string&,
                    const std::vector<std::pair<std::string, std::string>>&,
                    const std::string&, int, int>(),
           py::arg("kernel_name"), py::arg("params"), py::arg("target"),
           py::arg("num_ranks"), py::arg("num_cores"))
      .def("trace", &PyTracer::Trace, py::arg("body"))
      .def("set_loc", &PyTracer::SetLoc, py::arg("file"), py::arg("line"))
      .def("input", &PyTracer::Input, py::arg("name"), py::arg("shape"),
           py::arg("dtype"), py::arg("per_rank"))
      .def("alloc", &PyTracer::Allocate, py::arg("shape"), py::arg("dtype"),
           py::arg("space"), py::arg("name"), py::arg("file"), py::arg("line"))
      .def("release", &PyTracer::Release, py::arg("id"))
      .def("output", &PyTracer::Output, py::arg("name"), py::arg("id"))
      .def("push_scope", &PyTracer::PushScope, py::arg("name"))
      .def("pop_scope", &PyTracer::PopScope)
      .def("emit", &PyTracer::Emit, py::arg("opcode"), py::arg("operands"),
           py::arg("attrs"), py::arg("file"), py::arg("line"))
      .def_property_readonly("failed", &PyTracer::failed);

  py::dict opcodes;
  const google::protobuf::EnumDescriptor* opcode_enum =
      proto::Opcode_descriptor();
  for (int i = 0; i < opcode_enum->value_count(); ++i) {
    const auto* value = opcode_enum->value(i);
    if (value->number() == 0) continue;
    opcodes[py::str(absl::AsciiStrToLower(value->name()))] = value->number();
  }
  m.attr("_opcodes") = opcodes;
}

}  // namespace nkigraph::python
