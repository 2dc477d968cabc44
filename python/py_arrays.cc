#include "python/py_arrays.h"

#include <cstdint>
#include <cstring>
#include <limits>

#include "absl/strings/str_cat.h"
#include "python/py_errors.h"
#include "util/dtype.h"

namespace nkigraph::python {
namespace py = pybind11;
namespace {

template <typename T>
py::array MakeArray(const std::vector<int64_t>& shape,
                    const std::vector<T>& values) {
  std::vector<py::ssize_t> dims(shape.begin(), shape.end());
  py::array_t<T> array(dims);
  if (!values.empty()) {
    std::memcpy(array.mutable_data(), values.data(), values.size() * sizeof(T));
  }
  return array;
}

template <typename T>
std::vector<T> Values(const py::array& array) {
  auto typed =
      py::array_t<T, py::array::c_style | py::array::forcecast>::ensure(array);
  if (!typed) throw py::error_already_set();
  return std::vector<T>(typed.data(), typed.data() + typed.size());
}

std::string DTypeText(const py::array& array) {
  return py::str(array.dtype()).cast<std::string>();
}

}  // namespace

py::array ToNumpy(const HostArray& array) {
  switch (array.dtype) {
    case proto::INT32:
      return MakeArray(array.shape, array.i32);
    case proto::UINT16:
      return MakeArray(array.shape, array.u16);
    default:
      return MakeArray(array.shape, array.f32);
  }
}

py::dict ToNumpyDict(const std::vector<HostArray>& arrays) {
  py::dict dict;
  for (const HostArray& array : arrays)
    dict[py::str(array.name)] = ToNumpy(array);
  return dict;
}

HostArray InputFromNumpy(const std::string& name, py::handle value,
                         const proto::Tensor& tensor) {
  py::array array = py::module_::import("numpy").attr("asarray")(value);
  const char kind = array.dtype().kind();
  HostArray host;
  host.name = name;
  host.shape.assign(array.shape(), array.shape() + array.ndim());
  const std::string declared(DTypeName(tensor.dtype()));
  if (array.dtype().is(py::dtype::of<uint16_t>())) {
    if (DTypeSize(tensor.dtype()) != 2) {
      ThrowInvalidArgument(
          absl::StrCat("input '", name,
                       "': a uint16 array is taken as raw bits, only for "
                       "a 2-byte tensor; '",
                       name, "' is ", declared));
    }
    host.dtype = proto::UINT16;
    host.u16 = Values<uint16_t>(array);
    return host;
  }
  const bool integral = kind == 'i' || kind == 'u' || kind == 'b';
  if (IsFloatDType(tensor.dtype())) {
    if (!integral && kind != 'f') {
      ThrowInvalidArgument(absl::StrCat("input '", name, "' is ", declared,
                                        "; got an array of ",
                                        DTypeText(array)));
    }
    host.dtype = proto::FLOAT32;
    host.f32 = Values<float>(array);
    return host;
  }
  if (!integral) {
    ThrowInvalidArgument(absl::StrCat("input '", name, "' is ", declared,
                                      "; give an integer array, not one of ",
                                      DTypeText(array)));
  }
  host.dtype = proto::INT32;
  const std::vector<int64_t> wide = Values<int64_t>(array);
  host.i32.reserve(wide.size());
  for (size_t i = 0; i < wide.size(); ++i) {
    if (wide[i] < std::numeric_limits<int32_t>::min() ||
        wide[i] > std::numeric_limits<int32_t>::max()) {
      ThrowInvalidArgument(absl::StrCat("input '", name, "': element ", i, " (",
                                        wide[i], ") does not fit int32"));
    }
    host.i32.push_back(static_cast<int32_t>(wide[i]));
  }
  return host;
}

}  // namespace nkigraph::python
