"""Index expressions: `nl.arange(n)` is an affine expression of one index
variable; `[:, None]` places the variable on an axis of the tile it
indexes; arithmetic keeps expressions affine (`i * 128 + nl.arange(128)`).
A comparison of an expression with a number is a predicate, which a
`mask=` turns into a range of the variable (only the selected rows take
part in the instruction).
"""

import numbers


class _Var:
    """An index variable: values start, start+step, ... (count of them),
    on axis `pos` of an `ndim`-axis tile (pos None: not placed yet)."""

    __slots__ = ("count", "start", "step", "pos", "ndim")

    def __init__(self, count, start=0, step=1, pos=None, ndim=1):
        self.count = count
        self.start = start
        self.step = step
        self.pos = pos
        self.ndim = ndim


class IndexExpr:
    """const + sum(coef * var): an affine index expression."""

    __slots__ = ("const", "terms")

    def __init__(self, const=0, terms=()):
        self.const = const
        self.terms = tuple(terms)  # ((var, coef), ...)

    # Placement: arange(n)[:, None] puts the variable on axis 0 of 2.
    def __getitem__(self, key):
        if not isinstance(key, tuple):
            key = (key,)
        if len(self.terms) != 1:
            raise NotImplementedError(
                "placing an index expression of several variables")
        var, coef = self.terms[0]
        if var.pos is not None and var.ndim != 1:
            raise NotImplementedError("re-placing a placed index variable")
        slices = [i for i, k in enumerate(key) if isinstance(k, slice)]
        if len(slices) != 1 or any(k is not None for k in key
                                   if not isinstance(k, slice)):
            raise IndexError(
                "an index expression is placed with one ':' and Nones, "
                "e.g. nl.arange(128)[:, None]")
        placed = _Var(var.count, var.start, var.step, slices[0], len(key))
        return IndexExpr(self.const, ((placed, coef),))

    def _combine(self, other, sign):
        if isinstance(other, numbers.Integral):
            return IndexExpr(self.const + sign * int(other), self.terms)
        if isinstance(other, IndexExpr):
            terms = dict(self.terms)
            order = [v for v, _ in self.terms]
            for v, c in other.terms:
                if v not in terms:
                    order.append(v)
                    terms[v] = 0
                terms[v] += sign * c
            return IndexExpr(self.const + sign * other.const,
                             tuple((v, terms[v]) for v in order if terms[v]))
        return NotImplemented

    def __add__(self, other):
        return self._combine(other, 1)

    __radd__ = __add__

    def __sub__(self, other):
        return self._combine(other, -1)

    def __rsub__(self, other):
        return (-self)._combine(other, 1)

    def __neg__(self):
        return IndexExpr(-self.const, tuple((v, -c) for v, c in self.terms))

    def __mul__(self, other):
        if not isinstance(other, numbers.Integral):
            return NotImplemented
        k = int(other)
        return IndexExpr(self.const * k,
                         tuple((v, c * k) for v, c in self.terms if c * k))

    __rmul__ = __mul__

    def _compare(self, op, other):
        if not isinstance(other, (numbers.Integral, IndexExpr)):
            return NotImplemented
        return Predicate(self - other, op)

    def __lt__(self, other):
        return self._compare("<", other)

    def __le__(self, other):
        return self._compare("<=", other)

    def __gt__(self, other):
        return self._compare(">", other)

    def __ge__(self, other):
        return self._compare(">=", other)

    def __repr__(self):
        parts = [str(self.const)] + [
            f"{c}*arange({v.count})@{v.pos}" for v, c in self.terms]
        return "IndexExpr(" + " + ".join(parts) + ")"


class Predicate:
    """`expr op 0`, affine in index variables; combined with &."""

    __slots__ = ("clauses",)

    def __init__(self, expr=None, op=None, clauses=None):
        self.clauses = clauses if clauses is not None else ((expr, op),)

    def __and__(self, other):
        if not isinstance(other, Predicate):
            return NotImplemented
        return Predicate(clauses=self.clauses + other.clauses)

    def ranges(self):
        """{axis: (lo, hi)} the predicate leaves of an instruction's
        iteration axes; ValueError when it selects nothing,
        NotImplementedError when it is not one variable each."""
        out = {}
        for expr, op in self.clauses:
            if len(expr.terms) != 1:
                raise NotImplementedError(
                    "a mask on an expression of several index variables")
            var, coef = expr.terms[0]
            if var.pos is None:
                raise NotImplementedError("a mask on an unplaced arange")
            # coef * (start + step * t) + const op 0, for t in [0, count).
            a = coef * var.step
            b = coef * var.start + expr.const
            lo, hi = out.get(var.pos, (0, var.count))
            lo, hi = _solve(a, b, op, lo, hi)
            out[var.pos] = (lo, hi)
        for pos, (lo, hi) in out.items():
            if hi <= lo:
                raise ValueError("the mask selects nothing")
        return out


def _solve(a, b, op, lo, hi):
    """The integers t in [lo, hi) with a * t + b op 0, as (lo, hi)."""
    if a == 0:
        ok = {"<": b < 0, "<=": b <= 0, ">": b > 0, ">=": b >= 0}[op]
        return (lo, hi) if ok else (lo, lo)
    if op in (">", ">="):
        a, b = -a, -b
        op = "<" if op == ">" else "<="
    strict = op == "<"
    if a > 0:
        # a * t < -b (or <=): t below ceil(-b / a) (or floor(-b / a) + 1).
        t_hi = -(b // a) if strict else (-b) // a + 1
        return lo, min(hi, t_hi)
    # a < 0: (-a) * t > b (or >=).
    n = -a
    t_lo = b // n + 1 if strict else -((-b) // n)
    return max(lo, t_lo), hi
