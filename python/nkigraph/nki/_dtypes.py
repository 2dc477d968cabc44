"""NKI's dtypes: numpy dtypes where numpy has them, named objects for the
ones it lacks (bfloat16, the fp8 formats, tfloat32); nkigraph's name of
each."""

import numpy as np


class _NamedDType:
    """A dtype numpy lacks; its values travel as float32."""

    __slots__ = ("name", "itemsize")

    def __init__(self, name, itemsize):
        self.name = name
        self.itemsize = itemsize

    def __repr__(self):
        return f"nl.{self.name}"


bfloat16 = _NamedDType("bfloat16", 2)
float8_e4m3 = _NamedDType("float8_e4m3", 1)
float8_e5m2 = _NamedDType("float8_e5m2", 1)
tfloat32 = _NamedDType("tfloat32", 4)

# nkigraph's names of the numpy dtypes it holds.
_NUMPY = {
    np.dtype(np.float32): "float32",
    np.dtype(np.float16): "float16",
    np.dtype(np.int32): "int32",
    np.dtype(np.uint32): "uint32",
    np.dtype(np.int16): "int16",
    np.dtype(np.uint16): "uint16",
    np.dtype(np.int8): "int8",
    np.dtype(np.uint8): "uint8",
    np.dtype(np.bool_): "uint8",
}
# What nkigraph has no dtype for, and what it stands in with.
_STAND_INS = {
    "tfloat32": "float32",  # tf32 is fp32 storage with a shorter mantissa
    "float64": "float32",
}
_SUPPORTED = set(_NUMPY.values()) | {"bfloat16", "float8_e4m3"}


_NAMES = {}  # dtype_name's answers, by the dtype asked about


def dtype_name(dtype):
    """nkigraph's name of an NKI / numpy dtype (or a string naming one)."""
    try:
        return _NAMES[dtype]
    except (KeyError, TypeError):
        pass
    name = _dtype_name(dtype)
    try:
        _NAMES[dtype] = name
    except TypeError:
        pass
    return name


def _dtype_name(dtype):
    if isinstance(dtype, _NamedDType):
        name = dtype.name
    elif isinstance(dtype, str):
        name = dtype
    else:
        try:
            d = np.dtype(dtype)
        except TypeError:
            raise TypeError(f"not a dtype: {dtype!r}") from None
        if d == np.float64:
            name = "float64"
        else:
            name = _NUMPY.get(d)
            if name is None:
                raise TypeError(f"nkigraph.nki has no dtype {d}")
    name = _STAND_INS.get(name, name)
    if name not in _SUPPORTED:
        from ._errors import unsupported
        raise unsupported(
            f"dtype {name}",
            "nkigraph's device has float32, bfloat16, float16, "
            "float8_e4m3 and the integer types")
    return name


_RANK = {"float32": 5, "float16": 4, "bfloat16": 4, "float8_e4m3": 2,
         "int32": 3, "uint32": 3, "int16": 2, "uint16": 2, "int8": 1,
         "uint8": 1}


def is_float(name):
    return name in ("float32", "float16", "bfloat16", "float8_e4m3")


def promote(a, b):
    """The dtype an element-wise op of tiles of dtypes a and b yields: the
    wider, floats over integers (NKI's rule for inputs of mixed types)."""
    if a == b:
        return a
    if is_float(a) != is_float(b):
        return a if is_float(a) else b
    return a if _RANK[a] >= _RANK[b] else b


def numpy_of(name):
    """The numpy dtype values of a tensor of dtype `name` come back in."""
    for d, n in _NUMPY.items():
        if n == name and d != np.dtype(np.bool_):
            return d
    return np.dtype(np.float32)


def nki_dtype(dtype):
    """The dtype object a kernel compares with nl.<dtype>: numpy's where it
    has one, else NKI's named one (for a dtype given by name)."""
    if not isinstance(dtype, str):
        return dtype
    named = {"bfloat16": bfloat16, "float8_e4m3": float8_e4m3,
             "float8_e5m2": float8_e5m2, "tfloat32": tfloat32}
    if dtype in named:
        return named[dtype]
    return np.dtype(dtype)


_ITEMSIZE = {"float32": 4, "int32": 4, "uint32": 4, "bfloat16": 2,
             "float16": 2, "int16": 2, "uint16": 2, "float8_e4m3": 1,
             "int8": 1, "uint8": 1}


def itemsize(dtype):
    """Bytes per element of a tensor of `dtype` on the device."""
    return _ITEMSIZE[dtype_name(dtype)]
