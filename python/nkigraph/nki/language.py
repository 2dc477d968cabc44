"""nki.language: tiles, indexing, and the high-level ops, each lowered onto
the ISA instruction NKI's compiler would pick (nl.exp an activation on the
Scalar Engine, nl.add a tensor_tensor on the Vector Engine, nl.matmul an
nc_matmul into PSUM, nl.sum a tensor_reduce), so the graph, its pictures
and the cost model show real instructions."""

import builtins
import numbers

import numpy as np

from . import _errors, _ops, _trace
from ._dtypes import (bfloat16, dtype_name, float8_e4m3,  # noqa: F401
                      float8_e5m2, itemsize, tfloat32)  # (NKI's dtypes)
from ._buffer import _Buffer
from ._index import IndexExpr, _Var
from ._tensor import NkiTensor

# --- dtypes ---------------------------------------------------------------
float32 = np.float32
float16 = np.float16
int32 = np.int32
uint32 = np.uint32
int16 = np.int16
uint16 = np.uint16
int8 = np.int8
uint8 = np.uint8
bool_ = np.bool_


# --- memory ---------------------------------------------------------------
class _BufferKind:
    __slots__ = ("space", "label")

    def __init__(self, space, label):
        self.space = space
        self.label = label

    def __repr__(self):
        return f"nl.{self.label}"


sbuf = _BufferKind("sbuf", "sbuf")
psum = _BufferKind("psum", "psum")
hbm = _BufferKind("hbm", "hbm")
private_hbm = _BufferKind("hbm", "private_hbm")
shared_hbm = _BufferKind("shared_hbm", "shared_hbm")
_BUFFERS = {"sbuf": sbuf, "psum": psum, "hbm": hbm, "shared_hbm": shared_hbm}


def buffer_of(space):
    return _BUFFERS[space]


class par_dim:
    """Marks the partition dim of an on-chip tensor's shape."""

    __slots__ = ("size",)

    def __init__(self, size):
        self.size = int(size)

    def __index__(self):
        return self.size

    def __int__(self):
        return self.size


class tile_size:
    """The hardware's tile limits (trn2)."""

    pmax = 128
    psum_fmax = 512
    gemm_stationary_fmax = 128
    gemm_moving_fmax = 512
    bn_stats_fmax = 512
    psum_min_align = 4
    sbuf_min_align = 64
    # Bytes per partition, as trn2's device profile holds them.
    total_available_sbuf_size = 224 * 1024


def _space(buffer):
    if buffer is None:
        return "sbuf"
    if isinstance(buffer, _BufferKind):
        return buffer.space
    if isinstance(buffer, str) and buffer in _BUFFERS:
        return buffer
    raise _errors.unsupported(f"buffer {buffer!r}")


def _shape_and_par(shape):
    if isinstance(shape, (numbers.Integral, par_dim)):
        shape = (shape,)
    dims = []
    par = 0
    for i, d in enumerate(shape):
        if isinstance(d, par_dim):
            par = i
        dims.append(int(d))
    return tuple(dims), par


# --- allocation -----------------------------------------------------------
def ndarray(shape, dtype, buffer=None, name="", **kwargs):
    """A new tensor; on chip, uninitialised; in shared HBM, the same tensor
    for every instance of an SPMD grid."""
    # nkigraph places every tile itself: an explicit address= is accepted
    # and not used (a kernel that aliases two tiles on purpose differs).
    kwargs.pop("lazy_initialization", None)
    kwargs.pop("address", None)
    trace = _trace.active()
    space = _space(buffer)
    dims, par = _shape_and_par(shape)
    if space == "shared_hbm" and not trace.first_instance:
        # Grid instances after the first share instance 0's tensors.
        if trace.shared_index >= len(trace.shared):
            raise _errors.trace_error(
                "a grid instance allocates a shared_hbm tensor the first "
                "instance did not")
        t = trace.shared[trace.shared_index]
        trace.shared_index += 1
        return t
    t = trace.alloc(dims, dtype, space, name or None, par)
    if space == "shared_hbm":
        trace.shared.append(t)
    return t


def empty_like(a, dtype=None, buffer=None, name=""):
    return ndarray(a.shape, dtype or a.dtype, buffer, name)


def full(shape, fill_value, dtype, buffer=None, name="", **kwargs):
    t = ndarray(shape, dtype, buffer, name, **kwargs)
    if t._buf.space not in ("sbuf", "psum"):
        raise _errors.unsupported(
            "nl.zeros/ones/full in HBM",
            "fill an SBUF tile and store it, as a kernel on the device would")
    _ops.memset(t, fill_value)
    return t


def zeros(shape, dtype, buffer=None, name="", **kwargs):
    return full(shape, 0.0, dtype, buffer, name, **kwargs)


def ones(shape, dtype, buffer=None, name="", **kwargs):
    return full(shape, 1.0, dtype, buffer, name, **kwargs)


def zeros_like(a, dtype=None, buffer=None, name=""):
    return zeros(a.shape, dtype or a.dtype, buffer, name)


def ones_like(a, dtype=None, buffer=None, name=""):
    return ones(a.shape, dtype or a.dtype, buffer, name)


def full_like(a, fill_value, dtype=None, buffer=None, name=""):
    return full(a.shape, fill_value, dtype or a.dtype, buffer, name)


def shared_constant(constant, dtype=None, **kwargs):
    """A constant in HBM: a graph input the front-end feeds its value."""
    trace = _trace.active()
    value = np.asarray(constant)
    if dtype is None:
        dtype = value.dtype
    name = trace.unique_name("constant")
    trace.tracer.set_loc(*_trace.caller())
    id_ = trace.tracer.input(name, list(value.shape), dtype_name(dtype), True)
    buf = _Buffer(trace, id_, "shared_hbm", dtype, value.shape, name)
    trace.constants.append((name, value))
    return NkiTensor.whole(buf)


def shared_identity_matrix(n, dtype=np.uint8, **kwargs):
    return shared_constant(np.eye(n), dtype)


# --- the SPMD grid --------------------------------------------------------
def program_id(axis=0):
    trace = _trace.active()
    if not trace.grid:
        return 0
    return trace.program[axis]


def num_programs(axes=None):
    trace = _trace.active()
    grid = trace.grid or (1,)
    if axes is None:
        n = 1
        for g in grid:
            n *= g
        return n
    if isinstance(axes, numbers.Integral):
        return grid[axes] if axes < len(grid) else 1
    n = 1
    for a in axes:
        n *= grid[a]
    return n


def nc(n):
    """A launch-grid axis on `n` logical cores: kernel[nl.nc(2)](...)."""
    from ._kernel import nc as _nc
    return _nc(n)


def spmd_dim(*dims):
    """A launch-grid axis; with nl.nc(2) in it, spread over both cores."""
    if len(dims) == 1:
        return dims[0]
    raise _errors.unsupported("nl.spmd_dim of several dims",
                              "give the grid axes separately")


def program_ndim():
    return len(_trace.active().grid)


# --- loops and indices ----------------------------------------------------
def affine_range(start, stop=None, step=1, **kwargs):
    """Iterations with no carried dependency: unrolled at trace time."""
    if stop is None:
        start, stop = 0, start
    return builtins.range(start, stop, step)


sequential_range = affine_range
static_range = affine_range


def range(start, stop=None, step=1, **kwargs):  # noqa: A001 (NKI's name)
    return affine_range(start, stop, step)


def arange(start, stop=None, step=1):
    """An index variable: start, start + step, ... below stop."""
    if stop is None:
        start, stop = 0, start
    count = builtins.max(0, (stop - start + step - 1) // step)
    return IndexExpr(0, ((_Var(count, start, step), 1),))


class _Grid(tuple):
    """The index variables mgrid makes; also as .p and .x (and .y, .z)."""

    @property
    def p(self):
        return self[0]

    @property
    def x(self):
        return self[1]

    @property
    def y(self):
        return self[2]

    @property
    def z(self):
        return self[3]


class _MGrid:
    def __getitem__(self, key):
        if not isinstance(key, tuple):
            key = (key,)
        n = len(key)
        exprs = []
        for pos, k in enumerate(key):
            if not isinstance(k, slice):
                raise TypeError("nl.mgrid takes slices, e.g. mgrid[0:128, "
                                "0:512]")
            start = k.start or 0
            step = k.step or 1
            count = builtins.max(0, (k.stop - start + step - 1) // step)
            exprs.append(IndexExpr(0, ((_Var(count, start, step, pos, n),
                                        1),)))
        return _Grid(exprs)


mgrid = _MGrid()


def ds(start, size):
    """A dynamic slice: `size` indices from `start`."""
    return builtins.slice(start, start + size)


# --- data movement --------------------------------------------------------
def load(src, mask=None, dtype=None, **kwargs):
    """src (HBM) into a new SBUF tile, by DMA."""
    t = _trace.active().alloc(src.shape, dtype or src.dtype, "sbuf")
    _ops.dma(t, src, mask)
    return t


def store(dst, value, mask=None, **kwargs):
    """value (on chip) into dst (HBM), by DMA; a PSUM tile is first copied
    to SBUF, as the DMA cannot read PSUM."""
    if isinstance(value, NkiTensor) and value._buf.space == "psum":
        value = copy(value, mask=mask)
    elif not isinstance(value, NkiTensor):
        raise _errors.unsupported("nl.store of a Python value")
    _ops.dma(dst, value, mask)


def load_transpose2d(src, mask=None, dtype=None, **kwargs):
    """src [a, b] (HBM) into a new SBUF tile [b, a]: a DMA transpose for
    2-byte dtypes, else (and for a row or a column, whose elements keep
    their order) a strided DMA."""
    if src.ndim != 2:
        raise _errors.trace_error("load_transpose2d takes a 2-D tensor")
    rows, cols = src.shape
    t = _trace.active().alloc((cols, rows), dtype or src.dtype, "sbuf")
    if mask is not None:
        raise _errors.unsupported("load_transpose2d(mask=...)")
    if itemsize(src.dtype) == 2 and rows > 1 and cols > 1:
        _trace.active().emit("dma_transpose", (("dst", t), ("src", src)),
                             (("axes", [1, 0]),))
    else:
        transposed = NkiTensor(src._buf, src._offset,
                               (src._axes[1], src._axes[0]), None,
                               (src._dims[1], src._dims[0]), src._base)
        _ops.dma(t, transposed)
    return t


def copy(src, dtype=None, mask=None, **kwargs):
    """A copy of src in a new SBUF tile (tensor_copy)."""
    t = _trace.active().alloc(src.shape, dtype or src.dtype, "sbuf")
    _ops.copy(t, src, mask)
    return t


def assign(dst, value):
    """dst[...] = value: a copy (a tile) or a fill (a number)."""
    if dst.same_view(value):
        return  # t[k] += x already wrote the view in place
    if isinstance(value, NkiTensor):
        _ops.copy(dst, value)
    else:
        _ops.memset(dst, float(value))


# --- element-wise ops -----------------------------------------------------
def _same_tile(a, b):
    """The same partitions and free elements, laid out alike but for size-1
    axes ([P] and [P, 1], as a reduction without keepdims leaves it)."""
    return a.shape[0] == b.shape[0] and \
        tuple(c for c in a.shape[1:] if c != 1) == \
        tuple(c for c in b.shape[1:] if c != 1)


def _broadcast(a, b):
    """(a, b) with a one-partition [1, F] tile spread over the other's
    partitions."""
    if a.shape == b.shape:
        return a, b
    if len(a.shape) == len(b.shape) and a.shape[1:] == b.shape[1:]:
        if a.shape[0] == 1:
            return partition_broadcast(a, b.shape[0]), b
        if b.shape[0] == 1:
            return a, partition_broadcast(b, a.shape[0])
    raise _errors.trace_error(
        f"tiles of shapes {a.shape} and {b.shape} do not broadcast")


def partition_broadcast(t, partitions):
    """A one-partition tile copied to `partitions` partitions: engines read
    only their own partition, so the Tensor Engine does it (ones[1, P]^T @
    t[1, F] into PSUM, 512 columns at a time), then a copy to SBUF: exact,
    each output is 1.0 times one input."""
    trace = _trace.active()
    free = 1
    for c in t.shape[1:]:
        free *= c
    row = t.reshape((1, free)) if t.ndim != 2 else t
    ones = trace.alloc((1, partitions), t.dtype, "sbuf", "ones")
    _ops.memset(ones, 1.0)
    out = trace.alloc((partitions,) + tuple(t.shape[1:]), t.dtype, "sbuf")
    flat = out.reshape((partitions, free)) if out.ndim != 2 else out
    step = tile_size.gemm_moving_fmax
    for start in builtins.range(0, free, step):
        n = builtins.min(step, free - start)
        acc = trace.alloc((partitions, n), "float32", "psum")
        _ops.matmul(acc, ones, row[:, start:start + n], accumulate=False)
        _ops.copy(flat[:, start:start + n], acc)
    return out


_COMMUTATIVE = {"add", "multiply", "maximum", "minimum", "equal",
                "not_equal", "logical_and", "logical_or", "bitwise_and",
                "bitwise_or", "bitwise_xor"}


def binary(op, x, y, dtype=None, mask=None, dst=None):
    """x op y for tiles and numbers: tensor_tensor for two tiles, or
    tensor_scalar for a tile and a number or a [P, 1] column; into `dst`
    when given (t += x), else a new tile."""
    name = _ops.alu(op)
    xt, yt = isinstance(x, NkiTensor), isinstance(y, NkiTensor)
    if xt and yt:
        if x.shape != y.shape and not _same_tile(x, y):
            if _ops._is_column(y, x):
                return _ops.tensor_scalar(dst, x, name, y, dtype=dtype,
                                          mask=mask)
            if _ops._is_column(x, y):
                return _ops.tensor_scalar(dst, y, name, x,
                                          reverse0=name not in _COMMUTATIVE,
                                          dtype=dtype, mask=mask)
            x, y = _broadcast(x, y)
        return _ops.tensor_tensor(dst, x, y, name, dtype, mask)
    if xt and isinstance(y, numbers.Number):
        return _ops.tensor_scalar(dst, x, name, y, dtype=dtype, mask=mask)
    if yt and isinstance(x, numbers.Number):
        return _ops.tensor_scalar(dst, y, name, x,
                                  reverse0=name not in _COMMUTATIVE,
                                  dtype=dtype, mask=mask)
    raise _errors.unsupported(
        f"nl.{name} of {type(x).__name__} and {type(y).__name__}")


def _binary_op(name):
    def op(x, y, dtype=None, mask=None, **kwargs):
        return binary(name, x, y, dtype, mask)
    op.__name__ = name
    op.__doc__ = f"x {name} y, element-wise (nki.language.{name})."
    return op


add = _binary_op("add")
subtract = _binary_op("subtract")
multiply = _binary_op("multiply")
divide = _binary_op("divide")
maximum = _binary_op("maximum")
minimum = _binary_op("minimum")
power = _binary_op("power")
equal = _binary_op("equal")
not_equal = _binary_op("not_equal")
greater = _binary_op("greater")
greater_equal = _binary_op("greater_equal")
less = _binary_op("less")
less_equal = _binary_op("less_equal")
logical_and = _binary_op("logical_and")
logical_or = _binary_op("logical_or")
bitwise_and = _binary_op("bitwise_and")
bitwise_or = _binary_op("bitwise_or")
bitwise_xor = _binary_op("bitwise_xor")
mod = _binary_op("mod")
fmod = _binary_op("fmod")


def _activation(name):
    def op(x, dtype=None, mask=None, **kwargs):
        if not isinstance(x, NkiTensor):
            raise _errors.unsupported(f"nl.{name} of a Python value")
        return _ops.activation(None, name, x, dtype=dtype, mask=mask)
    op.__name__ = name
    op.__doc__ = (f"{name}(x), element-wise, as an activation on the Scalar "
                  f"Engine (nki.language.{name}).")
    return op


exp = _activation("exp")
log = _activation("log")
sqrt = _activation("sqrt")
rsqrt = _activation("rsqrt")
square = _activation("square")
abs = _activation("abs")  # noqa: A001 (NKI's name)
tanh = _activation("tanh")
sigmoid = _activation("sigmoid")
silu = _activation("silu")
gelu = _activation("gelu")
gelu_apprx_tanh = _activation("gelu_apprx_tanh")
relu = _activation("relu")
sin = _activation("sin")
arctan = _activation("arctan")
reciprocal = _activation("reciprocal")
sign = _activation("sign")
softplus = _activation("softplus")
mish = _activation("mish")
erf = _activation("erf")
gelu_dx = _activation("gelu_dx")
silu_dx = _activation("silu_dx")
erf_dx = _activation("erf_dx")


def negative(x, dtype=None, mask=None, **kwargs):
    return _ops.tensor_scalar(None, x, "multiply", -1.0, dtype=dtype,
                              mask=mask)


# --- reductions -----------------------------------------------------------
def _reduction(name, alu):
    def op(x, axis, dtype=None, mask=None, keepdims=False, **kwargs):
        return _ops.reduce(None, alu, x, axis, keepdims=keepdims,
                           dtype=dtype, mask=mask)
    op.__name__ = name
    op.__doc__ = (f"{name} along free axes `axis`, as a tensor_reduce on "
                  f"the Vector Engine (nki.language.{name}).")
    return op


sum = _reduction("sum", "add")  # noqa: A001 (NKI's name)
max = _reduction("max", "maximum")  # noqa: A001
min = _reduction("min", "minimum")  # noqa: A001
prod = _reduction("prod", "multiply")


def mean(x, axis, dtype=None, mask=None, keepdims=False, **kwargs):
    """The sum along `axis`, then times 1/n (tensor_scalar)."""
    n = _ops.reduce_axes(x, axis)
    count = 1
    for c in x.shape[x.ndim - n:]:
        count *= c
    total = _ops.reduce(None, "add", x, axis, keepdims=keepdims,
                        dtype=dtype or "float32", mask=mask)
    return _ops.tensor_scalar(None, total, "multiply", 1.0 / count,
                              dtype=dtype or x.dtype)


def loop_reduce(x, op, loop_indices, dtype=None, mask=None, **kwargs):
    """Reduces x across loop iterations into one tile per call site: the
    first iteration (every loop index 0) copies, later ones apply op."""
    trace = _trace.active()
    site = _trace.caller()
    if isinstance(loop_indices, numbers.Integral):
        loop_indices = (loop_indices,)
    first = all(int(i) == 0 for i in loop_indices)
    acc = trace.loop_reduce.get(site)
    if first or acc is None:
        acc = copy(x, dtype=dtype, mask=mask)
        trace.loop_reduce[site] = acc
        return acc
    _ops.tensor_tensor(acc, acc, x, _ops.alu(op), mask=mask)
    return acc


# --- matmul and transpose -------------------------------------------------
def transpose(x, dtype=None, mask=None, **kwargs):
    """x [P, F] transposed to [F, P] on the Tensor Engine, into PSUM."""
    from . import isa
    if mask is not None:
        raise _errors.unsupported("nl.transpose(mask=...)")
    return isa.nc_transpose(x, engine=isa.engine.tensor, dtype=dtype)


def matmul(x, y, transpose_x=False, mask=None, **kwargs):
    """x @ y (x.T @ y with transpose_x) into a new PSUM tile, float32: an
    nc_matmul, after a Tensor Engine transpose of x unless transpose_x."""
    from . import isa
    if mask is not None:
        raise _errors.unsupported("nl.matmul(mask=...)")
    if not transpose_x:
        xt = transpose(x)
        x = copy(xt, dtype=x.dtype)
    # nisa.nc_matmul's older form: recorded into its own tile when first
    # used, or into the PSUM tile `+=` accumulates it into.
    return isa.nc_matmul(x, y)


def where(condition, x, y, dtype=None, mask=None, **kwargs):
    """x where condition holds, else y (two instructions: a copy of y, then
    tensor_copy_predicated of x)."""
    return _ops.where(condition, x, y, dtype, mask)


class NKIObject:
    """A base for kernels' own helper classes (plain Python objects here)."""


def device_print(*args, **kwargs):
    """Accepted and ignored: nkigraph's run --dump shows every value."""


def __getattr__(name):
    if name.startswith("__"):
        raise AttributeError(name)
    raise _errors.unsupported(f"nki.language.{name}")


