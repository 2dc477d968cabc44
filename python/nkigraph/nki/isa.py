"""nki.isa: one nkigraph instruction per call.

Both of NKI's calling forms are taken: the older one returns a new tile
(`t = nisa.tensor_tensor(a, b, op=nl.add)`), the newer one writes an
explicit destination first (`nisa.tensor_tensor(dst=t, data1=a, data2=b,
op=nl.add)`). `mask=` narrows the instruction to the rows it selects.
"""

import enum

from . import _errors, _ops
from . import _trace
from ._tensor import NkiTensor


class engine(enum.Enum):
    """The engine an instruction runs on (nki.isa.engine)."""

    unknown = 0
    tensor = 1
    vector = 2
    scalar = 3
    gpsimd = 4
    activation = 3  # NKI's other name for the scalar engine
    pool = 4  # and for gpsimd
    sync = 5


_ENGINE_NAMES = {1: "tensor", 2: "vector", 3: "scalar", 4: "gpsimd"}
# The engine names NKI also gives at module level.
tensor_engine = engine.tensor
vector_engine = engine.vector
scalar_engine = engine.scalar
gpsimd_engine = engine.gpsimd


class reduce_cmd(enum.Enum):
    """What an activation does with the accumulation registers."""

    idle = 0
    reset = 1
    reduce = 2
    reset_reduce = 3


class nc_version(enum.IntEnum):
    """NeuronCore generations (nki.isa.nc_version)."""

    gen2 = 2
    gen3 = 3
    gen4 = 4


class dge_mode(enum.Enum):
    unknown = 0
    swdge = 1
    hwdge = 2
    none = 3


class oob_mode(enum.Enum):
    error = 0
    skip = 1


class matmul_perf_mode(enum.Enum):
    none = 0
    double_row = 1


def get_nc_version():
    """The NeuronCore generation nkigraph models: trn2's NeuronCore-v3."""
    return nc_version.gen3


def _engine_name(value, default):
    if value is None or value == engine.unknown:
        return default
    if isinstance(value, engine):
        return _ENGINE_NAMES.get(value.value, default)
    return str(value)


# ---------------------------------------------------------------------------
# Argument forms.

def _split_dst(args, kwargs, n_leading):
    """(dst, args): the newer form's explicit destination, given by name
    or as an extra leading tensor (the older form starts with `n_leading`
    tensors; the newer puts dst before them)."""
    if "dst" in kwargs:
        return kwargs.pop("dst"), args
    if len(args) > n_leading and isinstance(args[n_leading], NkiTensor) \
            and isinstance(args[0], NkiTensor):
        return args[0], args[1:]
    return None, args


def _bind(name, args, kwargs, params):
    """`params` ((name, default), ...) bound from args and kwargs, as a
    dict; a missing required one, or a keyword the call does not take,
    is a TypeError naming it. (Bound by a function made once per call
    form with those parameters: Python's own binding, as fast as a
    call.)"""
    # `params` is a constant of the calling code (every default a literal,
    # `...` for a required one), so the same object at every call; the
    # binder's errors name the call, so one is kept per name and tuple.
    key = (name, id(params))
    binder = _BINDERS.get(key)
    if binder is None or binder[1] is not params:
        binder = _BINDERS[key] = (_make_binder(name, params), params)
    return binder[0](*args, **kwargs)


_BINDERS = {}


def _make_binder(name, params):
    names = [p for p, _ in params]
    defaults = {f"_d{i}": d for i, (_, d) in enumerate(params)}
    signature = ", ".join(f"{p}=_d{i}" for i, p in enumerate(names))
    ignored = ", ".join(f"{k}=None" for k in sorted(_IGNORED) if k not in
                        names)
    checks = "".join(
        f"    if {p} is ...: raise TypeError("
        f"\"nisa.{name} needs '{p}'\")\n"
        for p, d in params if d is ...)
    body = ", ".join(f"{p!r}: {p}" for p in names)
    source = (f"def bind({signature}, *, {ignored}):\n{checks}"
              f"    return {{{body}}}\n")
    scope = dict(defaults)
    exec(source, scope)  # noqa: S102 (source built from constant names)
    bind = scope["bind"]
    bind.__name__ = bind.__qualname__ = f"nisa.{name}"
    return bind


# Arguments that change how the hardware schedules or names an
# instruction, not what it computes.
_IGNORED = frozenset(("name", "dge_mode", "oob_mode", "tile_position",
                      "tile_size", "perf_mode", "is_stationary_onezero",
                      "is_moving_onezero"))


# A parameter without a default is `...` in a call form's parameter table,
# which is then a constant Python builds once (no NKI argument is `...`).


# ---------------------------------------------------------------------------
# Instructions.

def nc_matmul(*args, **kwargs):
    """dst = stationary.T @ moving on the Tensor Engine, into PSUM."""
    dst, args = _split_dst(args, kwargs, 2)
    a = _bind("nc_matmul", args, kwargs, (
        ("stationary", ...), ("moving", ...),
        ("is_transpose", False), ("accumulate", None), ("mask", None)))
    st, mv = a["stationary"], a["moving"]
    if a["mask"] is not None:
        raise _errors.unsupported("nc_matmul(mask=...)",
                                  "slice the operands instead")
    if a["is_transpose"]:
        # The Tensor Engine's transpose: moving through an identity, which
        # is nc_transpose on the tensor engine.
        out = dst if dst is not None else _trace.active().alloc(
            (mv.shape[-1], mv.shape[0]), mv.dtype, "psum")
        _trace.active().emit("nc_transpose", (("dst", out), ("data", mv)),
                             (("engine", "tensor"),))
        return out
    shape = (st.shape[-1], mv.shape[-1])
    if dst is None and a["accumulate"] is None:
        # The older form: recorded when the tile is first used, or into
        # the PSUM tile that `+=` accumulates it into.
        trace = _trace.active()
        if trace.pending is not None:
            trace.flush()
        out = trace.alloc(shape, "float32", "psum")
        trace.pending = (out, st, mv, _trace.caller())
        return out
    out, view = _ops.result(dst, None, shape, "float32", "psum")
    _ops.matmul(view, st, mv, a["accumulate"])
    return out


def nc_transpose(*args, **kwargs):
    """dst = data.T: on the Tensor Engine (into PSUM) or, for up to 32x32,
    the Vector Engine."""
    dst, args = _split_dst(args, kwargs, 1)
    a = _bind("nc_transpose", args, kwargs, (
        ("data", ...), ("engine", None), ("dtype", None),
        ("mask", None)))
    data = a["data"]
    eng = _engine_name(a["engine"], "tensor")
    if dst is None:
        buffer = "psum" if eng == "tensor" else "sbuf"
        # The instruction moves the bits: dst has data's dtype.
        dtype = a["dtype"] or data.dtype
        dst = _trace.active().alloc((data.shape[-1], data.shape[0]), dtype,
                                    buffer)
    _trace.active().emit("nc_transpose", (("dst", dst), ("data", data)),
                         (("engine", eng),))
    return dst


def activation(*args, **kwargs):
    """dst = op(data * scale + bias) on the Scalar Engine."""
    dst, args = _split_dst(args, kwargs, 0)
    a = _bind("activation", args, kwargs, (
        ("op", ...), ("data", ...), ("bias", None),
        ("scale", 1.0), ("reduce_op", None), ("reduce_res", None),
        ("reduce_cmd", None), ("dtype", None), ("mask", None)))
    return _ops.activation(dst, a["op"], a["data"], a["bias"], a["scale"],
                           a["reduce_op"], a["reduce_res"], a["reduce_cmd"],
                           a["dtype"], a["mask"])


def activation_reduce(*args, **kwargs):
    """activation, and its result summed along the free axis into
    reduce_res."""
    dst, args = _split_dst(args, kwargs, 0)
    a = _bind("activation_reduce", args, kwargs, (
        ("op", ...), ("data", ...), ("reduce_op", ...),
        ("reduce_res", ...), ("bias", None), ("scale", 1.0),
        ("dtype", None), ("mask", None)))
    return _ops.activation(dst, a["op"], a["data"], a["bias"], a["scale"],
                           a["reduce_op"], a["reduce_res"],
                           reduce_cmd.reset_reduce, a["dtype"], a["mask"])


def tensor_tensor(*args, **kwargs):
    """dst = data1 op data2, element-wise."""
    dst, args = _split_dst(args, kwargs, 2)
    a = _bind("tensor_tensor", args, kwargs, (
        ("data1", ...), ("data2", ...), ("op", ...),
        ("engine", None), ("dtype", None), ("mask", None)))
    return _ops.tensor_tensor(dst, a["data1"], a["data2"], a["op"],
                              a["dtype"], a["mask"],
                              _engine_name(a["engine"], None))


def tensor_scalar(*args, **kwargs):
    """dst = (data op0 operand0) op1 operand1, each operand a number or a
    [P, 1] column."""
    dst, args = _split_dst(args, kwargs, 1)
    a = _bind("tensor_scalar", args, kwargs, (
        ("data", ...), ("op0", ...), ("operand0", ...),
        ("reverse0", False), ("op1", None), ("operand1", None),
        ("reverse1", False), ("engine", None), ("dtype", None),
        ("mask", None)))
    return _ops.tensor_scalar(dst, a["data"], a["op0"], a["operand0"],
                              a["reverse0"], a["op1"], a["operand1"],
                              a["reverse1"], a["dtype"], a["mask"],
                              _engine_name(a["engine"], None))


def scalar_tensor_tensor(*args, **kwargs):
    """dst = (data op0 operand0) op1 operand1, operand0 a number or a
    [P, 1] column, operand1 a tile."""
    dst, args = _split_dst(args, kwargs, 1)
    a = _bind("scalar_tensor_tensor", args, kwargs, (
        ("data", ...), ("op0", ...), ("operand0", ...),
        ("op1", ...), ("operand1", ...), ("reverse0", False),
        ("reverse1", False), ("dtype", None), ("mask", None)))
    data = a["data"]
    out, view = _ops.result(dst, a["mask"], data.shape,
                        a["dtype"] or data.dtype)
    operand0 = a["operand0"]
    attrs = [("op0", _ops.alu(a["op0"])), ("op1", _ops.alu(a["op1"])),
             ("reverse0", int(bool(a["reverse0"]))),
             ("reverse1", int(bool(a["reverse1"])))]
    column = None
    if isinstance(operand0, NkiTensor):
        column = _ops.masked(operand0, a["mask"])
    else:
        attrs.append(("scalar0", float(operand0)))
    _trace.active().emit("scalar_tensor_tensor", (
        ("dst", view), ("data", _ops.masked(data, a["mask"])),
        ("operand0", column),
        ("operand1", _ops.masked(a["operand1"], a["mask"]))), attrs)
    return out


def tensor_reduce(*args, **kwargs):
    """dst = op over the trailing free axes `axis` of data."""
    dst, args = _split_dst(args, kwargs, 0)
    a = _bind("tensor_reduce", args, kwargs, (
        ("op", ...), ("data", ...), ("axis", ...),
        ("negate", False), ("keepdims", False), ("dtype", None),
        ("mask", None)))
    return _ops.reduce(dst, a["op"], a["data"], a["axis"], a["negate"],
                       a["keepdims"], a["dtype"], a["mask"])


def tensor_copy(*args, **kwargs):
    """dst = src (converted to dst's dtype)."""
    dst, args = _split_dst(args, kwargs, 1)
    a = _bind("tensor_copy", args, kwargs, (
        ("src", ...), ("engine", None), ("dtype", None),
        ("mask", None)))
    src = a["src"]
    out = dst if dst is not None else _ops.new_tile(src.shape,
                                                     a["dtype"] or src.dtype)
    _ops.copy(out, src, a["mask"], _engine_name(a["engine"], "vector"))
    return out


def memset(*args, **kwargs):
    """A tile of `value` (older form: a new tile of `shape`)."""
    dst, args = _split_dst(args, kwargs, 0)
    if dst is None and args and isinstance(args[0], NkiTensor):
        dst, args = args[0], args[1:]
    if dst is not None:
        a = _bind("memset", args, kwargs, (
            ("value", ...), ("engine", None),
            ("mask", None)))
        shape, dtype = dst.shape, dst.dtype
    else:
        a = _bind("memset", args, kwargs, (
            ("shape", ...), ("value", ...), ("dtype", ...),
            ("engine", None), ("mask", None)))
        shape, dtype = a["shape"], a["dtype"]
    out = dst if dst is not None else _ops.new_tile(shape, dtype)
    _ops.memset(out, a["value"], _engine_name(a["engine"], "vector"),
                a["mask"])
    return out


def iota(*args, **kwargs):
    """A tile whose elements are the values of an index expression."""
    dst, args = _split_dst(args, kwargs, 0)
    if dst is None and args and isinstance(args[0], NkiTensor):
        dst, args = args[0], args[1:]
    a = _bind("iota", args, kwargs, (
        ("expr", ...), ("dtype", "int32"), ("mask", None)))
    return _ops.iota(dst, a["expr"], a["dtype"], a["mask"])


def affine_select(*args, **kwargs):
    """on_true where an affine predicate of the indices holds, else
    on_false_value."""
    dst, args = _split_dst(args, kwargs, 0)
    a = _bind("affine_select", args, kwargs, (
        ("pred", ...), ("on_true_tile", ...),
        ("on_false_value", ...), ("dtype", None), ("mask", None)))
    return _ops.affine_select(dst, a["pred"], a["on_true_tile"],
                              a["on_false_value"], a["dtype"], a["mask"])


def dma_copy(*args, **kwargs):
    """dst = src by DMA (HBM <-> SBUF, or within either)."""
    a = _bind("dma_copy", args, kwargs, (
        ("dst", ...), ("src", ...), ("mask", None),
        ("dst_rmw_op", None)))
    if a["dst_rmw_op"] is not None:
        raise _errors.unsupported("dma_copy(dst_rmw_op=...)")
    _ops.dma(a["dst"], a["src"], a["mask"])


def dma_transpose(*args, **kwargs):
    """dst = src transposed (2-byte dtypes), by DMA into SBUF."""
    dst, args = _split_dst(args, kwargs, 1)
    a = _bind("dma_transpose", args, kwargs, (
        ("src", ...), ("axes", None), ("dtype", None),
        ("mask", None)))
    src = a["src"]
    axes = a["axes"] or tuple(reversed(range(src.ndim)))
    shape = tuple(src.shape[i] for i in axes)
    out, view = _ops.result(dst, a["mask"], shape, a["dtype"] or src.dtype)
    _trace.active().emit("dma_transpose", (("dst", view), ("src", src)),
                         (("axes", list(axes)),))
    return out


def reciprocal(*args, **kwargs):
    """dst = 1 / data on the Vector Engine (a tensor_scalar: 1.0 divided
    by each element)."""
    dst, args = _split_dst(args, kwargs, 1)
    a = _bind("reciprocal", args, kwargs, (
        ("data", ...), ("dtype", None), ("mask", None)))
    return _ops.tensor_scalar(dst, a["data"], "divide", 1.0, reverse0=True,
                              dtype=a["dtype"], mask=a["mask"])


def tensor_tensor_scan(*args, **kwargs):
    """dst[i] = (data0[i] op0 r) op1 data1[i], r the previous result (at
    first `initial`, a number or a [P, 1] column), along the free dim."""
    dst, args = _split_dst(args, kwargs, 2)
    a = _bind("tensor_tensor_scan", args, kwargs, (
        ("data0", ...), ("data1", ...), ("initial", ...),
        ("op0", ...), ("op1", ...), ("reverse0", False),
        ("reverse1", False), ("dtype", None), ("mask", None)))
    data0, mask = a["data0"], a["mask"]
    out, view = _ops.result(dst, mask, data0.shape, a["dtype"] or data0.dtype)
    attrs = [("op0", _ops.alu(a["op0"])), ("op1", _ops.alu(a["op1"])),
             ("reverse0", int(bool(a["reverse0"]))),
             ("reverse1", int(bool(a["reverse1"])))]
    initial = a["initial"]
    column = None
    if isinstance(initial, NkiTensor):
        column = _ops.masked(initial, mask)
    else:
        attrs.append(("initial", float(initial)))
    _trace.active().emit("tensor_tensor_scan", (
        ("dst", view), ("data0", _ops.masked(data0, mask)),
        ("data1", _ops.masked(a["data1"], mask)), ("initial", column)),
        attrs)
    return out


def tensor_scalar_reduce(*args, **kwargs):
    """dst = data op0 operand0, and reduce_res = reduce_op over dst's free
    axis (before dst's rounding)."""
    dst, args = _split_dst(args, kwargs, 1)
    a = _bind("tensor_scalar_reduce", args, kwargs, (
        ("data", ...), ("op0", ...), ("operand0", ...),
        ("reduce_op", ...), ("reduce_res", ...),
        ("reverse0", False), ("dtype", None), ("mask", None)))
    data, mask = a["data"], a["mask"]
    out, view = _ops.result(dst, mask, data.shape, a["dtype"] or data.dtype)
    attrs = [("op0", _ops.alu(a["op0"])), ("reduce_op",
                                           _ops.alu(a["reduce_op"])),
             ("reverse0", int(bool(a["reverse0"])))]
    operand0 = a["operand0"]
    column = None
    if isinstance(operand0, NkiTensor):
        column = _ops.masked(operand0, mask)
    else:
        attrs.append(("scalar0", float(operand0)))
    _trace.active().emit("tensor_scalar_reduce", (
        ("dst", view), ("data", _ops.masked(data, mask)),
        ("operand0", column),
        ("reduce_res", _ops.masked(a["reduce_res"], mask))), attrs)
    return out


# The parameters of bn_stats and bn_aggr alike.
_PER_PARTITION_PARAMS = (("data", ...), ("dtype", None), ("mask", None))


def _per_partition(opcode, width, args, kwargs):
    """`opcode` of data: `width` float32 values per partition ([P, width],
    unless a dtype is asked for), in either of NKI's calling forms."""
    dst, args = _split_dst(args, kwargs, 1)
    a = _bind(opcode, args, kwargs, _PER_PARTITION_PARAMS)
    data = a["data"]
    out, view = _ops.result(dst, a["mask"], (data.shape[0], width),
                            a["dtype"] or "float32")
    _trace.active().emit(opcode, (
        ("dst", view), ("data", _ops.masked(data, a["mask"]))))
    return out


def bn_stats(*args, **kwargs):
    """Per partition: count, mean and variance x count of the even and of
    the odd free elements ([P, 6]), for bn_aggr."""
    return _per_partition("bn_stats", 6, args, kwargs)


def bn_aggr(*args, **kwargs):
    """Per partition: the mean and variance ([P, 2]) of bn_stats groups."""
    return _per_partition("bn_aggr", 2, args, kwargs)


def tensor_copy_predicated(*args, **kwargs):
    """dst = src where predicate is true (not all-zero bits), else dst."""
    a = _bind("tensor_copy_predicated", args, kwargs, (
        ("dst", ...), ("src", ...), ("predicate", ...),
        ("reverse_pred", False), ("mask", None)))
    _ops.copy_predicated(a["dst"], a["src"], a["predicate"],
                         a["reverse_pred"], a["mask"])


def __getattr__(name):
    if name.startswith("__"):
        raise AttributeError(name)
    raise _errors.unsupported(f"nki.isa.{name}")
