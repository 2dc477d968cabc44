"""Indexing a view: numbers, slices, Ellipsis and arange/mgrid index
expressions turn a tensor view into a new one (its offset, axes, partition
axis and per-dim start), checking each index against its axis. The view's
class is the indexed view's (`type(t)`: NkiTensor, which imports this
module)."""

import numpy as np

from . import _errors
from ._index import IndexExpr

_INT = (int, np.integer)
_FULL = slice(None)


def cache_key(key):
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


def index(t, key):
    """The view t[key]: numbers, slices, Ellipsis and index expressions
    (arange, mgrid) of any placement."""
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
        if isinstance(k, type(t)):  # a tile of indices
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
    return type(t)(t._buf, offset, tuple(new_axes), par_pos, tuple(new_dims),
                   tuple(base) if base is not None else None)


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
    return type(t)(t._buf, offset, tuple(new_axes), new_par, tuple(new_dims),
                   tuple(base) if base is not None else None, t._inside)
