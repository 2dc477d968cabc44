#ifndef NKIGRAPH_PYTHON_MODULE_H_
#define NKIGRAPH_PYTHON_MODULE_H_

// The pieces of the extension module `nkigraph._nkigraph`, each defined in
// its own file and put together by module.cc.

#include <memory>

#include "kernels/registry.h"
#include "proto/nkigraph.pb.h"
#include "pybind11/pybind11.h"

namespace nkigraph::python {

// nkigraph.Graph: an immutable graph, shared by the Python objects (and
// runs) that hold it.
struct GraphHandle {
  std::shared_ptr<const proto::Graph> graph;
};

// Keyword arguments as kernel parameter settings (k=v as --set gives them).
kernels::Settings SettingsOf(const pybind11::kwargs& params);

void DefineKernels(pybind11::module_& module);  // kernels, trace, verify
void DefineGraph(pybind11::module_& module);    // Graph, run, diff, dot, ...
void DefineTracer(pybind11::module_& module);   // _Tracer, for nkigraph.nki
// Graph.view, and the notebook pictures; after DefineGraph.
void DefineGraphView(pybind11::module_& module);

}  // namespace nkigraph::python

#endif  // NKIGRAPH_PYTHON_MODULE_H_
