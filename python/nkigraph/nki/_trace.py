"""The trace in progress: the builder's tracer, the source line of each
call, and the kernel's HBM tensors.

Every nki.language / nki.isa call goes through `emit`, which records one
instruction with the calling kernel line (the first frame outside this
package) as its source. Errors the tracer records are raised at the call
that made them, as nkigraph.Error.
"""

import sys

from .. import _nkigraph
from . import _buffer, _dtypes

_OPCODES = _nkigraph._opcodes
_PACKAGE = __name__.rsplit(".", 1)[0]  # "nkigraph.nki"

# The trace in progress, or None.
current = None


def active():
    """The trace in progress; a clear error outside one."""
    if current is None:
        raise RuntimeError(
            "this nki call needs a kernel being traced: call the kernel "
            "through nki.simulate_kernel, nki.simulate, nkigraph.nki.trace "
            "or a jit-decorated kernel called with numpy arrays")
    return current


# Whether a code object is this package's, by code object: asked for every
# frame between a recorded call and the kernel.
_OWN = {}


def caller():
    """(file, line) of the innermost frame outside nkigraph.nki."""
    f = sys._getframe(2)
    own = _OWN
    while f is not None:
        code = f.f_code
        mine = own.get(code)
        if mine is None:
            mine = own[code] = f.f_globals.get("__name__", "").startswith(
                _PACKAGE)
        if not mine:
            return code.co_filename, f.f_lineno
        f = f.f_back
    return "<unknown>", 0


class Trace:
    """One kernel being traced: the tracer and what the front-end keeps
    beside it (grid position, the shared-HBM tensors of grid instance 0
    that later instances share, inputs the kernel writes)."""

    def __init__(self, tracer, grid):
        self.tracer = tracer
        self.grid = grid  # the launch grid, () without one
        self.program = (0,) * len(grid)  # this instance's position
        self.first_instance = True  # the first this core runs
        self.core_axis = None  # the grid axis on the logical cores
        self.core = 0
        self.shared = []  # instance 0's shared-HBM allocations, in order
        self.shared_index = 0
        self.inputs = {}  # tensor id -> parameter name
        self.written = set()  # ids of inputs some instruction writes
        self.constants = []  # (name, numpy array) of nl.shared_constant
        self.names = set()
        self.name_counts = {}
        self.count = 0  # tensors allocated, naming the unnamed ones
        self.named = set()  # ids of the tensors the kernel named
        self.loop_reduce = {}  # nl.loop_reduce's tile, by call site
        # A matmul whose result tile has not been used yet: (tile,
        # stationary, moving, (file, line) of its call). Recorded before
        # any other instruction, or into the PSUM tile a `+=` accumulates
        # it into.
        self.pending = None
        self.live = True  # on-chip tiles are freed while the body runs
        # PSUM views a matmul has written (buffer id, offset, pattern), and
        # PSUM buffers something other than a zero memset wrote: a matmul
        # onto either accumulates; onto fresh or zeroed PSUM it overwrites
        # (opening an accumulation group, as the hardware wants).
        self.matmul_written = {}  # buffer id -> {(offset, pattern)}
        self.psum_initialised = set()

    def alloc(self, shape, dtype, space, name=None, par_axis=0):
        """A new tensor of `shape` (NKI's logical shape: for on-chip ones
        the partition dim at `par_axis`) as a whole view. Unnamed ones are
        t<k> (ps<k> in PSUM), k counting the trace's tensors."""
        if type(shape) is not tuple:
            shape = tuple([int(s) for s in shape])
        if par_axis and space in ("sbuf", "psum"):
            phys = (shape[par_axis],) + shape[:par_axis] + \
                shape[par_axis + 1:]
        else:
            phys = shape
            par_axis = 0
        self.count += 1
        if name:
            label = self.unique_name(name)
        else:
            label = ("ps" if space == "psum" else "t") + str(self.count)
        file, line = caller()
        id_ = self.tracer.alloc(list(phys), _dtypes.dtype_name(dtype), space,
                                label, file, line)
        buf = _buffer._Buffer(self, id_, space, dtype, phys, label)
        if name:
            self.named.add(id_)
        return _tensor.NkiTensor.whole(buf, par_axis)

    def emit(self, opcode, operands, attrs=(), where=None):
        """Records `opcode` with operands [(role, tensor)] (tensor an
        NkiTensor view, or None for an absent optional one) and attrs
        [(name, value)]. Returns the instruction id."""
        if self.pending is not None:
            self.flush()
        file, line = where or caller()
        ops = []
        for role, t in operands:
            if t is not None:
                ops.append((role,) + t._as_operand())
        dst = operands[0][1]
        if dst is not None and dst._buf.id in self.inputs:
            self.written.add(dst._buf.id)
        return self.tracer.emit(_OPCODES[opcode], ops, attrs, file, line)

    def flush(self):
        """Records the pending matmul into its own tile."""
        tile, stationary, moving, where = self.pending
        self.pending = None
        from . import _ops
        _ops.matmul(tile, stationary, moving, False, where)

    def unique_name(self, base):
        """`base`, or base_K for the first K not taken: tensor names are
        unique in a graph."""
        if base not in self.names:
            self.names.add(base)
            return base
        k = self.name_counts.get(base, 0)
        while True:
            k += 1
            name = f"{base}_{k}"
            if name not in self.names:
                break
        self.name_counts[base] = k
        self.names.add(name)
        return name


from . import _tensor  # noqa: E402  (it imports this module)
