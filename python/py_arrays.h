#ifndef NKIGRAPH_PYTHON_PY_ARRAYS_H_
#define NKIGRAPH_PYTHON_PY_ARRAYS_H_

// Host arrays and numpy arrays, in the .npy exchange form of the command
// line: float32 for floating tensors (bf16 and fp8 included), int32 for
// integer ones, uint16 for the raw bits of a 2-byte tensor; per-rank
// tensors of a multi-rank graph with a leading [num_ranks] axis.

#include <string>
#include <vector>

#include "proto/nkigraph.pb.h"
#include "pybind11/numpy.h"
#include "pybind11/pybind11.h"
#include "util/host_array.h"

namespace nkigraph::python {

// A copy of `array` as a numpy array of its dtype and shape.
pybind11::array ToNumpy(const HostArray& array);

// `arrays` as {name: numpy array}.
pybind11::dict ToNumpyDict(const std::vector<HostArray>& arrays);

// `value` (anything numpy.asarray takes) as the host array for input
// `tensor`: a uint16 array as raw bits (2-byte tensors only); otherwise
// float32 for a floating tensor (from any real array), int32 for an
// integer one (from an integer or boolean array whose values fit).
// InvalidArgumentError naming the input otherwise; the shape is the
// interpreter's to check.
HostArray InputFromNumpy(const std::string& name, pybind11::handle value,
                         const proto::Tensor& tensor);

}  // namespace nkigraph::python

#endif  // NKIGRAPH_PYTHON_PY_ARRAYS_H_
