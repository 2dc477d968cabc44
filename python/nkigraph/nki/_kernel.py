"""Tracing a Python kernel into a graph, and running it on numpy arrays.

A kernel's array arguments become the graph's inputs, named after its
parameters; what it returns (HBM tensors) its outputs, and an input some
instruction writes is also an output, written in place. An SPMD grid runs
the kernel once per grid position, one after the other on one core, the
instances sharing the kernel's shared_hbm tensors (as NKI's simulator
runs them).
"""

import inspect
import itertools

import numpy as np

from .. import _nkigraph
from .. import profile as _profile
from .. import run as _run
from . import _errors, _trace
from ._dtypes import dtype_name, numpy_of
from ._buffer import _Buffer
from ._tensor import NkiTensor


class TensorSpec:
    """A kernel argument given by shape and dtype instead of values."""

    def __init__(self, shape, dtype="float32"):
        from ._dtypes import nki_dtype
        self.shape = tuple(int(s) for s in shape)
        self.dtype = nki_dtype(dtype)


def _is_array(value):
    """A tensor argument (the rest are passed to the kernel as they are)."""
    return isinstance(value, (np.ndarray, TensorSpec))


def _spec(value):
    """(shape, nkigraph dtype name, the numpy dtype or NKI dtype)."""
    if isinstance(value, TensorSpec):
        return value.shape, dtype_name(value.dtype), value.dtype
    dt = value.dtype
    if dt.name == "bfloat16":  # an ml_dtypes array
        from .language import bfloat16
        return value.shape, "bfloat16", bfloat16
    return value.shape, dtype_name(dt), dt


class Traced:
    """A traced kernel: the graph and what running it needs."""

    def __init__(self, graph, inputs, outputs, result, constants, in_place):
        self.graph = graph
        self.inputs = inputs  # parameter name -> the argument
        self.outputs = outputs  # output names, in the result's order
        self.result = result  # the kernel's return, outputs as names
        self.constants = constants  # [(name, array)]
        self.in_place = in_place  # parameter names written in place


def _parameters(fn, args, kwargs):
    sig = inspect.signature(fn)
    bound = sig.bind(*args, **kwargs)
    bound.apply_defaults()
    return bound


class nc:
    """A grid axis spread over the NeuronCore's logical cores
    (kernel[nl.nc(2)]): its instances run at the same time, each on its
    own core, so what they share is checked for races."""

    def __init__(self, n):
        self.n = int(n)


def _grid_sizes(grid):
    """(sizes, the axis on the cores or None, number of cores)."""
    sizes = []
    core_axis = None
    for i, g in enumerate(grid):
        if isinstance(g, nc):
            if core_axis is not None or g.n not in (1, 2):
                raise _errors.unsupported(
                    f"a grid of {grid}", "one nl.nc axis of 1 or 2 cores")
            core_axis = i
            sizes.append(g.n)
        else:
            sizes.append(int(g))
    cores = sizes[core_axis] if core_axis is not None else 1
    return tuple(sizes), core_axis, cores


def trace_kernel(fn, args, kwargs, grid=()):
    """Traces fn(*args, **kwargs) over `grid`; a Traced."""
    bound = _parameters(fn, args, kwargs)
    sizes, core_axis, cores = _grid_sizes(grid)
    tracer = _nkigraph._Tracer(fn.__name__, [], "trn2", 1, cores)
    state = {}

    def body(core):
        trace = _trace.Trace(tracer, sizes)
        trace.core_axis = core_axis
        trace.core = core
        previous = _trace.current
        _trace.current = trace
        try:
            state["trace"] = trace
            state["result"] = _run_body(fn, bound, trace, sizes, state)
        finally:
            trace.live = False
            _trace.current = previous

    graph = tracer.trace(body)
    return Traced(graph, state["inputs"], state["outputs"],
                  state["result_names"], state["trace"].constants,
                  state["in_place"])


def _run_body(fn, bound, trace, grid, state):
    call_args = {}
    inputs = {}
    for name, value in bound.arguments.items():
        if _is_array(value):
            shape, dname, dtype = _spec(value)
            trace.names.add(name)
            trace.tracer.set_loc(*_def_site(fn))
            id_ = trace.tracer.input(name, list(shape), dname, True)
            buf = _Buffer(trace, id_, "shared_hbm", dtype, shape, name)
            trace.inputs[id_] = name
            call_args[name] = NkiTensor.whole(buf)
            inputs[name] = value
        else:
            call_args[name] = value
    state["inputs"] = inputs
    ranges = [range(g) for g in grid]
    if trace.core_axis is not None:
        ranges[trace.core_axis] = [trace.core]
    positions = list(itertools.product(*ranges)) or [()]
    result = None
    for k, position in enumerate(positions):
        trace.program = position
        trace.first_instance = k == 0
        trace.shared_index = 0
        out = fn(**call_args)
        if trace.pending is not None:
            trace.flush()
        if k == 0:
            result = out
    # Publish: returned HBM tensors, then inputs written in place.
    names = []
    published = {}

    def publish(value):
        if value is None:
            return None
        if isinstance(value, (tuple, list)):
            return type(value)(publish(v) for v in value)
        if not isinstance(value, NkiTensor):
            raise _errors.trace_error(
                f"a kernel returns HBM tensors, not {type(value).__name__}")
        buf = value._buf
        if buf.space not in ("hbm", "shared_hbm"):
            raise _errors.trace_error(
                f"the kernel returns '{buf.name}', which is in {buf.space}; "
                "a kernel's results are HBM tensors (store the tile first)")
        if buf.id in published:
            return published[buf.id]
        if buf.id in trace.inputs or buf.id in trace.named:
            name = buf.name
        else:
            name = "out" if not names else f"out{len(names)}"
        trace.tracer.set_loc(*_def_site(fn))
        trace.tracer.output(name, buf.id)
        published[buf.id] = name
        names.append(name)
        return name

    result_names = publish(result)
    in_place = []
    for id_ in sorted(trace.written):
        name = trace.inputs[id_]
        if id_ not in published:
            trace.tracer.set_loc(*_def_site(fn))
            trace.tracer.output(name, id_)
            published[id_] = name
        in_place.append(name)
    state["outputs"] = names
    state["result_names"] = result_names
    state["in_place"] = in_place
    return result


def _def_site(fn):
    code = fn.__code__
    return code.co_filename, code.co_firstlineno


def graph_inputs(traced):
    feed = {}
    for name, value in traced.inputs.items():
        if isinstance(value, TensorSpec):
            raise _errors.trace_error(
                f"input '{name}' was given by shape: run needs values")
        array = np.asarray(value)
        if array.dtype.name == "bfloat16":
            array = array.astype(np.float32)
        feed[name] = array
    for name, value in traced.constants:
        feed[name] = np.asarray(value)
    return feed


def simulate(traced):
    """Runs a traced kernel on its inputs; returns what the kernel returns,
    as numpy arrays, and writes in-place inputs back into their arrays."""
    outputs = _run(traced.graph, graph_inputs(traced))
    for name in traced.in_place:
        target = traced.inputs[name]
        if isinstance(target, np.ndarray):
            np.copyto(target, outputs[name].astype(target.dtype,
                                                   copy=False))

    def convert(value):
        if value is None:
            return None
        if isinstance(value, (tuple, list)):
            return type(value)(convert(v) for v in value)
        array = outputs[value]
        return array.astype(_numpy_dtype(traced, value), copy=False)

    return convert(traced.result)


def _numpy_dtype(traced, name):
    for spec in traced.graph.outputs:
        if spec["name"] == name:
            return numpy_of(spec["dtype"])
    return np.float32


class BenchmarkResult:
    """nki.benchmark's result: the cost model's ESTIMATE of the kernel's
    latency on trn2 (not a measurement)."""

    is_estimate = True

    def __init__(self, profile):
        self.profile = profile
        self.nc_latency = _Latency(profile.latency_ns / 1000.0)

    def __repr__(self):
        return (f"BenchmarkResult(estimated latency "
                f"{self.nc_latency.estimate_us:.3f} us, from the cost model)")


class _Latency:
    def __init__(self, us):
        self.estimate_us = us

    def get_latency_percentile(self, percentile):
        """The estimate, whatever the percentile: a model gives one
        figure (in microseconds)."""
        del percentile
        return self.estimate_us


def benchmark(traced):
    return BenchmarkResult(_profile(traced.graph))
