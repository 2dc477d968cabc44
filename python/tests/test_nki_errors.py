"""nkigraph.nki's errors, each naming the kernel's Python file and the line
of the offending call (nkigraph.Error's file and line, and its message): a
partition dim over 128, SBUF and PSUM overflows, out-of-bounds indices
(past a tensor's end, and a column index past a row's end where the
element itself exists), a mask that selects nothing; and
NotImplementedError naming an NKI name nkigraph does not support."""
import inspect

import numpy as np
import pytest

import nkigraph
import nkigraph.nki as nki
import nkigraph.nki.isa as nisa
import nkigraph.nki.language as nl
from nki_helpers import same_file


def _line(fn, marker="# <-"):
    """The line of `fn` carrying `marker`."""
    lines, first = inspect.getsourcelines(fn)
    hits = [first + k for k, text in enumerate(lines) if marker in text]
    assert len(hits) == 1, hits
    return hits[0]


def _raises_at(kernel, *args, match):
    """Tracing kernel(*args) raises an nkigraph.Error at its marked line."""
    with pytest.raises(nkigraph.Error, match=match) as e:
        nki.trace(kernel, *args)
    err = e.value
    assert err.line == _line(kernel), str(err)
    assert same_file(err.file, kernel.__code__.co_filename), str(err)
    assert str(err).startswith(f"{err.file}:{err.line}: ")
    return err


# --- capacity ----------------------------------------------------------

def partitions_over_128(a):
    t = nl.ndarray((129, 4), dtype=nl.float32, buffer=nl.sbuf)  # <-
    return t


def load_of_256_rows(a):
    t = nl.load(a)  # <-
    return t


def psum_partitions_over_128(a):
    t = nl.zeros((256, 4), dtype=nl.float32, buffer=nl.psum)  # <-
    return t


@pytest.mark.parametrize("kernel", [partitions_over_128, load_of_256_rows,
                                    psum_partitions_over_128])
def test_partition_dim_over_128(kernel):
    err = _raises_at(kernel, (256, 4), match="partition")
    assert "128" in err.message


def sbuf_overflow(a):
    tiles = []
    for _ in nl.affine_range(4):
        # 4 x 64 KiB per partition held at once: a partition holds 224.
        tiles.append(nl.ndarray((128, 16384), dtype=nl.float32))  # <-
    return tiles


def test_sbuf_overflow():
    err = _raises_at(sbuf_overflow, (1, 1), match="(?i)sbuf")
    assert err.kind in ("trace", "resource")


def sbuf_single_tile_too_big(a):
    t = nl.ndarray((1, 60000), dtype=nl.float32)  # <- 240,000 bytes
    return t


def test_sbuf_tile_larger_than_a_partition():
    # A trn2 SBUF partition holds 224 KiB (229,376 bytes).
    _raises_at(sbuf_single_tile_too_big, (1, 1), match="(?i)sbuf")


def psum_overflow(a):
    banks = []
    for _ in nl.affine_range(9):
        # A [128, 512] float32 tile fills one 2 KiB bank; PSUM has 8.
        banks.append(nl.ndarray((128, 512), dtype=nl.float32,  # <-
                                buffer=nl.psum))
    return banks


def test_psum_overflow():
    _raises_at(psum_overflow, (1, 1), match="(?i)psum")


def test_tiles_freed_by_the_kernel_leave_room():
    # The same 9 PSUM tiles, each dropped before the next: no overflow.
    @nki.jit
    def kernel(a):
        out = nl.ndarray((128, 512), dtype=nl.float32, buffer=nl.shared_hbm)
        for _ in nl.affine_range(9):
            ps = nl.zeros((128, 512), dtype=nl.float32, buffer=nl.psum)
        nl.store(out, nl.add(ps, nl.load(a)))
        return out

    a = np.ones((128, 512), np.float32)
    np.testing.assert_array_equal(kernel(a), a)


# --- indices -------------------------------------------------------------

def rows_past_the_end(a):
    t = nl.load(a[0:200, :])  # <-
    return t


def row_number_past_the_end(a):
    t = nl.load(a[128])  # <-
    return t


def column_past_a_rows_end(a):
    i_p, i_f = nl.mgrid[0:128, 0:8]
    # Columns 4..11 of an 8-column tensor: elements that exist (the next
    # row's), but out of bounds in the column dim.
    t = nl.load(a[i_p, 4 + i_f])  # <-
    return t


def tile_column_past_its_end(a):
    t = nl.load(a)
    i_p, i_f = nl.mgrid[0:128, 0:4]
    u = nl.add(t[i_p, 6 + i_f], 1.0)  # <-
    return u


def unmasked_partial_tile(a):
    for i in nl.affine_range(2):
        i_p = i * 128 + nl.arange(128)[:, None]
        t = nl.load(a[i_p, nl.arange(8)[None, :]])  # <-
    return t


@pytest.mark.parametrize("kernel", [rows_past_the_end,
                                    row_number_past_the_end,
                                    column_past_a_rows_end,
                                    tile_column_past_its_end,
                                    unmasked_partial_tile])
def test_out_of_bounds_index(kernel):
    err = _raises_at(kernel, (130 if kernel is unmasked_partial_tile
                              else 128, 8), match="out of bounds")
    assert isinstance(err, IndexError)


def mask_selects_nothing(a):
    i_p, i_f = nl.mgrid[0:128, 0:8]
    t = nl.load(a[i_p, i_f], mask=(i_p < 0))  # <-
    return t


def mask_past_the_tile(a):
    i_p, i_f = nl.mgrid[0:128, 0:8]
    t = nl.load(a[i_p, i_f], mask=(i_f >= 8))  # <-
    return t


@pytest.mark.parametrize("kernel", [mask_selects_nothing,
                                    mask_past_the_tile])
def test_mask_that_selects_nothing(kernel):
    _raises_at(kernel, (128, 8), match="selects nothing")


def shapes_that_do_not_broadcast(a):
    t = nl.load(a)
    u = nl.add(t, t[:, 0:3])  # <-
    return u


def test_tiles_that_do_not_broadcast():
    _raises_at(shapes_that_do_not_broadcast, (4, 8), match="broadcast")


# --- unsupported names -------------------------------------------------

def test_unsupported_language_name_raises_naming_it():
    with pytest.raises(NotImplementedError, match="nki.language.fancy_op"):
        nl.fancy_op
    assert not hasattr(nl, "fancy_op")


def test_unsupported_isa_name_raises_naming_it():
    def kernel(a):
        return nisa.fancy_instruction(nl.load(a))

    with pytest.raises(NotImplementedError,
                       match="nki.isa.fancy_instruction"):
        nki.trace(kernel, (4, 4))


def test_unsupported_operator_and_activation_name_them():
    def bad_op(a):
        t = nl.load(a)
        return nisa.tensor_tensor(t, t, op=np.arctan2)

    def bad_act(a):
        return nisa.activation(op=np.cosh, data=nl.load(a))

    with pytest.raises(NotImplementedError, match="arctan2"):
        nki.trace(bad_op, (4, 4))
    with pytest.raises(NotImplementedError, match="cosh"):
        nki.trace(bad_act, (4, 4))


def test_unsupported_dtype_names_it():
    with pytest.raises(NotImplementedError, match="float8_e5m2"):
        nki.trace(lambda a: nl.ndarray((4, 4), dtype=nl.float8_e5m2),
                  (4, 4))


def test_nki_call_outside_a_kernel():
    with pytest.raises(RuntimeError, match="kernel being traced"):
        nl.zeros((4, 4), dtype=nl.float32)


def test_fills_in_hbm_are_listed_as_unsupported():
    # nkigraph.nki fills on-chip tiles only (a kernel fills HBM by storing
    # a filled tile); NKI's nl.zeros(..., buffer=nl.hbm) is named as not
    # supported rather than traced wrong.
    def kernel(a):
        return nl.zeros((4, 4), dtype=nl.float32, buffer=nl.shared_hbm)

    with pytest.raises(NotImplementedError, match="nl.zeros/ones/full in HBM"):
        nki.trace(kernel, (4, 4))


def test_the_binding_takes_attributes_in_any_order_and_names_a_stray_one():
    # The attribute lookup resumes where the last one matched; attributes
    # given against the declaration order (scalar0 before op0) must still
    # each find their own spec, and an undeclared one is refused by name.
    from nkigraph import _nkigraph
    tracer = _nkigraph._Tracer("attrs", [], "trn2", 1, 1)
    op = _nkigraph._opcodes["tensor_scalar"]
    memset = _nkigraph._opcodes["memset"]
    errors = []

    def body(core):
        del core
        t = tracer.alloc([2, 4], "float32", "sbuf", "t", "f", 1)
        u = tracer.alloc([2, 4], "float32", "sbuf", "u", "f", 1)
        whole = (4, 2, 1, 4)
        operands = [("dst", u, 0, whole), ("data", t, 0, whole)]
        tracer.emit(memset, [("dst", t, 0, whole)], [("value", 1.0)], "f", 1)
        tracer.emit(op, operands, (("scalar0", 3.0), ("op0", "add")), "f", 2)
        try:
            tracer.emit(op, operands, (("op0", "add"), ("scael", 3.0)), "f",
                        3)
        except nkigraph.InvalidArgumentError as e:
            errors.append(str(e))

    text = tracer.trace(body).text
    assert errors == ["tensor_scalar has no attribute 'scael'"]
    assert 'name: "scalar0"' in text and "f: 3" in text, text
