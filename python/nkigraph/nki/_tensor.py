"""NKI tensors and tiles as views of traced tensors.

A `NkiTensor` is a view of a traced tensor (`_Buffer`): an element offset
and one (stride, count) pair per axis, in elements of the tensor's
row-major layout, as an instruction operand's pattern is. On-chip views
also say which axis walks the partitions (`_par`); an operand puts it
first, as the ISA wants. Indexing only makes a new view, as in NKI.

Each view also knows, per axis, which dim of the tensor it walks and by
how many indices a step, and the index it starts at in every dim, so an
access is bounds-checked dim by dim (a column index past the row's end is
out of bounds even though the element exists) once a mask has narrowed
it: at the instruction, not at the indexing.
"""

import numpy as np

from . import _errors
from ._dtypes import dtype_name
from ._index import IndexExpr

ON_CHIP = ("sbuf", "psum")
# A whole view's (axes, dims, base) by the tensor's shape: tiles of a few
# shapes are allocated over and over.
_WHOLE = {}
_STRIDES = {}  # row-major strides by shape


class _Buffer:
    """A traced tensor: its id, memory space, dtype and physical shape.
    An on-chip buffer is freed when its last view goes (Python's
    reference count is the tile's lifetime, as NKI's allocator infers it
    from the kernel's scopes)."""

    __slots__ = ("id", "space", "dtype", "shape", "strides", "name", "trace")

    def __init__(self, trace, id_, space, dtype, shape, name):
        self.trace = trace
        self.id = id_
        self.space = space
        self.dtype = dtype
        self.shape = shape = tuple(shape)
        strides = _STRIDES.get(shape)
        if strides is None:
            strides = _STRIDES[shape] = _row_major(shape)
        self.strides = strides
        self.name = name

    def __del__(self):
        trace = self.trace
        if trace is not None and self.space in ON_CHIP and trace.live:
            trace.tracer.release(self.id)


def _row_major(shape):
    strides = [0] * len(shape)
    s = 1
    for d in range(len(shape) - 1, -1, -1):
        strides[d] = s
        s *= shape[d]
    return tuple(strides)


def _count(shape):
    n = 1
    for s in shape:
        n *= s
    return n


class NkiTensor:
    """A tensor or tile of a kernel being traced (NKI's NkiTensor)."""

    __slots__ = ("_buf", "_offset", "_axes", "_par", "_dims", "_base",
                 "_operand", "_inside", "_shape", "_views")

    def __init__(self, buf, offset, axes, par, dims, base, inside=False):
        self._operand = None  # (id, offset, pattern), once checked
        self._shape = None  # the counts, once asked for
        self._views = None  # views made by indexing, by their key
        # Known to lie inside its tensor (a whole view, or numbers and
        # slices checked against such a view's counts): not checked again.
        self._inside = inside
        self._buf = buf
        self._offset = offset
        self._axes = axes  # ((stride, count), ...) in logical order
        self._par = par  # index of the partition axis, or None (HBM)
        # Per axis (dim of the buffer, index step), or None when the axis
        # does not walk one dim (after a reshape); `base`: the start index
        # in every dim of the buffer, or None likewise.
        self._dims = dims
        self._base = base

    @staticmethod
    def whole(buf, par_axis=0):
        """The whole of `buf`. An on-chip buffer's physical shape is
        [partitions, free...]; with `par_axis` k > 0 the view's axes are
        NKI's (blocks..., par_dim, free...): physical dims 1..k first."""
        n = len(buf.shape)
        if not par_axis:
            whole = _WHOLE.get(buf.shape)
            if whole is None:
                whole = _WHOLE[buf.shape] = (
                    tuple(zip(buf.strides, buf.shape)),
                    tuple((d, 1) for d in range(n)), (0,) * n)
            return NkiTensor(buf, 0, whole[0],
                             0 if buf.space in ON_CHIP else None, whole[1],
                             whole[2], True)
        order = list(range(n))
        par = None
        if buf.space in ON_CHIP:
            order = list(range(1, par_axis + 1)) + [0] + \
                list(range(par_axis + 1, n))
            par = par_axis
        axes = tuple((buf.strides[d], buf.shape[d]) for d in order)
        dims = tuple((d, 1) for d in order)
        return NkiTensor(buf, 0, axes, par, dims, (0,) * n, True)

    # --- NKI's tensor attributes ------------------------------------
    @property
    def shape(self):
        shape = self._shape
        if shape is None:
            shape = self._shape = tuple([c for _, c in self._axes])
        return shape

    @property
    def dtype(self):
        return self._buf.dtype

    @property
    def buffer(self):
        from . import language
        return language.buffer_of(self._buf.space)

    @property
    def ndim(self):
        return len(self._axes)

    @property
    def name(self):
        return self._buf.name

    def __len__(self):
        return self._axes[0][1]

    def __repr__(self):
        return (f"NkiTensor({self._buf.name!r}, shape={self.shape}, "
                f"dtype={dtype_name(self.dtype)}, {self._buf.space})")

    # --- operands ---------------------------------------------------
    def _as_operand(self):
        """(tensor id, offset, pattern) for an instruction, after the
        bounds check; kept, since a view does not change."""
        op = self._operand
        if op is None:
            if not self._inside:
                self._check_bounds()
            op = self._operand = (self._buf.id, self._offset,
                                  self._pattern())
        return op

    def _pattern(self):
        """The operand pattern: the partition axis first, then the rest in
        order (count-1 axes kept: an op such as tensor_reduce counts
        dims; dropped only past the ISA's limit of 4 free dims)."""
        axes = self._axes
        par = self._par
        if par is not None and par != 0:
            axes = (axes[par],) + axes[:par] + axes[par + 1:]
        if par is not None and len(axes) > 5:
            axes = (axes[0],) + tuple(a for a in axes[1:] if a[1] != 1)
        flat = []
        for stride, count in axes:
            flat.append(stride)
            flat.append(count)
        return tuple(flat)

    def _check_bounds(self):
        """IndexError-like nkigraph error when the view leaves its tensor
        in any dim (or, after a reshape, its elements)."""
        buf = self._buf
        if self._base is not None and None not in self._dims:
            lo = list(self._base)
            hi = list(self._base)
            for (d, step), (_, count) in zip(self._dims, self._axes):
                span = step * (count - 1)
                if span < 0:
                    lo[d] += span
                else:
                    hi[d] += span
            for d, n in enumerate(buf.shape):
                if lo[d] < 0 or hi[d] >= n:
                    raise _errors.index_error(
                        f"index out of bounds: dim {d} of '{buf.name}' "
                        f"{list(buf.shape)} is indexed over "
                        f"[{lo[d]}, {hi[d]}]")
            return
        lo = hi = self._offset
        for stride, count in self._axes:
            span = stride * (count - 1)
            if span < 0:
                lo += span
            else:
                hi += span
        total = _count(buf.shape)
        if lo < 0 or hi >= total:
            raise _errors.index_error(
                f"index out of bounds: the view reaches elements [{lo}, "
                f"{hi}] of '{buf.name}' {list(buf.shape)} ({total} elements)")

    def _restrict(self, ranges):
        """The view over iteration ranges {axis: (lo, hi)} (a mask)."""
        if not ranges:
            return self
        offset = self._offset
        axes = list(self._axes)
        base = list(self._base) if self._base is not None else None
        for pos, (lo, hi) in ranges.items():
            if pos >= len(axes):
                continue
            stride, count = axes[pos]
            if count == 1:
                continue  # a broadcast axis
            offset += stride * lo
            axes[pos] = (stride, min(hi, count) - lo)
            dim = self._dims[pos]
            if base is not None and dim is not None:
                base[dim[0]] += dim[1] * lo
        return NkiTensor(self._buf, offset, tuple(axes), self._par,
                         self._dims, tuple(base) if base is not None else None)

    # --- views ------------------------------------------------------
    def reshape(self, shape):
        """The same elements under another shape (contiguous views)."""
        shape = tuple(int(s) for s in shape)
        if _count(shape) != _count(self.shape):
            raise ValueError(f"cannot reshape {self.shape} to {shape}")
        expect = 1
        for stride, count in reversed(self._axes):
            if count != 1 and stride != expect:
                raise NotImplementedError(
                    "nkigraph.nki: reshape of a non-contiguous view")
            expect *= count
        axes = tuple(zip(_row_major(shape), shape))
        par = 0 if self._par is not None else None
        return NkiTensor(self._buf, self._offset, axes, par,
                         (None,) * len(axes), None)

    def ap(self, pattern, offset=0, **kwargs):
        """A raw access pattern: [[stride, count], ...], outermost (the
        partition dim, on chip) first, over the tensor's elements from
        `offset` past the view's start (NKI's tensor.ap)."""
        axes = tuple((int(s), int(c)) for s, c in pattern)
        par = 0 if self._par is not None else None
        return NkiTensor(self._buf, self._offset + int(offset), axes, par,
                         (None,) * len(axes), None)

    def broadcast_to(self, shape):
        """A one-partition tile read by `shape[0]` partitions (a stride-0
        partition view), or size-1 free axes repeated."""
        shape = tuple(int(s) for s in shape)
        if len(shape) != self.ndim:
            raise _errors.trace_error(
                f"broadcast_to {shape} from {self.shape}: same rank needed")
        if self._par is not None and self.shape[self._par] == 1 and \
                shape[self._par] != 1:
            # Engines read each partition's own row: a partition broadcast
            # is computed (a matmul with ones), then the free axes.
            from . import language
            spread = language.partition_broadcast(self, shape[self._par])
            return spread.broadcast_to(shape)
        axes = list(self._axes)
        dims = list(self._dims)
        for i, (want, (stride, count)) in enumerate(zip(shape, axes)):
            if want == count:
                continue
            if count != 1:
                raise _errors.trace_error(
                    f"cannot broadcast {self.shape} to {shape}")
            axes[i] = (0, want)
            if dims[i] is not None:
                dims[i] = (dims[i][0], 0)
        return NkiTensor(self._buf, self._offset, tuple(axes), self._par,
                         tuple(dims), self._base)

    def same_view(self, other):
        return isinstance(other, NkiTensor) and other._buf is self._buf \
            and other._offset == self._offset and \
            other._pattern() == self._pattern()

    def __iadd__(self, other):
        return self._inplace("add", other)

    def __isub__(self, other):
        return self._inplace("subtract", other)

    def __imul__(self, other):
        return self._inplace("multiply", other)

    def __itruediv__(self, other):
        return self._inplace("divide", other)

    def _inplace(self, name, other):
        # t[...] += x: one instruction writing the view in place (Python
        # then assigns the view to itself, which records nothing). A
        # matmul result not yet recorded is accumulated into a PSUM view
        # instead (psum += nisa.nc_matmul(...): one nc_matmul).
        from . import _ops, language
        trace = self._buf.trace
        pending = trace.pending if trace is not None else None
        if name == "add" and pending is not None and \
                pending[0] is other and self._buf.space == "psum":
            trace.pending = None
            _ops.matmul(self, pending[1], pending[2], None, pending[3])
            return self
        language.binary(name, self, other, dst=self)
        return self

    def __getitem__(self, key):
        # A loop indexes the same tiles the same few ways: a view made once
        # (and its operand, checked once) serves every later use of its key.
        try:
            hkey = _key_of(key)
        except TypeError:
            return _index(self, key)
        views = self._views
        if views is None:
            views = self._views = {}
        view = views.get(hkey)
        if view is None:
            view = views[hkey] = _index(self, key)
        return view

    def __setitem__(self, key, value):
        # tile[...] = value: a copy into the view (NKI's assignment form).
        from . import language
        language.assign(self[key], value)

    # --- operators: nki.language ops --------------------------------
    def _op(self, name, other, reverse=False):
        from . import language
        if reverse:
            return language.binary(name, other, self)
        return language.binary(name, self, other)

    def __add__(self, other):
        return self._op("add", other)

    def __radd__(self, other):
        return self._op("add", other, True)

    def __sub__(self, other):
        return self._op("subtract", other)

    def __rsub__(self, other):
        return self._op("subtract", other, True)

    def __mul__(self, other):
        return self._op("multiply", other)

    def __rmul__(self, other):
        return self._op("multiply", other, True)

    def __truediv__(self, other):
        return self._op("divide", other)

    def __rtruediv__(self, other):
        return self._op("divide", other, True)

    def __pow__(self, other):
        return self._op("power", other)

    def __mod__(self, other):
        return self._op("mod", other)

    def __lt__(self, other):
        return self._op("less", other)

    def __le__(self, other):
        return self._op("less_equal", other)

    def __gt__(self, other):
        return self._op("greater", other)

    def __ge__(self, other):
        return self._op("greater_equal", other)

    def __eq__(self, other):
        return self._op("equal", other)

    def __ne__(self, other):
        return self._op("not_equal", other)

    def __and__(self, other):
        return self._op("bitwise_and", other)

    def __or__(self, other):
        return self._op("bitwise_or", other)

    def __xor__(self, other):
        return self._op("bitwise_xor", other)

    __hash__ = object.__hash__

    def __neg__(self):
        from . import language
        return language.negative(self)

    def __matmul__(self, other):
        from . import language
        return language.matmul(self, other)

    @property
    def T(self):
        from . import language
        return language.transpose(self)


_INT = (int, np.integer)


def _key_of(key):
    """A hashable form of an index made of numbers and slices (TypeError
    for anything else, which is not cached)."""
    if type(key) is not tuple:
        key = (key,)
    out = []
    for k in key:
        tk = type(k)
        if tk is slice:
            out.append((k.start, k.stop, k.step))
        elif tk is int:
            out.append(k)
        else:
            raise TypeError("not cached")
    return tuple(out)


def _index(t, key):
    if not isinstance(key, tuple):
        key = (key,)
    fast = _index_basic(t, key)
    if fast is not None:
        return fast
    axes = t._axes
    if any(k is Ellipsis for k in key):
        i = next(i for i, k in enumerate(key) if k is Ellipsis)
        key = key[:i] + (slice(None),) * (len(axes) - len(key) + 1) + \
            key[i + 1:]
    if len(key) > len(axes):
        raise _errors.index_error(
            f"{len(key)} indices for a {len(axes)}-axis tensor {t.shape}")
    key = key + (slice(None),) * (len(axes) - len(key))

    placed = [v for k in key if isinstance(k, IndexExpr) for v, _ in k.terms]
    if placed:
        n_out = max(v.ndim for v in placed)
        taken = {v.pos for v in placed}
        free = [p for p in range(n_out) if p not in taken]
    else:
        n_out = 0
    offset = t._offset
    base = list(t._base) if t._base is not None else None
    by_pos = {}  # output axis -> (stride, count, dim)
    par_pos = None
    par_fixed = None  # the partition axis's stride, when indexed by a number

    def place(pos, stride, count, dim, is_par):
        nonlocal par_pos
        if pos in by_pos:
            raise NotImplementedError(
                "nkigraph.nki: two index variables on one axis of a tile")
        by_pos[pos] = (stride, count, dim)
        if is_par:
            par_pos = pos

    def shift(dim, amount):
        if base is not None and dim is not None:
            base[dim[0]] += dim[1] * amount

    def scaled(dim, k):
        return None if dim is None else (dim[0], dim[1] * k)

    next_free = 0
    for d, k in enumerate(key):
        stride, count = axes[d]
        dim = t._dims[d]
        is_par = d == t._par
        if isinstance(k, _INT) and not isinstance(k, bool):
            i = int(k)
            if i < 0:
                i += count
            if not 0 <= i < count:
                raise _errors.index_error(
                    f"index {int(k)} is out of bounds for axis {d} of "
                    f"size {count}")
            offset += stride * i
            shift(dim, i)
            if is_par:
                par_fixed = stride
            continue
        if isinstance(k, slice):
            start, stop, step = k.start, k.stop, k.step
            step = 1 if step is None else int(step)
            start = 0 if start is None else int(start)
            stop = count if stop is None else int(stop)
            if start < 0 or stop > count or step <= 0:
                raise _errors.index_error(
                    f"slice [{start}:{stop}:{step}] is out of bounds for "
                    f"axis {d} of size {count}")
            n = max(0, (stop - start + step - 1) // step)
            if n == 0:
                raise _errors.index_error(f"empty slice on axis {d}")
            offset += stride * start
            shift(dim, start)
            if placed:
                if not free:
                    raise _errors.index_error(
                        "more sliced axes than the indexed tile has")
                pos = free.pop(0)
            else:
                pos = next_free
                next_free += 1
            place(pos, stride * step, n, scaled(dim, step), is_par)
            continue
        if isinstance(k, IndexExpr):
            offset += stride * k.const
            shift(dim, k.const)
            if not k.terms and is_par:
                par_fixed = stride
            for var, coef in k.terms:
                offset += stride * coef * var.start
                shift(dim, coef * var.start)
                pos = var.pos
                if pos is None:  # a 1-D arange used on its own
                    pos = next_free
                    next_free += 1
                place(pos, stride * coef * var.step, var.count,
                      scaled(dim, coef * var.step), is_par)
            continue
        if isinstance(k, NkiTensor):
            raise NotImplementedError(
                "nkigraph.nki: indexing with a tile of indices (dynamic, "
                "indirect access) is not supported")
        raise TypeError(f"cannot index a tensor with {type(k).__name__}")

    n_axes = n_out if placed else next_free
    if placed:
        n_axes = max([n_axes] + [p + 1 for p in by_pos])
    new_axes = []
    new_dims = []
    for p in range(n_axes):
        stride, count, dim = by_pos.get(p, (0, 1, (0, 0)))
        new_axes.append((stride, count))
        new_dims.append(dim)
    if t._par is not None and par_pos is None:
        # The partition dim indexed by a number: one partition, kept first.
        new_axes.insert(0, (par_fixed or 0, 1))
        new_dims.insert(0, (0, 0))
        par_pos = 0
    if not new_axes:
        new_axes = [(1, 1)]
        new_dims = [(0, 0)]
    return NkiTensor(t._buf, offset, tuple(new_axes), par_pos,
                     tuple(new_dims), tuple(base) if base is not None else None)


def _index_basic(t, key):
    """t[key] for numbers and plain slices (the common case: tiles sliced
    in loops), or None for anything else."""
    axes = t._axes
    n = len(axes)
    if len(key) > n:
        return None
    dims_in = t._dims
    base = list(t._base) if t._base is not None else None
    offset = t._offset
    new_axes = []
    new_dims = []
    par = t._par
    new_par = None
    for d in range(n):
        stride, count = axes[d]
        dim = dims_in[d]
        k = key[d] if d < len(key) else _FULL
        tk = type(k)
        if tk is slice:
            start, stop, step = k.start, k.stop, k.step
            if step is not None and step != 1:
                return None
            start = 0 if start is None else start
            stop = count if stop is None else stop
            if type(start) is not int or type(stop) is not int or \
                    start < 0 or stop > count or stop <= start:
                return None  # the general path raises the error
            offset += stride * start
            if base is not None and dim is not None:
                base[dim[0]] += dim[1] * start
            if d == par:
                new_par = len(new_axes)
            new_axes.append((stride, stop - start))
            new_dims.append(dim)
        elif tk is int:
            if not 0 <= k < count:
                return None
            offset += stride * k
            if base is not None and dim is not None:
                base[dim[0]] += dim[1] * k
            if d == par:
                new_par = len(new_axes)
                new_axes.append((stride, 1))
                new_dims.append((0, 0))
        else:
            return None
    if not new_axes:
        new_axes = [(1, 1)]
        new_dims = [(0, 0)]
    return NkiTensor(t._buf, offset, tuple(new_axes), new_par,
                     tuple(new_dims), tuple(base) if base is not None else None,
                     t._inside)


_FULL = slice(None)
