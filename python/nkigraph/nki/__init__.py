"""nkigraph.nki: NKI kernels written in Python, traced into nkigraph graphs.

    import nkigraph.nki as nki
    import nkigraph.nki.language as nl

    @nki.jit
    def add(a, b):
        out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
        i_p, i_f = nl.mgrid[0:a.shape[0], 0:a.shape[1]]
        nl.store(out[i_p, i_f], nl.load(a[i_p, i_f]) + nl.load(b[i_p, i_f]))
        return out

    c = add(x, y)                        # numpy in, numpy out
    g = nki.trace(add, x, y)             # an nkigraph.Graph
    c = nki.simulate_kernel(add, x, y)   # NKI's older spelling
    c = nki.simulate(add)(x, y)          # and its newer one

`install_aliases()` makes `import neuronxcc.nki`, `neuronxcc.nki.language`,
`neuronxcc.nki.isa`, `neuronxcc.nki.typing` and `import nki` resolve here,
so a kernel file written for NKI runs unmodified; `python3 -m nkigraph.nki
FILE.py [args]` runs a script that way.
"""

import functools
import sys

from . import _kernel, _trace, compiler, isa, language, typing
from ._kernel import BenchmarkResult, TensorSpec

__all__ = [
    "BenchmarkResult", "TensorSpec", "baremetal", "benchmark", "compiler",
    "install_aliases", "isa", "jit", "language", "profile", "simulate",
    "simulate_kernel", "trace", "typing",
]


def _arguments(args):
    """Kernel arguments: arrays as they are, (shape, dtype) tuples and
    shapes as TensorSpecs."""
    out = []
    for a in args:
        if isinstance(a, tuple) and len(a) == 2 and \
                isinstance(a[0], (tuple, list)):
            out.append(TensorSpec(a[0], a[1]))
        elif isinstance(a, tuple) and all(isinstance(d, int) for d in a) \
                and a:
            out.append(TensorSpec(a))
        else:
            out.append(a)
    return out


class Kernel:
    """A kernel function: traced when called inside another kernel's
    trace, simulated when called with numpy arrays; kernel[g0, g1]
    launches an SPMD grid."""

    def __init__(self, fn, mode="simulation", grid=(), bench=None):
        self.fn = fn
        self.mode = mode
        self.grid = grid
        self.bench = bench  # benchmark settings, or None
        self.benchmark_result = None
        functools.update_wrapper(self, fn)

    def __getitem__(self, grid):
        if not isinstance(grid, tuple):
            grid = (grid,)
        return Kernel(self.fn, self.mode,
                      tuple(g if isinstance(g, _kernel.nc) else int(g)
                            for g in grid), self.bench)

    def __call__(self, *args, **kwargs):
        if _trace.current is not None:
            # A kernel called from a kernel: its instructions join the
            # caller's trace, in a scope of its name.
            tracer = _trace.current.tracer
            tracer.push_scope(self.fn.__name__)
            try:
                return self.fn(*args, **kwargs)
            finally:
                tracer.pop_scope()
        traced = _kernel.trace_kernel(self.fn, args, kwargs, self.grid)
        if self.bench is not None:
            # An estimate, not a run: the kernel's outputs are not computed
            # (simulate them for values).
            self.benchmark_result = _kernel.benchmark(traced)
            return None
        return _kernel.simulate(traced)

    def trace(self, *args, **kwargs):
        """The graph of this kernel on these arguments."""
        return _kernel.trace_kernel(self.fn, _arguments(args), kwargs,
                                    self.grid).graph


def _decorator(mode, bench=None):
    def make(fn=None, **options):
        if fn is None:
            return lambda f: make(f, **options)
        if isinstance(fn, Kernel):
            return Kernel(fn.fn, mode, fn.grid, bench or fn.bench)
        return Kernel(fn, mode, (), bench)
    return make


jit = _decorator("simulation")
baremetal = _decorator("baremetal")


def benchmark(fn=None, **options):
    """A kernel whose calls estimate its latency with the cost model instead
    of running it: kernel.benchmark_result.nc_latency
    .get_latency_percentile(50) is the ESTIMATE in microseconds (nkigraph
    runs no hardware); the call returns None and writes no outputs."""
    if fn is None:
        return lambda f: benchmark(f, **options)
    inner = fn.fn if isinstance(fn, Kernel) else fn
    grid = fn.grid if isinstance(fn, Kernel) else ()
    return Kernel(inner, "benchmark", grid, options or {"estimate": True})


def _unwrap(kernel):
    if isinstance(kernel, Kernel):
        return kernel.fn, kernel.grid
    return kernel, ()


def trace(kernel, *args, grid=(), **kwargs):
    """The nkigraph.Graph of kernel(*args): arrays, or shapes / (shape,
    dtype) pairs when only the graph is wanted."""
    fn, own_grid = _unwrap(kernel)
    return _kernel.trace_kernel(fn, _arguments(args), kwargs,
                                tuple(grid) or own_grid).graph


def simulate_kernel(kernel, *args, **kwargs):
    """Runs kernel(*args) on the interpreter; its results as numpy arrays
    (NKI's older spelling)."""
    fn, grid = _unwrap(kernel)
    return _kernel.simulate(_kernel.trace_kernel(fn, args, kwargs, grid))


def simulate(kernel):
    """simulate(kernel)(*args): NKI's newer spelling of simulate_kernel."""
    def run(*args, **kwargs):
        return simulate_kernel(kernel, *args, **kwargs)
    return run


def profile(kernel, *args, **kwargs):
    """The cost model's estimate (nkigraph.Profile) of kernel(*args)."""
    from .. import profile as _profile
    return _profile(trace(kernel, *args, **kwargs))


_ALIASES = {
    "neuronxcc.nki": None,
    "neuronxcc.nki.language": language,
    "neuronxcc.nki.isa": isa,
    "neuronxcc.nki.typing": typing,
    "neuronxcc.nki.compiler": compiler,
    "nki": None,
    "nki.language": language,
    "nki.isa": isa,
    "nki.typing": typing,
    "nki.compiler": compiler,
}


def install_aliases():
    """Makes NKI's module names (neuronxcc.nki..., nki...) this package's,
    so kernels written for NKI import nkigraph's front-end unmodified."""
    import types
    this = sys.modules[__name__]
    if "neuronxcc" not in sys.modules:
        neuronxcc = types.ModuleType("neuronxcc")
        neuronxcc.__path__ = []
        sys.modules["neuronxcc"] = neuronxcc
    sys.modules["neuronxcc"].nki = this
    for name, module in _ALIASES.items():
        sys.modules[name] = module if module is not None else this



