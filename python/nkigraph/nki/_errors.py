"""Errors the front-end raises itself, shaped like the tracer's: an
nkigraph.Error whose file and line are the kernel's calling line."""

from .. import InvalidArgumentError
from . import _trace


class NkiIndexError(InvalidArgumentError, IndexError):
    """An index outside its tensor."""


def _make(cls, message):
    file, line = _trace.caller()
    error = cls(f"{file}:{line}: {message}")
    error.kind = "trace"
    error.code = "INVALID_ARGUMENT"
    error.file = file
    error.line = line
    error.message = message
    return error


def index_error(message):
    return _make(NkiIndexError, message)


def trace_error(message):
    return _make(InvalidArgumentError, message)


class Unsupported(NotImplementedError, AttributeError):
    """An NKI name or argument nkigraph.nki does not support (also an
    AttributeError, so hasattr() on a module answers False)."""


def unsupported(name, why=""):
    """NotImplementedError naming the API the kernel used."""
    text = f"nkigraph.nki does not support {name}"
    return Unsupported(text + (f": {why}" if why else ""))
