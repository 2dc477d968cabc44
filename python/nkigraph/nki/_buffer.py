"""Traced tensors as their views see them: one tensor's tracer id, memory
space, dtype, physical shape and row-major strides, its on-chip tile freed
when its last view goes."""

ON_CHIP = ("sbuf", "psum")
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
            strides = _STRIDES[shape] = row_major(shape)
        self.strides = strides
        self.name = name

    def __del__(self):
        trace = self.trace
        if trace is not None and self.space in ON_CHIP and trace.live:
            trace.tracer.release(self.id)


def row_major(shape):
    """The row-major strides of `shape`, in elements."""
    strides = [0] * len(shape)
    s = 1
    for d in range(len(shape) - 1, -1, -1):
        strides[d] = s
        s *= shape[d]
    return tuple(strides)


def element_count(shape):
    """The number of elements of `shape`."""
    n = 1
    for s in shape:
        n *= s
    return n
