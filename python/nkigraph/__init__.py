"""nkigraph: NKI-style kernels as instruction graphs, from Python.

    import numpy as np, nkigraph
    g = nkigraph.trace("tiled_matmul", m=128, k=256, n=64, bias=0,
                       dtype="float32")
    out = nkigraph.run(g, {"lhs": a, "rhs": b})["out"]   # numpy arrays
    assert nkigraph.verify("conv1d", c_in=64).passed
    nkigraph.dot(g, "g.svg"); print(nkigraph.profile(g).text)

Errors raise nkigraph.Error (DeviceError for what the device refuses as it
runs: out-of-bounds accesses, races, deadlocks, reads of unwritten memory;
InvalidArgumentError, a ValueError, for bad parameters and inputs). Their
attributes are the structured diagnostic's fields.
"""


class Error(Exception):
    """An nkigraph error. str(e) is the full report; the attributes are the
    diagnostic's fields (None where they do not apply)."""

    code = None  # the status code, e.g. "ABORTED", "INVALID_ARGUMENT"
    kind = None  # "load", "validation", "trace", "input", "resource",
                 # "device", "race" or "deadlock"
    rank = None
    core = None
    instruction_id = None
    opcode = None
    file = None  # kernel source file of the instruction or trace call
    line = None
    scope = None
    tensor_id = None
    tensor = None
    message = None  # what went wrong, without where
    notes = ()  # per note a dict of these fields and its "text"


class DeviceError(Error):
    """The device refused the graph as it ran (kind "device", "race" or
    "deadlock")."""


class InvalidArgumentError(Error, ValueError):
    """Bad parameters, inputs or graph."""


class NotFoundError(Error, LookupError):
    """An unknown kernel, a missing file."""


class ResourceError(Error, MemoryError):
    """Over the memory limit."""


from ._nkigraph import (  # noqa: E402  (the error classes come first)
    DiffResult,
    EngineUse,
    Graph,
    IoSpec,
    Kernel,
    OutputCheck,
    Param,
    Profile,
    Verification,
    diff,
    dot,
    kernel,
    kernels,
    profile,
    random_inputs,
    run,
    trace,
    verify,
)

__all__ = [
    "DeviceError", "DiffResult", "EngineUse", "Error", "Graph",
    "InvalidArgumentError", "IoSpec", "Kernel", "NotFoundError",
    "OutputCheck", "Param", "Profile", "ResourceError", "Verification",
    "diff", "dot", "kernel", "kernels", "profile", "random_inputs", "run",
    "trace", "verify",
]
