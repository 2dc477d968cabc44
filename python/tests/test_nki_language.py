"""nkigraph.nki.language (the older NKI dialect: nl.load / nl.store, ops
that return new tiles, masks): allocation in every buffer, par_dim, loads
and stores with masks, the element-wise, activation and reduction ops,
matmul and transpose, Python operators and numpy ufuncs on tiles, index
expressions, the loop forms, tile_size, loop_reduce, shared_constant and
the dtypes. Each kernel is written here and checked against numpy, at real
tile sizes (128 x 512, K loops over 128) and at the edges (one partition,
one column, a partial last tile)."""
import math

import numpy as np
import pytest

import nkigraph
import nkigraph.nki as nki
import nkigraph.nki.isa as nisa
import nkigraph.nki.language as nl
from nki_helpers import bf16, fp16, uniform


# --- load / store, masks, tiling --------------------------------------------

@nki.jit
def scale_shift(a):
    """out = 3a + 1, 128-row tiles down the rows and 512-column tiles
    across, the last of each masked to what is left."""
    rows, cols = a.shape
    out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
    for i in nl.affine_range((rows + 127) // 128):
        for j in nl.affine_range((cols + 511) // 512):
            i_p = i * 128 + nl.arange(128)[:, None]
            i_f = j * 512 + nl.arange(512)[None, :]
            inside = (i_p < rows) & (i_f < cols)
            t = nl.load(a[i_p, i_f], mask=inside)
            u = nl.multiply(t, 3.0, mask=inside)
            v = nl.add(u, 1.0, mask=inside)
            nl.store(out[i_p, i_f], value=v, mask=inside)
    return out


@pytest.mark.parametrize("shape", [(128, 512), (256, 1024), (200, 700),
                                   (1, 512), (128, 1), (1, 1), (129, 513)])
def test_masked_tiles_cover_every_shape(shape):
    a = uniform(1, shape)
    out = scale_shift(a)
    assert out.shape == shape and out.dtype == np.float32
    np.testing.assert_allclose(out, 3 * a + 1, rtol=1e-6, atol=1e-6)


def test_mask_on_the_row_tile_reads_no_row_past_the_end():
    # 130 rows: the second tile holds 2 rows; without the mask its load
    # would read rows 130..255, which the tracer rejects (see the errors
    # tests), so a passing run shows the mask narrowed the access.
    g = nki.trace(scale_shift, (130, 512))
    assert g.text.count("opcode: DMA_COPY") == 4  # 2 row tiles, in + out
    out = nkigraph.run(g, {"a": np.ones((130, 512), np.float32)})
    np.testing.assert_array_equal(out["out"], np.full((130, 512), 4.0))


@nki.jit
def copy_through_every_buffer(a):
    """a [128, 512] -> SBUF (nl.ndarray, assigned) -> private HBM -> HBM
    -> SBUF -> out, with a PSUM tile of ones added on the way."""
    sb = nl.ndarray((128, 512), dtype=a.dtype, buffer=nl.sbuf)
    sb[...] = nl.load(a)
    scratch = nl.ndarray((128, 512), dtype=a.dtype, buffer=nl.private_hbm)
    nl.store(scratch, sb)
    scratch2 = nl.ndarray((128, 512), dtype=a.dtype, buffer=nl.hbm)
    nisa.dma_copy(dst=scratch2, src=scratch)
    back = nl.load(scratch2)
    ones = nl.ones((128, 512), dtype=nl.float32, buffer=nl.psum)
    total = nl.add(back, ones)
    out = nl.ndarray((128, 512), dtype=a.dtype, buffer=nl.shared_hbm)
    nl.store(out, total)
    return out


def test_ndarray_in_sbuf_psum_and_every_hbm():
    a = uniform(2, (128, 512))
    np.testing.assert_allclose(copy_through_every_buffer(a), a + 1,
                               rtol=1e-6)


@nki.jit
def fills(a):
    """zeros/ones/full in SBUF and PSUM (and nl.full's dtype), each
    stored side by side: out[:, 0:4] zeros, [4:8] ones, [8:12] 2.5 and
    [12:16] -7 (int32 tile), [16:20] ones in PSUM."""
    out = nl.ndarray((a.shape[0], 20), dtype=nl.float32, buffer=nl.shared_hbm)
    p = a.shape[0]
    nl.store(out[:, 0:4], nl.zeros((p, 4), dtype=nl.float32))
    nl.store(out[:, 4:8], nl.ones((p, 4), dtype=nl.float32, buffer=nl.sbuf))
    nl.store(out[:, 8:12], nl.full((p, 4), 2.5, dtype=nl.float32))
    ints = nl.full((p, 4), -7, dtype=nl.int32)
    nl.store(out[:, 12:16], nl.copy(ints, dtype=nl.float32))
    zeros_ps = nl.zeros((p, 4), dtype=nl.float32, buffer=nl.psum)
    nl.store(out[:, 16:20], nl.add(zeros_ps, 1.0))
    return out


@pytest.mark.parametrize("p", [128, 1])
def test_zeros_ones_full(p):
    out = fills(np.zeros((p, 1), np.float32))
    want = np.concatenate([np.zeros((p, 4)), np.ones((p, 4)),
                           np.full((p, 4), 2.5), np.full((p, 4), -7.0),
                           np.ones((p, 4))], axis=1)
    np.testing.assert_array_equal(out, want)


@nki.jit
def blocks_by_par_dim(a):
    """a [4*128, 512] held as one SBUF tensor of 4 blocks, the block dim
    before the partition dim; each block row-summed into out [512, 1]."""
    n_blocks = a.shape[0] // 128
    buf = nl.ndarray((n_blocks, nl.par_dim(128), 512), dtype=a.dtype,
                     buffer=nl.sbuf)
    for b in nl.affine_range(n_blocks):
        buf[b] = nl.load(a[b * 128:(b + 1) * 128, :])
    out = nl.ndarray((a.shape[0], 1), dtype=a.dtype, buffer=nl.shared_hbm)
    for b in nl.affine_range(n_blocks):
        assert buf[b].shape == (128, 512)
        nl.store(out[nl.ds(b * 128, 128), :],
                 nl.sum(buf[b], axis=1, keepdims=True))
    return out


def test_par_dim_after_block_dims():
    a = uniform(3, (512, 512))
    np.testing.assert_allclose(blocks_by_par_dim(a),
                               a.sum(axis=1, keepdims=True), rtol=1e-5,
                               atol=1e-4)


@nki.jit
def transpose_load(a):
    t = nl.load_transpose2d(a)
    out = nl.ndarray((a.shape[1], a.shape[0]), dtype=a.dtype,
                     buffer=nl.shared_hbm)
    nl.store(out, t)
    return out


@pytest.mark.parametrize("shape", [(64, 128), (1, 128), (128, 1)])
@pytest.mark.parametrize("dtype", [np.float32, np.float16])
def test_load_transpose2d(shape, dtype):
    a = uniform(4, shape).astype(dtype)
    out = transpose_load(a)
    assert out.dtype == dtype
    np.testing.assert_array_equal(out, a.T)


@nki.jit
def transpose_load_bf16(a):
    """a stored as bfloat16 in HBM scratch, then read back transposed."""
    scratch = nl.ndarray(a.shape, dtype=nl.bfloat16, buffer=nl.hbm)
    nl.store(scratch, nl.load(a, dtype=nl.bfloat16))
    t = nl.load_transpose2d(scratch)
    out = nl.ndarray((a.shape[1], a.shape[0]), dtype=nl.float32,
                     buffer=nl.shared_hbm)
    nl.store(out, nl.copy(t, dtype=nl.float32))
    return out


def test_load_transpose2d_bfloat16_is_a_dma_transpose():
    a = uniform(4, (96, 128))
    assert "opcode: DMA_TRANSPOSE" in nki.trace(transpose_load_bf16, a).text
    np.testing.assert_array_equal(transpose_load_bf16(a), bf16(a).T)


@nki.jit
def copy_cast(a):
    t = nl.load(a)
    c = nl.copy(t, dtype=nl.bfloat16)
    out = nl.ndarray(a.shape, dtype=nl.float32, buffer=nl.shared_hbm)
    nl.store(out, nl.copy(c, dtype=nl.float32))
    return out


def test_copy_rounds_to_its_dtype():
    a = uniform(5, (128, 512), -100, 100)
    out = copy_cast(a)
    np.testing.assert_array_equal(out, bf16(a))
    assert not np.array_equal(out, a)  # the bf16 step did round


# --- element-wise, activations, reductions ----------------------------------

_BINARY = {
    "add": np.add, "subtract": np.subtract, "multiply": np.multiply,
    "divide": np.divide, "maximum": np.maximum, "minimum": np.minimum,
}


def _binary_kernel(name):
    op = getattr(nl, name)

    def kernel(a, b):
        x, y = nl.load(a), nl.load(b)
        out = nl.ndarray((a.shape[0], 4 * a.shape[1]), dtype=a.dtype,
                         buffer=nl.shared_hbm)
        n = a.shape[1]
        col = nl.load(b[:, 0:1])
        nl.store(out[:, 0:n], op(x, y))  # two tiles: tensor_tensor
        nl.store(out[:, n:2 * n], op(x, 0.5))  # a number: tensor_scalar
        nl.store(out[:, 2 * n:3 * n], op(2.0, y))  # number first
        nl.store(out[:, 3 * n:4 * n], op(x, col))  # a [P, 1] column
        return out
    return kernel


@pytest.mark.parametrize("name", sorted(_BINARY))
@pytest.mark.parametrize("shape", [(128, 512), (1, 7), (5, 1)])
def test_binary_ops(name, shape):
    a = uniform(6, shape)
    b = uniform(7, shape, 0.5, 2.0)
    out = nki.simulate_kernel(_binary_kernel(name), a, b)
    f = _BINARY[name]
    want = np.concatenate([f(a, b), f(a, np.float32(0.5)),
                           f(np.float32(2.0), b), f(a, b[:, 0:1])], axis=1)
    np.testing.assert_allclose(out, want, rtol=1e-6, atol=1e-7)


@nki.jit
def row_broadcast(a, row):
    """a [P, F] plus and times a [1, F] row, broadcast over the
    partitions (NKI's nl.add example)."""
    x, r = nl.load(a), nl.load(row)
    out = nl.ndarray((2,) + a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
    nl.store(out[0], nl.add(x, r))
    nl.store(out[1], r * x)
    return out


@pytest.mark.parametrize("shape", [(128, 512), (5, 1), (1, 3)])
def test_partition_broadcast_of_a_row(shape):
    a, row = uniform(34, shape), uniform(35, (1, shape[1]))
    np.testing.assert_allclose(row_broadcast(a, row),
                               np.stack([a + row, a * row]), rtol=1e-6)


def _erf(x):
    return np.vectorize(math.erf)(x.astype(np.float64))


_UNARY = {
    "exp": (np.exp, (-3, 3)),
    "log": (np.log, (0.01, 10)),
    "rsqrt": (lambda x: 1 / np.sqrt(x), (0.01, 10)),
    "sqrt": (np.sqrt, (0, 10)),
    "square": (np.square, (-4, 4)),
    "abs": (np.abs, (-4, 4)),
    "tanh": (np.tanh, (-4, 4)),
    "sigmoid": (lambda x: 1 / (1 + np.exp(-x)), (-8, 8)),
    "silu": (lambda x: x / (1 + np.exp(-x)), (-8, 8)),
    "gelu": (lambda x: 0.5 * x * (1 + _erf(x / np.sqrt(2))), (-4, 4)),
    "relu": (lambda x: np.maximum(x, 0), (-4, 4)),
}


@pytest.mark.parametrize("name", sorted(_UNARY))
def test_activation_functions(name):
    f, (lo, hi) = _UNARY[name]
    op = getattr(nl, name)

    def kernel(a):
        out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
        nl.store(out, op(nl.load(a)))
        return out

    a = uniform(8, (128, 512), lo, hi)
    g = nki.trace(kernel, a)
    assert "opcode: ACTIVATION" in g.text  # on the Scalar Engine
    out = nki.simulate_kernel(kernel, a)
    np.testing.assert_allclose(out, f(a.astype(np.float64)), rtol=2e-6,
                               atol=2e-6)


@nki.jit
def reductions(a):
    """sum, max, min, mean of a [P, F] tile along axis 1, and of its
    [P, 4, F/4] view along axes (1, 2)."""
    p, f = a.shape
    t = nl.load(a)
    out = nl.ndarray((p, 5), dtype=a.dtype, buffer=nl.shared_hbm)
    nl.store(out[:, 0:1], nl.sum(t, axis=1, keepdims=True))
    nl.store(out[:, 1:2], nl.max(t, axis=[1], keepdims=True))
    nl.store(out[:, 2:3], nl.min(t, axis=1, keepdims=True))
    nl.store(out[:, 3:4], nl.mean(t, axis=1, keepdims=True))
    t3 = nl.load(a.reshape((p, 4, f // 4)))
    s3 = nl.sum(t3, axis=(1, 2))
    assert s3.shape == (p,)
    nl.store(out[:, 4:5], s3.reshape((p, 1)))
    return out


@pytest.mark.parametrize("shape", [(128, 512), (1, 4), (3, 8)])
def test_reductions(shape):
    a = uniform(9, shape)
    want = np.stack([a.sum(1), a.max(1), a.min(1), a.mean(1), a.sum(1)],
                    axis=1)
    # float32 sums of 512 terms in another order: 1e-4 absolute.
    np.testing.assert_allclose(reductions(a), want, rtol=1e-5, atol=1e-4)


@pytest.mark.parametrize("shape,axis", [
    ((128, 1), 1), ((128, 4, 1), 2), ((128, 4, 1), (1, 2)),
    ((1, 4, 1), (1, 2)), ((128, 1, 4), (1, 2)), ((3, 1, 1), (1, 2))])
@pytest.mark.parametrize("keepdims", [False, True])
def test_reductions_over_size_one_axes(shape, axis, keepdims):
    def kernel(a):
        t = nl.load(a)
        mx = nl.max(t, axis=axis, keepdims=keepdims)
        s = nl.sum(t, axis=axis, keepdims=keepdims)
        out = nl.ndarray((2,) + s.shape, dtype=a.dtype, buffer=nl.shared_hbm)
        nl.store(out[0], mx)
        nl.store(out[1], s)
        return out

    a = uniform(9, shape)
    want = np.stack([a.max(axis=axis, keepdims=keepdims),
                     a.sum(axis=axis, keepdims=keepdims)])
    np.testing.assert_allclose(nki.simulate_kernel(kernel, a), want,
                               rtol=1e-6)


def test_reduction_over_the_partition_axis_is_refused():
    def kernel(a):
        return nl.sum(nl.load(a), axis=0)

    with pytest.raises(nkigraph.Error, match="partition dim"):
        nki.trace(kernel, (128, 4))


# --- matmul, transpose ---------------------------------------------------

@nki.jit
def matmul_k_loop(a_t, b):
    """a_t [K, M] (already transposed), b [K, N]: out = a_t.T @ b, summed
    over K in 128-row steps in SBUF."""
    k, m = a_t.shape
    n = b.shape[1]
    acc = nl.zeros((m, n), dtype=nl.float32, buffer=nl.sbuf)
    for kk in nl.affine_range(k // 128):
        lhs = nl.load(a_t[kk * 128:(kk + 1) * 128, :])
        rhs = nl.load(b[kk * 128:(kk + 1) * 128, :])
        acc += nl.matmul(lhs, rhs, transpose_x=True)
    out = nl.ndarray((m, n), dtype=nl.float32, buffer=nl.shared_hbm)
    nl.store(out, acc)
    return out


def test_matmul_transpose_x_over_a_k_loop():
    a = uniform(10, (128, 512))  # [M, K]
    b = uniform(11, (512, 512))
    out = matmul_k_loop(np.ascontiguousarray(a.T), b)
    np.testing.assert_allclose(out, a.astype(np.float64) @ b, rtol=1e-4,
                               atol=1e-4)


@nki.jit
def matmul_psum_plus_equals(a_t, b):
    """The tutorials' form: res_psum += nl.matmul(..., transpose_x=True)
    over K, the PSUM tile from nl.zeros, with a partial last K tile."""
    k, m = a_t.shape
    n = b.shape[1]
    res_psum = nl.zeros((m, n), nl.float32, buffer=nl.psum)
    for kk in nl.affine_range((k + 127) // 128):
        rows = min(128, k - kk * 128)
        lhs = nl.load(a_t[kk * 128:kk * 128 + rows, :])
        rhs = nl.load(b[kk * 128:kk * 128 + rows, :])
        res_psum += nl.matmul(lhs, rhs, transpose_x=True)
    out = nl.ndarray((m, n), dtype=nl.float32, buffer=nl.shared_hbm)
    nl.store(out, nl.copy(res_psum, dtype=nl.float32))
    return out


@pytest.mark.parametrize("k", [512, 300, 1])
def test_matmul_accumulates_in_psum_through_plus_equals(k):
    a, b = uniform(32, (128, k)), uniform(33, (k, 512))
    a_t = np.ascontiguousarray(a.T)
    text = nki.trace(matmul_psum_plus_equals, a_t, b).text
    # One accumulating nc_matmul per K tile, no PSUM-to-PSUM add.
    assert text.count("opcode: NC_MATMUL") == (k + 127) // 128
    assert "opcode: TENSOR_TENSOR" not in text
    np.testing.assert_allclose(matmul_psum_plus_equals(a_t, b),
                               a.astype(np.float64) @ b, rtol=1e-4,
                               atol=1e-4)


@nki.jit
def matmul_plain(a, b):
    """a [M, K] @ b [K, N], nl.matmul transposing a itself."""
    out = nl.ndarray((a.shape[0], b.shape[1]), dtype=nl.float32,
                     buffer=nl.shared_hbm)
    nl.store(out, nl.matmul(nl.load(a), nl.load(b), transpose_x=False))
    return out


@pytest.mark.parametrize("m,k,n", [(128, 128, 512), (1, 128, 1),
                                   (64, 1, 16), (7, 33, 5)])
def test_matmul_without_transpose_x(m, k, n):
    a, b = uniform(12, (m, k)), uniform(13, (k, n))
    g = nki.trace(matmul_plain, a, b)
    assert "opcode: NC_TRANSPOSE" in g.text and "opcode: NC_MATMUL" in g.text
    np.testing.assert_allclose(matmul_plain(a, b), a.astype(np.float64) @ b,
                               rtol=1e-5, atol=1e-5)


@nki.jit
def transposes(a):
    t = nl.load(a)
    out = nl.ndarray((a.shape[1], 2 * a.shape[0]), dtype=a.dtype,
                     buffer=nl.shared_hbm)
    nl.store(out[:, 0:a.shape[0]], nl.transpose(t))
    nl.store(out[:, a.shape[0]:], t.T)
    return out


@pytest.mark.parametrize("shape", [(128, 128), (1, 64), (64, 1), (32, 100)])
def test_transpose(shape):
    a = uniform(14, shape)
    np.testing.assert_array_equal(transposes(a), np.concatenate([a.T, a.T],
                                                                axis=1))


@nki.jit
def bf16_transpose_and_matmul(a, b):
    """a [M, K], b [K, N] as bfloat16 tiles: a.T (nl.transpose) and a @ b
    (nl.matmul, which transposes a itself)."""
    x = nl.load(a, dtype=nl.bfloat16)
    y = nl.load(b, dtype=nl.bfloat16)
    xt = nl.transpose(x)
    assert xt.dtype == nl.bfloat16
    out_t = nl.ndarray((a.shape[1], a.shape[0]), dtype=nl.float32,
                       buffer=nl.shared_hbm)
    nl.store(out_t, nl.copy(xt, dtype=nl.float32))
    out = nl.ndarray((a.shape[0], b.shape[1]), dtype=nl.float32,
                     buffer=nl.shared_hbm)
    nl.store(out, nl.matmul(x, y))
    return out_t, out


def test_transpose_and_matmul_of_bfloat16_tiles():
    a, b = uniform(30, (128, 128)), uniform(31, (128, 512))
    out_t, out = bf16_transpose_and_matmul(a, b)
    np.testing.assert_array_equal(out_t, bf16(a).T)
    np.testing.assert_allclose(out, bf16(a).astype(np.float64) @ bf16(b),
                               rtol=1e-4, atol=1e-4)


# --- Python operators and numpy ufuncs -------------------------------------

@nki.jit
def operators(a, b):
    x, y = nl.load(a), nl.load(b)
    out = nl.ndarray((6,) + a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
    nl.store(out[0], x + y * 2.0)
    nl.store(out[1], (x - y) / y)
    nl.store(out[2], 1.0 - x)
    nl.store(out[3], -x)
    acc = nl.zeros(a.shape, dtype=nl.float32)
    acc[...] += x
    acc[...] += y
    acc *= 0.5
    nl.store(out[4], acc)
    half = nl.ndarray(a.shape, dtype=nl.float32)
    half[:, 0:a.shape[1] // 2] = x[:, 0:a.shape[1] // 2]
    half[:, a.shape[1] // 2:] = 9.0
    nl.store(out[5], half)
    return out


def test_python_operators_and_in_place_updates():
    a, b = uniform(15, (128, 512)), uniform(16, (128, 512), 0.5, 2)
    half = np.concatenate([a[:, :256], np.full((128, 256), 9.0)], axis=1)
    want = np.stack([a + b * 2, (a - b) / b, 1 - a, -a, (a + b) * 0.5, half])
    np.testing.assert_allclose(operators(a, b), want, rtol=1e-6, atol=1e-6)


@nki.jit
def ufuncs(a, b):
    x, y = nl.load(a), nl.load(b)
    p = a.shape[0]
    out = nl.ndarray((p, 2 * a.shape[1] + 2), dtype=a.dtype,
                     buffer=nl.shared_hbm)
    f = a.shape[1]
    nl.store(out[:, 0:f], nisa.tensor_tensor(x, y, op=np.add))
    nl.store(out[:, f:2 * f], nisa.tensor_tensor(x, y, op=np.multiply))
    nl.store(out[:, 2 * f:2 * f + 1],
             nisa.tensor_reduce(np.max, x, axis=1, keepdims=True))
    nl.store(out[:, 2 * f + 1:], nisa.tensor_reduce(np.min, x, axis=(1,),
                                                    keepdims=True))
    return out


def test_numpy_ufuncs_as_op():
    a, b = uniform(17, (128, 512)), uniform(18, (128, 512))
    want = np.concatenate([a + b, a * b, a.max(1, keepdims=True),
                           a.min(1, keepdims=True)], axis=1)
    np.testing.assert_allclose(ufuncs(a, b), want, rtol=1e-6)


# --- indices and loops --------------------------------------------------

@nki.jit
def index_forms(a):
    """Rows reversed in 4 blocks of 32 (mgrid with offsets), every second
    column (a strided slice), a column by nl.ds, and the grid's .p/.x."""
    out = nl.ndarray((128, 64 + 1 + 128), dtype=a.dtype, buffer=nl.shared_hbm)
    for blk in nl.static_range(4):
        i_p, i_f = nl.mgrid[0:32, 0:128:2]
        t = nl.load(a[(3 - blk) * 32 + i_p, i_f])
        nl.store(out[blk * 32 + i_p, nl.arange(64)[None, :]], t)
    nl.store(out[:, 64:65], nl.load(a[:, nl.ds(5, 1)]))
    g = nl.mgrid[0:128, 0:128]
    nl.store(out[g.p, 65 + g.x], nl.load(a[g.p, g.x]))
    return out


def test_index_expressions_slices_and_ds():
    a = uniform(19, (128, 128))
    rev_blocks = np.concatenate([a[96:128, 0:128:2], a[64:96, 0:128:2],
                                 a[32:64, 0:128:2], a[0:32, 0:128:2]])
    want = np.concatenate([rev_blocks, a[:, 5:6], a], axis=1)
    np.testing.assert_array_equal(index_forms(a), want)


@nki.jit
def loop_forms(a):
    """Prefix sums of 4 column blocks: sequential_range carries the sum,
    affine_range / nl.range / static_range / Python range each copy one
    block."""
    p, f = a.shape
    w = f // 4
    out = nl.ndarray((p, 2 * f), dtype=a.dtype, buffer=nl.shared_hbm)
    run = nl.zeros((p, w), dtype=nl.float32)
    for j in nl.sequential_range(4):
        run[...] = nl.add(run, nl.load(a[:, j * w:(j + 1) * w]))
        nl.store(out[:, j * w:(j + 1) * w], run)
    loops = [nl.affine_range(0, 1), nl.range(1, 2), nl.static_range(2, 3),
             range(3, 4)]
    for loop in loops:
        for j in loop:
            nl.store(out[:, f + j * w:f + (j + 1) * w],
                     nl.load(a[:, j * w:(j + 1) * w]))
    return out


def test_loop_forms():
    a = uniform(20, (128, 512))
    blocks = np.split(a, 4, axis=1)
    prefix = np.concatenate(list(np.cumsum(np.stack(blocks), axis=0)), axis=1)
    np.testing.assert_allclose(loop_forms(a), np.concatenate([prefix, a], 1),
                               rtol=1e-6, atol=1e-6)


def test_tile_size():
    assert nl.tile_size.pmax == 128
    assert nl.tile_size.psum_fmax == 512
    assert nl.tile_size.gemm_stationary_fmax == 128
    assert nl.tile_size.gemm_moving_fmax == 512


@nki.jit
def tiled_by_tile_size(a_t, b):
    """a_t.T @ b in tiles of tile_size: M by gemm_stationary_fmax, N by
    gemm_moving_fmax, K by pmax, accumulated in PSUM."""
    k, m = a_t.shape
    n = b.shape[1]
    tm = nl.tile_size.gemm_stationary_fmax
    tn = nl.tile_size.gemm_moving_fmax
    tk = nl.tile_size.pmax
    out = nl.ndarray((m, n), dtype=nl.float32, buffer=nl.shared_hbm)
    for i in nl.affine_range(m // tm):
        for j in nl.affine_range(n // tn):
            ps = nl.zeros((tm, tn), nl.float32, buffer=nl.psum)
            for kk in nl.affine_range(k // tk):
                lhs = nl.load(a_t[kk * tk:(kk + 1) * tk, i * tm:(i + 1) * tm])
                rhs = nl.load(b[kk * tk:(kk + 1) * tk, j * tn:(j + 1) * tn])
                nisa.nc_matmul(dst=ps, stationary=lhs, moving=rhs)
            nl.store(out[i * tm:(i + 1) * tm, j * tn:(j + 1) * tn], ps)
    return out


def test_tiles_of_tile_size_accumulate_in_psum():
    a = uniform(21, (256, 384))  # [M, K]
    b = uniform(22, (384, 1024))
    g = nki.trace(tiled_by_tile_size, np.ascontiguousarray(a.T), b)
    assert g.text.count("opcode: NC_MATMUL") == 2 * 2 * 3
    out = tiled_by_tile_size(np.ascontiguousarray(a.T), b)
    np.testing.assert_allclose(out, a.astype(np.float64) @ b, rtol=1e-4,
                               atol=1e-4)


@nki.jit
def loop_reduced(a):
    """The max over 4 column blocks (nl.loop_reduce with np.maximum) and
    their sum (with nl.add)."""
    p, f = a.shape
    w = f // 4
    out = nl.ndarray((p, 2 * w), dtype=a.dtype, buffer=nl.shared_hbm)
    for j in nl.affine_range(4):
        t = nl.load(a[:, j * w:(j + 1) * w])
        mx = nl.loop_reduce(t, op=np.maximum, loop_indices=[j])
        sm = nl.loop_reduce(t, op=nl.add, loop_indices=[j])
    nl.store(out[:, 0:w], mx)
    nl.store(out[:, w:], sm)
    return out


def test_loop_reduce():
    a = uniform(23, (128, 512))
    blocks = np.stack(np.split(a, 4, axis=1))
    want = np.concatenate([blocks.max(0), blocks.sum(0)], axis=1)
    np.testing.assert_allclose(loop_reduced(a), want, rtol=1e-6, atol=1e-6)


_TABLE = np.arange(128 * 4, dtype=np.float32).reshape(128, 4) / 7.0


@nki.jit
def with_constant(a):
    c = nl.shared_constant(_TABLE)
    out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
    nl.store(out, nl.load(a) * nl.load(c))
    return out


def test_shared_constant():
    a = uniform(24, (128, 4))
    np.testing.assert_allclose(with_constant(a), a * _TABLE, rtol=1e-6)
    g = nki.trace(with_constant, a)
    assert [i["name"] for i in g.inputs] == ["a", "constant"]


# --- dtypes --------------------------------------------------------------

@nki.jit
def round_trip(a, through):
    """a (float32) through a tile of dtype `through` and back."""
    t = nl.load(a)
    narrow = nl.copy(t, dtype=through)
    out = nl.ndarray(a.shape, dtype=nl.float32, buffer=nl.shared_hbm)
    nl.store(out, nl.copy(narrow, dtype=nl.float32))
    return out


def test_float_dtypes_round_as_the_device_stores():
    a = uniform(25, (128, 512), -50, 50)
    np.testing.assert_array_equal(round_trip(a, nl.float32), a)
    np.testing.assert_array_equal(round_trip(a, nl.bfloat16), bf16(a))
    np.testing.assert_array_equal(round_trip(a, nl.float16), fp16(a))
    # float8_e4m3: 3 mantissa bits. Exact values stay; 1.1 lies between
    # 1.0 and 1.125, nearer the latter; from 16 the step is 2, so 17.5
    # goes to 18 and 17, halfway, to the even mantissa: 16 (1.000b x 2^4;
    # 18 is 1.001b). trn2's format tops out at 240: 300 saturates.
    e4 = np.array([[0.0, 1.0, -2.5, 1.1, 17.5, 17.0, -240.0, 300.0]],
                  np.float32)
    want = np.array([[0.0, 1.0, -2.5, 1.125, 18.0, 16.0, -240.0, 240.0]],
                    np.float32)
    np.testing.assert_array_equal(round_trip(e4, nl.float8_e4m3), want)


def test_float8_e5m2_is_not_an_nkigraph_dtype():
    with pytest.raises(NotImplementedError, match="float8_e5m2"):
        round_trip(np.ones((4, 4), np.float32), nl.float8_e5m2)


@nki.jit
def int_arith(a, b):
    out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
    nl.store(out, nl.add(nl.load(a), nl.load(b)))
    return out


@pytest.mark.parametrize("dtype,lo,hi", [(np.int8, -60, 60),
                                         (np.uint8, 0, 120),
                                         (np.int32, -10**6, 10**6),
                                         (np.uint32, 0, 10**6)])
def test_integer_dtypes(dtype, lo, hi):
    r = np.random.default_rng(26)
    a = r.integers(lo, hi, (128, 64)).astype(dtype)
    b = r.integers(lo, hi, (128, 64)).astype(dtype)
    out = int_arith(a, b)
    assert out.dtype == dtype
    np.testing.assert_array_equal(out, a + b)


def test_bfloat16_tiles_in_arithmetic():
    @nki.jit
    def kernel(a, b):
        x = nl.load(a, dtype=nl.bfloat16)
        y = nl.load(b, dtype=nl.bfloat16)
        out = nl.ndarray(a.shape, dtype=nl.float32, buffer=nl.shared_hbm)
        nl.store(out, nl.multiply(x, y, dtype=nl.float32))
        return out

    a, b = uniform(27, (128, 512)), uniform(28, (128, 512))
    np.testing.assert_allclose(kernel(a, b), bf16(a) * bf16(b), rtol=1e-6)


# --- more masks, shapes and kernel forms -----------------------------------

def add_into_output(a_input, b_input, c_output):
    """The older samples' form: the output is a parameter, written by
    nl.store; the kernel returns nothing."""
    nl.store(c_output, nl.add(nl.load(a_input), nl.load(b_input)))


def test_output_passed_as_a_parameter_is_written_in_place():
    a, b = uniform(40, (128, 512)), uniform(41, (128, 512))
    c = np.zeros_like(a)
    assert nki.simulate_kernel(add_into_output, a, b, c) is None
    np.testing.assert_allclose(c, a + b, rtol=1e-6)
    g = nki.trace(add_into_output, a, b, c)
    assert [o["name"] for o in g.outputs] == ["c_output"]


@nki.jit
def masked_ranges(a, col):
    """Masks with a lower bound (rows 64.. doubled), on the free dim (the
    first 5 columns exponentiated), and on ISA calls and a reduction over a
    partial tile of n < 128 rows."""
    n, f = a.shape
    out = nl.ndarray((5, 128, f), dtype=a.dtype, buffer=nl.shared_hbm)
    i_p = nl.arange(128)[:, None]
    i_f = nl.arange(f)[None, :]
    rows = i_p < n
    t = nl.load(a[i_p, i_f], mask=rows)
    c = nl.load(col[i_p, nl.arange(1)[None, :]], mask=rows)
    upper = i_p >= 64
    nl.store(out[0, i_p, i_f], nl.zeros((128, f), dtype=nl.float32))
    nl.store(out[0, i_p, i_f], nl.multiply(t, 2.0, mask=upper & rows),
             mask=upper & rows)
    nl.store(out[1, i_p, i_f], nl.zeros((128, f), dtype=nl.float32))
    first5 = i_f < 5
    nl.store(out[1, i_p, i_f], nl.exp(t, mask=rows & first5),
             mask=rows & first5)
    e = nisa.activation(op=nl.exp, data=t, bias=c, scale=2.0, mask=rows)
    nl.store(out[2, i_p, i_f], e, mask=rows)
    s = nisa.tensor_scalar(t, nl.multiply, c, mask=rows)
    nl.store(out[3, i_p, i_f], s, mask=rows)
    total = nl.sum(t, axis=1, mask=rows, keepdims=True)
    nl.store(out[4, i_p, nl.arange(1)[None, :]], total, mask=rows)
    return out


@pytest.mark.parametrize("n", [100, 128, 65])
def test_masks_on_rows_columns_and_isa_calls(n):
    a, col = uniform(42, (n, 8)), uniform(43, (n, 1))
    out = masked_ranges(a, col)[:, :n]
    upper = a.copy() * 0
    upper[64:] = 2 * a[64:]
    first5 = np.zeros_like(a)
    first5[:, :5] = np.exp(a[:, :5])
    np.testing.assert_allclose(out[0], upper, rtol=1e-6)
    np.testing.assert_allclose(out[1], first5, rtol=1e-6)
    np.testing.assert_allclose(out[2], np.exp(2 * a.astype(np.float64) + col),
                               rtol=1e-6)
    np.testing.assert_allclose(out[3], a * col, rtol=1e-6)
    np.testing.assert_allclose(out[4][:, 0], a.sum(1), rtol=1e-5, atol=1e-6)


@nki.jit
def three_d(a):
    """A [P, 4, 8] tile through mgrid's three variables, an activation,
    comparisons and a power."""
    i_p, i_a, i_b = nl.mgrid[0:a.shape[0], 0:a.shape[1], 0:a.shape[2]]
    t = nl.load(a[i_p, i_a, i_b])
    out = nl.ndarray((3,) + a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
    nl.store(out[0, i_p, i_a, i_b], nl.exp(t) + t)
    nl.store(out[1], (t < 0.25) + (t >= 0.75))
    nl.store(out[2], t ** 2.0)
    return out


@pytest.mark.parametrize("shape", [(128, 4, 8), (1, 1, 3)])
def test_tiles_with_two_free_dims(shape):
    a = uniform(44, shape, 0, 1)
    want = np.stack([np.exp(a.astype(np.float64)) + a,
                     (a < 0.25).astype(np.float32) + (a >= 0.75), a ** 2])
    np.testing.assert_allclose(three_d(a), want, rtol=1e-6, atol=1e-7)
