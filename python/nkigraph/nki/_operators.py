"""Python's operators on tiles as nki.language calls: `a + b`, `a @ b`,
`-a`, `a.T`, comparisons and bitwise operators make new tiles;
`t[...] += x` and its kin write the view in place. NkiTensor takes them
from the `Operators` mixin."""


def _binary(name, reverse=False):
    """The operator method for nki.language's binary `name` (its operands
    swapped for a reflected operator such as __radd__)."""

    def method(self, other):
        from . import language
        if reverse:
            return language.binary(name, other, self)
        return language.binary(name, self, other)

    return method


def _in_place(name):
    """The augmented assignment method (+=, -=, ...) for binary `name`."""

    def method(self, other):
        return self._inplace(name, other)

    return method


class Operators:
    """The operators of a tile view; the view class provides `_buf`."""

    __slots__ = ()

    __add__ = _binary("add")
    __radd__ = _binary("add", True)
    __sub__ = _binary("subtract")
    __rsub__ = _binary("subtract", True)
    __mul__ = _binary("multiply")
    __rmul__ = _binary("multiply", True)
    __truediv__ = _binary("divide")
    __rtruediv__ = _binary("divide", True)
    __pow__ = _binary("power")
    __mod__ = _binary("mod")
    __lt__ = _binary("less")
    __le__ = _binary("less_equal")
    __gt__ = _binary("greater")
    __ge__ = _binary("greater_equal")
    __eq__ = _binary("equal")
    __ne__ = _binary("not_equal")
    __and__ = _binary("bitwise_and")
    __or__ = _binary("bitwise_or")
    __xor__ = _binary("bitwise_xor")
    # __eq__ builds a tile, so identity is the hash (tiles key dicts).
    __hash__ = object.__hash__

    __iadd__ = _in_place("add")
    __isub__ = _in_place("subtract")
    __imul__ = _in_place("multiply")
    __itruediv__ = _in_place("divide")

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
