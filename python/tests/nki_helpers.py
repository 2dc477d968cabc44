"""Reference rounding for the nkigraph.nki tests: what the device stores
for the narrow float dtypes, worked out in numpy bit by bit."""
import numpy as np


def bf16(a):
    """a rounded to bfloat16 (nearest even), as float32."""
    bits = np.asarray(a, np.float32).view(np.uint32).astype(np.uint64)
    rounded = (bits + 0x7FFF + ((bits >> 16) & 1)) & 0xFFFF0000
    return rounded.astype(np.uint32).view(np.float32)


def fp16(a):
    """a rounded to IEEE half precision, as float32."""
    return np.asarray(a, np.float32).astype(np.float16).astype(np.float32)


def rng(seed):
    return np.random.default_rng(seed)


def uniform(seed, shape, lo=-1.0, hi=1.0, dtype=np.float32):
    return rng(seed).uniform(lo, hi, shape).astype(dtype)


def same_file(named, path):
    """Whether a graph or an error names the file at `path`: the tracer
    names a file inside nkigraph's source tree relative to the tree (graphs
    are the same wherever it is checked out), others by their path."""
    return named == path or path.endswith("/" + named)
