"""NKI tensors and tiles as views of traced tensors.

A `NkiTensor` is a view of a traced tensor (`_buffer._Buffer`): an element
offset and one (stride, count) pair per axis, in elements of the tensor's
row-major layout, as an instruction operand's pattern is. On-chip views
also say which axis walks the partitions (`_par`); an operand puts it
first, as the ISA wants. Indexing (`_indexing`) only makes a new view, as
in NKI; the operators (`_operators`) call nki.language.

Each view also knows, per axis, which dim of the tensor it walks and by
how many indices a step, and the index it starts at in every dim, so an
access is bounds-checked dim by dim (a column index past the row's end is
out of bounds even though the element exists) once a mask has narrowed
it: at the instruction, not at the indexing.
"""

from . import _errors, _indexing
from ._buffer import ON_CHIP, element_count, row_major
from ._dtypes import dtype_name
from ._operators import Operators

# A whole view's (axes, dims, base) by the tensor's shape: tiles of a few
# shapes are allocated over and over.
_WHOLE = {}


class NkiTensor(Operators):
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
        total = element_count(buf.shape)
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
        if element_count(shape) != element_count(self.shape):
            raise ValueError(f"cannot reshape {self.shape} to {shape}")
        expect = 1
        for stride, count in reversed(self._axes):
            if count != 1 and stride != expect:
                raise NotImplementedError(
                    "nkigraph.nki: reshape of a non-contiguous view")
            expect *= count
        axes = tuple(zip(row_major(shape), shape))
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

    def __getitem__(self, key):
        # A loop indexes the same tiles the same few ways: a view made once
        # (and its operand, checked once) serves every later use of its key.
        try:
            hkey = _indexing.cache_key(key)
        except TypeError:
            return _indexing.index(self, key)
        views = self._views
        if views is None:
            views = self._views = {}
        view = views.get(hkey)
        if view is None:
            view = views[hkey] = _indexing.index(self, key)
        return view

    def __setitem__(self, key, value):
        # tile[...] = value: a copy into the view (NKI's assignment form).
        from . import language
        language.assign(self[key], value)
