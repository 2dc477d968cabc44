// nkigraph._nkigraph: the extension behind the Python package `nkigraph`
// (python/nkigraph/__init__.py re-exports it with the error classes).
#include "python/module.h"

#include "pybind11/pybind11.h"
#include "python/py_errors.h"

PYBIND11_MODULE(_nkigraph, module) {
  module.doc() =
      "nkigraph: trace NKI-style kernels into instruction graphs, run them "
      "on numpy arrays, verify, diff, draw and profile them.";
  nkigraph::python::RegisterErrors(module);
  nkigraph::python::DefineKernels(module);
  nkigraph::python::DefineGraph(module);
  nkigraph::python::DefineTracer(module);
  nkigraph::python::DefineGraphView(module);
}
