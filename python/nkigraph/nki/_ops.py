"""The lowering both nki.isa and nki.language share: NKI's operator and
activation names to nkigraph's, masks to narrowed views, and one
function per instruction family that records it."""

import numbers

from . import _errors, _trace
from ._buffer import element_count
from ._dtypes import dtype_name, promote
from ._index import IndexExpr, Predicate
from ._tensor import NkiTensor

# NKI / numpy operator names (a function's __name__, or a string) to
# nkigraph's ALU operation names.
_ALU = {
    "add": "add", "subtract": "subtract", "multiply": "multiply",
    "divide": "divide", "true_divide": "divide", "maximum": "maximum",
    "max": "maximum", "amax": "maximum", "minimum": "minimum",
    "min": "minimum", "amin": "minimum", "power": "power", "equal": "equal",
    "not_equal": "not_equal", "greater": "greater",
    "greater_equal": "greater_equal", "less": "less",
    "less_equal": "less_equal", "mod": "mod", "remainder": "mod",
    "fmod": "mod", "abs_max": "abs_max", "bypass": "bypass",
    "logical_and": "logical_and", "logical_or": "logical_or",
    "bitwise_and": "bitwise_and", "bitwise_or": "bitwise_or",
    "bitwise_xor": "bitwise_xor", "sum": "add",
}

# Activation functions (nkigraph's names).
_ACT = {
    "exp": "exp", "exponential": "exp", "log": "log", "sqrt": "sqrt",
    "rsqrt": "rsqrt", "square": "square", "abs": "abs", "absolute": "abs",
    "tanh": "tanh", "sigmoid": "sigmoid", "silu": "silu", "gelu": "gelu",
    "relu": "relu", "copy": "copy", "identity": "copy", "sin": "sin",
    "arctan": "arctan", "reciprocal": "reciprocal", "sign": "sign",
    "softplus": "softplus", "mish": "mish", "erf": "erf",
    "gelu_apprx_tanh": "gelu_apprx_tanh", "gelu_dx": "gelu_dx",
    "silu_dx": "silu_dx", "erf_dx": "erf_dx",
    "gelu_apprx_sigmoid": "gelu_apprx_sigmoid",
}


def _name_of(op):
    if isinstance(op, str):
        return op
    name = getattr(op, "__name__", None)
    if name is None:
        raise TypeError(f"not an operator: {op!r}")
    return name


_ALU_BY_OP = {}  # alu's answers, by the operator object


def alu(op):
    """nkigraph's ALU name for an NKI / numpy operator."""
    try:
        return _ALU_BY_OP[op]
    except (KeyError, TypeError):
        pass
    name = _ALU.get(_name_of(op))
    if name is not None:
        try:
            _ALU_BY_OP[op] = name
        except TypeError:
            pass
        return name
    raise _errors.unsupported(f"operator {_name_of(op)}")


def act(op):
    """nkigraph's activation function name for an NKI / numpy function."""
    name = _name_of(op)
    if name not in _ACT:
        raise _errors.unsupported(f"activation function {name}")
    return _ACT[name]


def masked(t, mask):
    """`t` narrowed to the rows `mask` selects (its axes are the
    instruction's iteration axes)."""
    if mask is None or not isinstance(t, NkiTensor):
        return t
    if not isinstance(mask, Predicate):
        raise TypeError("mask= takes a predicate on index expressions, "
                        "e.g. (i * 128 + i_p < n)")
    try:
        ranges = mask.ranges()
    except ValueError as e:
        raise _errors.trace_error(str(e)) from None
    return t._restrict(ranges)


def new_tile(shape, dtype, buffer="sbuf"):
    return _trace.active().alloc(shape, dtype, buffer)


def result(dst, mask, shape, dtype, buffer="sbuf"):
    """(the tile to return, the view to write): `dst` or a new tile, and
    the part of it `mask` selects."""
    if dst is None:
        dst = new_tile(shape, dtype, buffer)
    return dst, masked(dst, mask)


def _is_column(t, data):
    """A [P, 1] tile against a [P, F...] one: a per-partition scalar."""
    s = t.shape
    return len(s) >= 1 and s[0] == data.shape[0] and \
        all(c == 1 for c in s[1:]) and _free(data) != 1


def _free(t):
    return element_count(t.shape[1:])


# ---------------------------------------------------------------------------

def matmul(dst, stationary, moving, accumulate=None, where=None):
    """nc_matmul into the PSUM view `dst`. accumulate None: onto PSUM a
    matmul wrote before (or something other than a zero memset), add;
    onto fresh PSUM, overwrite."""
    trace = _trace.active()
    bid = dst._buf.id
    key = (dst._offset, dst._pattern())
    written = trace.matmul_written.get(bid)
    if written is None:
        written = trace.matmul_written[bid] = set()
    if accumulate is None:
        accumulate = key in written or bid in trace.psum_initialised
    written.add(key)
    trace.emit("nc_matmul", (("dst", dst), ("stationary", stationary),
                             ("moving", moving)),
               (("accumulate", int(bool(accumulate))),), where)


def psum_written(dst, opcode, value=None):
    """Keeps the matmul accumulation rule's state after a non-matmul write
    into PSUM: a zero memset leaves it fresh, anything else initialised."""
    if dst._buf.space != "psum":
        return
    trace = _trace.active()
    bid = dst._buf.id
    trace.matmul_written.pop(bid, None)
    if opcode == "memset" and value == 0:
        trace.psum_initialised.discard(bid)
    else:
        trace.psum_initialised.add(bid)


def activation(dst, op, data, bias=None, scale=1.0, reduce_op=None,
               reduce_res=None, reduce_cmd=None, dtype=None, mask=None):
    from .isa import reduce_cmd as cmds
    out, view = result(dst, mask, data.shape, dtype or data.dtype)
    attrs = [("func", act(op))]
    bias_t = scale_t = None
    if isinstance(bias, NkiTensor):
        bias_t = masked(bias, mask)
    elif bias is not None:
        attrs.append(("bias", float(bias)))
    if isinstance(scale, NkiTensor):
        scale_t = masked(scale, mask)
    else:
        attrs.append(("scale", float(scale)))
    if reduce_res is not None:
        if reduce_op is not None and alu(reduce_op) != "add":
            raise _errors.unsupported(
                f"activation reduce_op {_name_of(reduce_op)}",
                "the Scalar Engine's accumulation adds")
        if reduce_cmd in (None, cmds.idle):
            reduce_cmd = cmds.reset_reduce
    cmd = reduce_cmd.name if reduce_cmd is not None else "idle"
    attrs.append(("reduce_cmd", cmd))
    _trace.active().emit("activation", (
        ("dst", view), ("data", masked(data, mask)), ("bias", bias_t),
        ("scale", scale_t), ("reduce_res", reduce_res)), attrs)
    psum_written(view, "activation")
    return out


def tensor_tensor(dst, a, b, op, dtype=None, mask=None, engine=None):
    del engine  # nkigraph's tensor_tensor runs on the Vector Engine
    if dst is None:
        dst = new_tile(a.shape, dtype or promote(dtype_name(a.dtype),
                                                 dtype_name(b.dtype)))
    view = dst
    if mask is not None:
        view, a, b = masked(dst, mask), masked(a, mask), masked(b, mask)
    _trace.active().emit("tensor_tensor", (
        ("dst", view), ("data1", a), ("data2", b)), (("op", alu(op)),))
    if view._buf.space == "psum":
        psum_written(view, "tensor_tensor")
    return dst


def tensor_scalar(dst, data, op0, operand0, reverse0=False, op1=None,
                  operand1=None, reverse1=False, dtype=None, mask=None,
                  engine=None):
    del engine
    out, view = result(dst, mask, data.shape, dtype or data.dtype)
    attrs = [("op0", alu(op0)), ("reverse0", int(bool(reverse0)))]
    col0 = col1 = None
    if isinstance(operand0, NkiTensor):
        col0 = masked(operand0, mask)
    else:
        attrs.append(("scalar0", float(operand0)))
    if op1 is not None:
        attrs += [("op1", alu(op1)), ("reverse1", int(bool(reverse1)))]
        if isinstance(operand1, NkiTensor):
            col1 = masked(operand1, mask)
        else:
            attrs.append(("scalar1", float(operand1)))
    _trace.active().emit("tensor_scalar", (
        ("dst", view), ("data", masked(data, mask)), ("operand0", col0),
        ("operand1", col1)), attrs)
    psum_written(view, "tensor_scalar")
    return out


def reduce_axes(data, axis):
    """The trailing free axes `axis` names, as a count; an error otherwise
    (the ISA reduces the innermost free dims only)."""
    if isinstance(axis, numbers.Integral):
        axis = (int(axis),)
    axes = sorted(a % data.ndim for a in axis)
    if 0 in axes:
        raise _errors.trace_error(
            "reducing along the partition dim (axis 0) is not an "
            "instruction: transpose or matmul with ones instead")
    if axes != list(range(data.ndim - len(axes), data.ndim)):
        raise _errors.trace_error(
            f"axis {tuple(axes)} of a {data.ndim}-axis tile: the reduced "
            "axes must be the last ones")
    return len(axes)


def reduce(dst, op, data, axis, negate=False, keepdims=False, dtype=None,
           mask=None):
    n = reduce_axes(data, axis)
    kept = data.shape[:data.ndim - n]
    shape = kept + (1,) * n if keepdims else kept
    out, view = result(dst, mask, shape, dtype or data.dtype)
    _trace.active().emit("tensor_reduce", (
        ("dst", view), ("data", masked(data, mask))),
        (("op", alu(op)), ("num_axes", n), ("negate", int(bool(negate)))))
    psum_written(view, "tensor_reduce")
    return out


def _affine(expr):
    """(offset, channel_multiplier, pattern, shape) of an index
    expression: the partition variable's step per partition, the others'
    [step, count] in axis order."""
    if isinstance(expr, numbers.Integral):
        expr = IndexExpr(int(expr))
    offset = expr.const
    channel = 0
    partitions = 1
    free = {}
    ndim = 1
    for var, coef in expr.terms:
        offset += coef * var.start
        pos = var.pos if var.pos is not None else 1
        ndim = max(ndim, var.ndim, pos + 1)
        if pos == 0:
            channel += coef * var.step
            partitions = var.count
        else:
            if pos in free:
                raise _errors.unsupported(
                    "two index variables on one axis of an iota/affine "
                    "expression")
            free[pos] = (coef * var.step, var.count)
    pattern = []
    shape = [partitions]
    for p in range(1, ndim):
        step, count = free.get(p, (0, 1))
        pattern += [step, count]
        shape.append(count)
    if not pattern:
        pattern = [0, 1]
        shape.append(1)
    return offset, channel, pattern, tuple(shape)


def iota(dst, expr, dtype="int32", mask=None):
    offset, channel, pattern, shape = _affine(expr)
    out, view = result(dst, mask, shape, dtype)
    _trace.active().emit("iota", (("dst", view),), (
        ("pattern", pattern), ("offset", offset),
        ("channel_multiplier", channel)))
    return out


# cmp_op(affine, 0) for each predicate comparison of expr with 0.
_CMP = {"<": "less", "<=": "less_equal", ">": "greater",
        ">=": "greater_equal"}


def affine_select(dst, pred, on_true, on_false_value, dtype=None,
                  mask=None):
    if not isinstance(pred, Predicate) or len(pred.clauses) != 1:
        raise _errors.unsupported(
            "affine_select with a predicate other than one comparison of "
            "an affine index expression")
    expr, op = pred.clauses[0]
    offset, channel, pattern, _ = _affine(expr)
    out, view = result(dst, mask, on_true.shape, dtype or on_true.dtype)
    if len(pattern) // 2 != max(1, len(on_true.shape) - 1):
        # The predicate spans fewer axes than the tile: broadcast over
        # the rest (step 0).
        want = max(1, len(on_true.shape) - 1)
        pattern = pattern + [0, 1] * (want - len(pattern) // 2)
        pattern = [v if i % 2 == 0 else on_true.shape[1 + i // 2]
                   for i, v in enumerate(pattern)]
    _trace.active().emit("affine_select", (
        ("dst", view), ("on_true", masked(on_true, mask))), (
        ("pattern", pattern), ("offset", offset),
        ("channel_multiplier", channel),
        ("on_false_value", float(on_false_value)), ("cmp_op", _CMP[op])))
    return out


def dma(dst, src, mask=None):
    _trace.active().emit("dma_copy", (("dst", masked(dst, mask)),
                                      ("src", masked(src, mask))))


def copy(dst, src, mask=None, engine="vector"):
    """dst = src (converted to dst's dtype), a tensor_copy."""
    view = masked(dst, mask)
    _trace.active().emit("tensor_copy", (("dst", view),
                                         ("src", masked(src, mask))),
                         (("engine", engine),))
    psum_written(view, "tensor_copy")


def memset(dst, value, engine="vector", mask=None):
    view = masked(dst, mask)
    _trace.active().emit("memset", (("dst", view),), (
        ("value", float(value)), ("engine", engine)))
    psum_written(view, "memset", value)


def copy_predicated(dst, src, predicate, reverse=False, mask=None):
    """dst = src (a tile or a number) where predicate holds."""
    attrs = [("reverse_pred", int(bool(reverse)))]
    src_t = None
    if isinstance(src, NkiTensor):
        src_t = masked(src, mask)
    else:
        attrs.append(("src", float(src)))
    _trace.active().emit("tensor_copy_predicated", (
        ("dst", masked(dst, mask)), ("src", src_t),
        ("predicate", masked(predicate, mask))), attrs)


_PREDICATE_DTYPES = ("uint8", "uint16", "uint32")


def where(condition, x, y, dtype=None, mask=None):
    """x where condition, else y: y copied (or filled), then x copied over
    it where the condition's bits are set (tensor_copy_predicated); a
    condition that is not an unsigned-integer tile is first made one
    (condition != 0, as uint8)."""
    like = x if isinstance(x, NkiTensor) else y
    if not isinstance(condition, NkiTensor) or not isinstance(like,
                                                               NkiTensor):
        raise _errors.unsupported("nl.where of Python values")
    out = new_tile(condition.shape, dtype or like.dtype)
    if dtype_name(condition.dtype) not in _PREDICATE_DTYPES:
        condition = tensor_scalar(None, condition, "not_equal", 0.0,
                                  dtype="uint8", mask=mask)
    if isinstance(y, NkiTensor):
        copy(out, y, mask)
    else:
        memset(out, y, mask=mask)
    copy_predicated(out, x, condition, False, mask)
    return out
