"""nkigraph.nki.isa: every instruction in both of NKI's calling forms (the
older one returning a new tile, with masks; the newer one writing an
explicit dst, data moved by nisa.dma_copy), against numpy: nc_matmul with
PSUM accumulation over a K loop, nc_transpose, activation (number and
column scale, bias tile, reduce), activation_reduce, tensor_tensor,
tensor_scalar, tensor_reduce, tensor_copy, scalar_tensor_tensor,
affine_select, iota, memset, dma_copy, dma_transpose, get_nc_version."""
import numpy as np
import pytest

import nkigraph.nki as nki
import nkigraph.nki.isa as nisa
import nkigraph.nki.language as nl
from nki_helpers import bf16, uniform


def _load(src, dtype=None):
    """src (HBM) into a new SBUF tile by nisa.dma_copy (the newer form)."""
    t = nl.ndarray(src.shape, dtype=dtype or src.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=t, src=src)
    return t


def _out(shape, dtype=nl.float32):
    return nl.ndarray(shape, dtype=dtype, buffer=nl.shared_hbm)


# --- nc_matmul ---------------------------------------------------------------

@nki.jit
def matmul_psum_k_loop(a_t, b):
    """a_t [K, M], b [K, N]: a_t.T @ b, K in 128-row steps, accumulated in
    one PSUM tile by the newer form's dst (the first matmul overwrites the
    fresh PSUM, the rest accumulate)."""
    k, m = a_t.shape
    n = b.shape[1]
    ps = nl.ndarray((m, n), dtype=nl.float32, buffer=nl.psum)
    for kk in nl.affine_range((k + 127) // 128):
        rows = min(128, k - kk * 128)
        lhs = _load(a_t[kk * 128:kk * 128 + rows, :])
        rhs = _load(b[kk * 128:kk * 128 + rows, :])
        nisa.nc_matmul(dst=ps, stationary=lhs, moving=rhs)
    res = nl.ndarray((m, n), dtype=nl.float32, buffer=nl.sbuf)
    nisa.tensor_copy(dst=res, src=ps)
    out = _out((m, n))
    nisa.dma_copy(dst=out, src=res)
    return out


@nki.jit
def matmul_plus_equals_k_loop(a_t, b):
    """The older form's accumulation: ps += nisa.nc_matmul(...) over K
    into a PSUM tile from nl.zeros."""
    k, m = a_t.shape
    n = b.shape[1]
    ps = nl.zeros((m, n), dtype=nl.float32, buffer=nl.psum)
    for kk in nl.affine_range((k + 127) // 128):
        rows = min(128, k - kk * 128)
        ps += nisa.nc_matmul(nl.load(a_t[kk * 128:kk * 128 + rows, :]),
                             nl.load(b[kk * 128:kk * 128 + rows, :]))
    out = _out((m, n))
    nl.store(out, ps)
    return out


@pytest.mark.parametrize("m,k,n", [(128, 512, 512), (128, 200, 64),
                                   (1, 128, 1), (5, 1, 3)])
def test_nc_matmul_accumulates_over_k_in_psum(m, k, n):
    a, b = uniform(1, (m, k)), uniform(2, (k, n))
    want = a.astype(np.float64) @ b
    for kernel in (matmul_psum_k_loop, matmul_plus_equals_k_loop):
        out = kernel(np.ascontiguousarray(a.T), b)
        np.testing.assert_allclose(out, want, rtol=1e-4, atol=1e-4)


@nki.jit
def matmul_returned_tiles(a_t, b):
    """The older form: each nc_matmul returns a new PSUM tile, summed into
    an SBUF accumulator; a second product with accumulate=False written
    over an explicit PSUM tile twice keeps only the last."""
    k, m = a_t.shape
    n = b.shape[1]
    acc = nl.zeros((m, n), dtype=nl.float32)
    for kk in nl.affine_range(k // 128):
        lhs = nl.load(a_t[kk * 128:(kk + 1) * 128, :])
        rhs = nl.load(b[kk * 128:(kk + 1) * 128, :])
        acc[...] = nl.add(acc, nisa.nc_matmul(lhs, rhs))
    last = nl.ndarray((m, n), dtype=nl.float32, buffer=nl.psum)
    for kk in nl.affine_range(k // 128):
        lhs = nl.load(a_t[kk * 128:(kk + 1) * 128, :])
        rhs = nl.load(b[kk * 128:(kk + 1) * 128, :])
        nisa.nc_matmul(last, lhs, rhs, accumulate=False)
    out = _out((2, m, n))
    nl.store(out[0], acc)
    nl.store(out[1], last)
    return out


def test_nc_matmul_returned_tiles_and_accumulate_false():
    a, b = uniform(3, (128, 256)), uniform(4, (256, 512))
    out = matmul_returned_tiles(np.ascontiguousarray(a.T), b)
    a64, b64 = a.astype(np.float64), b.astype(np.float64)
    np.testing.assert_allclose(out[0], a64 @ b64, rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(out[1], a64[:, 128:] @ b64[128:], rtol=1e-4,
                               atol=1e-4)


# --- nc_transpose --------------------------------------------------------

@nki.jit
def transposes(a, small):
    t = nl.load(a)
    out = _out((a.shape[1], a.shape[0]))
    nl.store(out, nisa.nc_transpose(t))  # Tensor Engine, into PSUM
    s = _load(small)
    st = nl.ndarray((small.shape[1], small.shape[0]), dtype=small.dtype,
                    buffer=nl.sbuf)
    nisa.nc_transpose(dst=st, data=s, engine=nisa.engine.vector)
    out2 = _out(st.shape)
    nisa.dma_copy(dst=out2, src=st)
    return out, out2


@pytest.mark.parametrize("shape,small", [((128, 128), (32, 32)),
                                         ((100, 7), (3, 20)),
                                         ((1, 128), (1, 1))])
def test_nc_transpose_on_both_engines(shape, small):
    a, s = uniform(5, shape), uniform(6, small)
    out, out2 = transposes(a, s)
    np.testing.assert_array_equal(out, a.T)
    np.testing.assert_array_equal(out2, s.T)


# --- activation, activation_reduce ------------------------------------------

@nki.jit
def activations(a, col):
    """exp(a * 0.5 + 0.25); tanh(a * col + col) with a [P, 1] scale and
    bias tile, in the newer form; and the first's row sums through
    activation's reduce_res."""
    x = nl.load(a)
    c = nl.load(col)
    p, f = a.shape
    out = _out((p, 2 * f + 1))
    sums = nl.ndarray((p, 1), dtype=nl.float32)
    e = nisa.activation(op=nl.exp, data=x, scale=0.5, bias=nl.full(
        (p, 1), 0.25, dtype=nl.float32), reduce_op=nl.add, reduce_res=sums)
    nl.store(out[:, 0:f], e)
    th = nl.ndarray((p, f), dtype=nl.float32)
    nisa.activation(dst=th, op=np.tanh, data=x, scale=c, bias=c)
    nl.store(out[:, f:2 * f], th)
    nl.store(out[:, 2 * f:], sums)
    return out


@pytest.mark.parametrize("shape", [(128, 512), (1, 1), (128, 1)])
def test_activation_scale_bias_and_reduce(shape):
    a = uniform(7, shape)
    col = uniform(8, (shape[0], 1), 0.5, 1.5)
    e = np.exp(a.astype(np.float64) * 0.5 + 0.25)
    want = np.concatenate([e, np.tanh(a * col + col), e.sum(1,
                                                            keepdims=True)], 1)
    np.testing.assert_allclose(activations(a, col), want, rtol=1e-5,
                               atol=1e-5)


@nki.jit
def act_reduce(a):
    """relu(a) and its row sums, by activation_reduce in both forms."""
    p, f = a.shape
    x = nl.load(a)
    s1 = nl.ndarray((p, 1), dtype=nl.float32)
    r1 = nisa.activation_reduce(op=nl.relu, data=x, reduce_op=np.add,
                                reduce_res=s1)
    s2 = nl.ndarray((p, 1), dtype=nl.float32)
    r2 = nl.ndarray((p, f), dtype=nl.float32)
    nisa.activation_reduce(dst=r2, op=nl.square, data=x, reduce_op=nl.add,
                           reduce_res=s2, scale=2.0)
    out = _out((p, 2 * f + 2))
    nl.store(out[:, 0:f], r1)
    nl.store(out[:, f:2 * f], r2)
    nl.store(out[:, 2 * f:2 * f + 1], s1)
    nl.store(out[:, 2 * f + 1:], s2)
    return out


@pytest.mark.parametrize("shape", [(128, 512), (1, 3)])
def test_activation_reduce(shape):
    a = uniform(9, shape)
    relu = np.maximum(a, 0)
    sq = np.square(2.0 * a.astype(np.float64))
    want = np.concatenate([relu, sq, relu.sum(1, keepdims=True),
                           sq.sum(1, keepdims=True)], 1)
    np.testing.assert_allclose(act_reduce(a), want, rtol=1e-5, atol=1e-5)


# --- tensor_tensor, tensor_scalar, scalar_tensor_tensor ---------------------

@nki.jit
def vector_ops(a, b, col):
    x, y, c = _load(a), _load(b), _load(col)
    p, f = a.shape
    out = _out((8, p, f))
    nl.store(out[0], nisa.tensor_tensor(x, y, nl.subtract))
    r = nl.ndarray((p, f), dtype=nl.float32)
    nisa.tensor_tensor(dst=r, data1=x, data2=y, op=np.maximum)
    nisa.dma_copy(dst=out[1], src=r)
    # tensor_scalar: a number, a column, two ops, reversed operands.
    nl.store(out[2], nisa.tensor_scalar(x, np.multiply, 3.0))
    nl.store(out[3], nisa.tensor_scalar(x, nl.subtract, c, reverse0=True))
    ts = nl.ndarray((p, f), dtype=nl.float32)
    nisa.tensor_scalar(dst=ts, data=x, op0=nl.add, operand0=c,
                       op1=nl.divide, operand1=4.0, reverse1=True)
    nl.store(out[4], ts)
    nl.store(out[5], nisa.tensor_scalar(x, nl.multiply, c, op1=nl.maximum,
                                        operand1=0.0))
    # scalar_tensor_tensor: (data op0 operand0) op1 operand1.
    nl.store(out[6], nisa.scalar_tensor_tensor(
        data=x, op0=nl.multiply, operand0=c, op1=nl.add, operand1=y))
    st = nl.ndarray((p, f), dtype=nl.float32)
    nisa.scalar_tensor_tensor(dst=st, data=x, op0=nl.subtract, operand0=2.0,
                              op1=nl.subtract, operand1=y, reverse0=True,
                              reverse1=True)
    nl.store(out[7], st)
    return out


@pytest.mark.parametrize("shape", [(128, 512), (1, 1), (7, 1), (1, 9)])
def test_tensor_tensor_tensor_scalar_scalar_tensor_tensor(shape):
    a, b = uniform(10, shape), uniform(11, shape)
    c = uniform(12, (shape[0], 1), 0.5, 2)
    want = np.stack([a - b, np.maximum(a, b), a * 3, c - a, 4 / (a + c),
                     np.maximum(a * c, 0), a * c + b, y_minus(b, 2 - a)])
    np.testing.assert_allclose(vector_ops(a, b, c), want, rtol=1e-6,
                               atol=1e-6)


def y_minus(y, t):
    """reverse1: operand1 - (the first op's result)."""
    return y - t


# --- tensor_reduce, tensor_copy ---------------------------------------------

@nki.jit
def reduce_and_copy(a):
    p, f = a.shape
    x = nl.load(a)
    out = _out((p, f + 3))
    nl.store(out[:, 0:1], nisa.tensor_reduce(np.add, x, axis=1,
                                             keepdims=True))
    neg = nl.ndarray((p, 1), dtype=nl.float32)
    nisa.tensor_reduce(dst=neg, op=nl.max, data=x, axis=(1,), negate=True,
                       keepdims=True)
    nl.store(out[:, 1:2], neg)
    three = x.reshape((p, 2, f // 2)) if f % 2 == 0 else x.reshape((p, 1, f))
    nl.store(out[:, 2:3], nisa.tensor_reduce(nl.min, three, axis=(1, 2),
                                             keepdims=True).reshape((p, 1)))
    half = nisa.tensor_copy(x, dtype=nl.bfloat16)
    back = nl.ndarray((p, f), dtype=nl.float32)
    nisa.tensor_copy(dst=back, src=half, engine=nisa.engine.scalar)
    nl.store(out[:, 3:], back)
    return out


@pytest.mark.parametrize("shape", [(128, 512), (1, 2), (128, 1)])
def test_tensor_reduce_and_tensor_copy(shape):
    a = uniform(13, shape)
    want = np.concatenate([a.sum(1, keepdims=True), -a.max(1, keepdims=True),
                           a.min(1, keepdims=True), bf16(a)], 1)
    np.testing.assert_allclose(reduce_and_copy(a), want, rtol=1e-5,
                               atol=1e-5)


# --- iota, affine_select, memset ------------------------------------------

@nki.jit
def index_tiles(a):
    """iota of i_p * 1000 + 2 * i_f (older form) and of i_f - i_p (newer);
    a causal mask by affine_select (i_p - i_f >= 0 keeps a); memset in
    both forms."""
    p, f = a.shape
    i_p, i_f = nl.mgrid[0:p, 0:f]
    out = _out((5, p, f))
    io = nisa.iota(i_p * 1000 + 2 * i_f, dtype=nl.int32)
    nl.store(out[0], nl.copy(io, dtype=nl.float32))
    io2 = nl.ndarray((p, f), dtype=nl.float32)
    nisa.iota(dst=io2, expr=i_f - i_p)
    nl.store(out[1], io2)
    x = nl.load(a)
    nl.store(out[2], nisa.affine_select(i_p - i_f >= 0, x, -1e4))
    nl.store(out[3], nisa.memset((p, f), 7.5, nl.float32))
    m = nl.ndarray((p, f), dtype=nl.float32)
    nisa.memset(dst=m, value=-2.0)
    nl.store(out[4], m)
    return out


@pytest.mark.parametrize("shape", [(128, 512), (1, 1), (128, 1), (3, 5)])
def test_iota_affine_select_memset(shape):
    a = uniform(14, shape)
    i_p, i_f = np.mgrid[0:shape[0], 0:shape[1]]
    want = np.stack([i_p * 1000 + 2 * i_f, i_f - i_p,
                     np.where(i_p >= i_f, a, -1e4), np.full(shape, 7.5),
                     np.full(shape, -2.0)]).astype(np.float32)
    np.testing.assert_array_equal(index_tiles(a), want)


# --- dma_copy, dma_transpose -----------------------------------------------

@nki.jit
def dma_forms(a):
    """dma_copy HBM -> SBUF -> HBM with a mask on the last row tile, and
    dma_transpose (2-byte) in both forms."""
    n, f = a.shape
    out = _out((n, f))
    for i in nl.affine_range((n + 127) // 128):
        i_p = i * 128 + nl.arange(128)[:, None]
        i_f = nl.arange(f)[None, :]
        t = nl.ndarray((128, f), dtype=a.dtype, buffer=nl.sbuf)
        nisa.dma_copy(dst=t[i_p - i * 128, i_f], src=a[i_p, i_f],
                      mask=(i_p < n))
        nisa.dma_copy(out[i_p, i_f], t[i_p - i * 128, i_f], mask=(i_p < n))
    rows = min(n, 128)
    half = nl.ndarray((rows, f), dtype=nl.float16, buffer=nl.hbm)
    nl.store(half, nl.load(a[0:rows, :], dtype=nl.float16))
    tr = nisa.dma_transpose(half)
    tr2 = nl.ndarray((f, rows), dtype=nl.float16)
    nisa.dma_transpose(dst=tr2, src=half, axes=(1, 0))
    out_t = _out((2, f, rows))
    nl.store(out_t[0], nl.copy(tr, dtype=nl.float32))
    nl.store(out_t[1], nl.copy(tr2, dtype=nl.float32))
    return out, out_t


@pytest.mark.parametrize("shape", [(128, 64), (300, 32), (2, 2), (1, 8),
                                   (8, 1)])
def test_dma_copy_and_dma_transpose(shape):
    a = uniform(15, shape)
    out, out_t = dma_forms(a)
    np.testing.assert_array_equal(out, a)
    t = a[:min(shape[0], 128)].astype(np.float16).astype(np.float32).T
    np.testing.assert_array_equal(out_t, np.stack([t, t]))


def test_get_nc_version():
    assert nisa.get_nc_version() == nisa.nc_version.gen3
    assert int(nisa.get_nc_version()) == 3


# --- a kernel in the newer dialect only ------------------------------------

@nki.jit
def rms_norm(x, w):
    """x [N, D] normalised by its rows' root mean square, times w [1, D]:
    explicit destinations and dma_copy throughout, the last row tile
    partial."""
    n, d = x.shape
    out = nl.ndarray((n, d), dtype=x.dtype, buffer=nl.shared_hbm)
    wt = nl.ndarray((128, d), dtype=nl.float32, buffer=nl.sbuf)
    nisa.dma_copy(dst=wt, src=w.broadcast_to((128, d)))
    eps = nl.ndarray((128, 1), dtype=nl.float32, buffer=nl.sbuf)
    nisa.memset(dst=eps, value=1e-6)
    for i in nl.affine_range((n + 127) // 128):
        rows = min(128, n - i * 128)
        t = nl.ndarray((128, d), dtype=nl.float32, buffer=nl.sbuf)
        nisa.dma_copy(dst=t[0:rows], src=x[i * 128:i * 128 + rows])
        sq = nl.ndarray((128, d), dtype=nl.float32, buffer=nl.sbuf)
        ss = nl.ndarray((128, 1), dtype=nl.float32, buffer=nl.sbuf)
        nisa.activation_reduce(dst=sq[0:rows], op=nl.square, data=t[0:rows],
                               reduce_op=nl.add, reduce_res=ss[0:rows])
        r = nl.ndarray((128, 1), dtype=nl.float32, buffer=nl.sbuf)
        nisa.activation(dst=r[0:rows], op=nl.rsqrt, data=ss[0:rows],
                        scale=1.0 / d, bias=eps[0:rows])
        y = nl.ndarray((128, d), dtype=nl.float32, buffer=nl.sbuf)
        nisa.tensor_scalar(dst=y[0:rows], data=t[0:rows], op0=nl.multiply,
                           operand0=r[0:rows])
        nisa.tensor_tensor(dst=y[0:rows], data1=y[0:rows], data2=wt[0:rows],
                           op=nl.multiply)
        nisa.dma_copy(dst=out[i * 128:i * 128 + rows], src=y[0:rows])
    return out


@pytest.mark.parametrize("n,d", [(256, 512), (130, 64), (1, 1)])
def test_rms_norm_in_the_newer_dialect(n, d):
    x, w = uniform(16, (n, d)), uniform(17, (1, d))
    x64 = x.astype(np.float64)
    want = x64 / np.sqrt((x64 ** 2).mean(1, keepdims=True) + 1e-6) * w
    np.testing.assert_allclose(rms_norm(x, w), want, rtol=2e-5, atol=1e-5)


# --- narrow dtypes into the Tensor Engine ----------------------------------

@nki.jit
def matmul_in(a_t, b, dtype):
    """a_t.T @ b with both operands loaded as `dtype`, summed in fp32."""
    lhs = nl.load(a_t, dtype=dtype)
    rhs = nl.load(b, dtype=dtype)
    out = _out((a_t.shape[1], b.shape[1]))
    nl.store(out, nisa.nc_matmul(lhs, rhs))
    return out


@pytest.mark.parametrize("dtype", [nl.bfloat16, nl.float16,
                                   nl.float8_e4m3])
def test_nc_matmul_of_narrow_operands(dtype):
    # Halves in [-4, 4] are exact in every one of these dtypes (fp8
    # e4m3 has 3 mantissa bits), so the reference needs no rounding;
    # 1.1 is not, and shows the operands were rounded.
    r = np.random.default_rng(18)
    a = (r.integers(-8, 9, (128, 96)) / 2).astype(np.float32)
    b = (r.integers(-8, 9, (128, 256)) / 2).astype(np.float32)
    np.testing.assert_array_equal(matmul_in(a, b, dtype), a.T @ b)
    ones = np.ones((1, 1), np.float32)
    odd = matmul_in(np.full((1, 1), 1.1, np.float32), ones, dtype)
    rounded = {nl.bfloat16: bf16(np.array([1.1]))[0],
               nl.float16: np.float32(np.float16(1.1)),
               nl.float8_e4m3: np.float32(1.125)}[dtype]
    assert odd[0, 0] == rounded != np.float32(1.1)


@nki.jit
def accumulated_sums(a, b):
    """The Scalar Engine's accumulation registers across two activations:
    reset_reduce on a, then reduce on b reading out a's and b's sums."""
    x, y = nl.load(a), nl.load(b)
    p, f = a.shape
    res = nl.ndarray((p, 1), dtype=nl.float32)
    d1 = nl.ndarray((p, f), dtype=nl.float32)
    d2 = nl.ndarray((p, f), dtype=nl.float32)
    nisa.activation(dst=d1, op=nl.copy, data=x,
                    reduce_cmd=nisa.reduce_cmd.reset_reduce)
    nisa.activation(dst=d2, op=nl.copy, data=y,
                    reduce_cmd=nisa.reduce_cmd.reduce, reduce_res=res)
    out = _out((p, 1))
    nl.store(out, res)
    return out


def test_activation_reduce_cmd_accumulates_across_instructions():
    a, b = uniform(19, (128, 512)), uniform(20, (128, 512))
    np.testing.assert_allclose(accumulated_sums(a, b)[:, 0],
                               a.sum(1) + b.sum(1), rtol=1e-5, atol=1e-4)


@nki.jit
def causal_tiles(a):
    """Row tiles of a square matrix: the causal mask (row >= column, else
    -5) by affine_select and each element's flat index by iota, both with
    the tile's row offset inside the index expressions."""
    n, f = a.shape
    out = _out((2, n, f))
    for i in nl.affine_range((n + 127) // 128):
        i_p = i * 128 + nl.arange(128)[:, None]
        i_f = nl.arange(f)[None, :]
        x = nl.load(a[i_p, i_f], mask=i_p < n)
        nl.store(out[0, i_p, i_f],
                 nisa.affine_select(i_p >= i_f, x, -5.0, mask=i_p < n),
                 mask=i_p < n)
        nl.store(out[1, i_p, i_f],
                 nisa.iota(i_p * f + i_f, dtype=nl.float32, mask=i_p < n),
                 mask=i_p < n)
    return out


@pytest.mark.parametrize("n", [256, 200, 1])
def test_affine_select_and_iota_with_a_row_offset(n):
    a = uniform(21, (n, n))
    causal = np.where(np.tril(np.ones((n, n))) > 0, a, -5.0)
    want = np.stack([causal, np.arange(n * n).reshape(n, n)])
    np.testing.assert_array_equal(causal_tiles(a), want)
