"""nkigraph.nki: the ISA calls that map onto nkigraph's newer instructions
(tensor_tensor_scan, tensor_scalar_reduce, bn_stats/bn_aggr,
tensor_copy_predicated and nl.where), partition broadcasts, and kernels
on both logical cores (nl.nc(2)), against numpy."""

import numpy as np
import pytest

import nkigraph
import nkigraph.nki as nki
import nkigraph.nki.isa as nisa
import nkigraph.nki.language as nl

RNG = np.random.default_rng(7)


def rand(*shape):
    return RNG.standard_normal(shape).astype(np.float32)


def test_tensor_tensor_scan_is_a_running_recurrence():
    a, b = rand(128, 512) * 0.5, rand(128, 512)
    init = rand(128, 1)

    @nki.jit
    def kernel(a, b, init):
        out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
        r = nisa.tensor_tensor_scan(nl.load(a), nl.load(b),
                                    initial=nl.load(init), op0=np.multiply,
                                    op1=np.add)
        nl.store(out, r)
        return out

    got = kernel(a, b, init)
    want = np.empty_like(a, dtype=np.float64)
    r = init[:, 0].astype(np.float64)
    for i in range(a.shape[1]):
        r = a[:, i] * r + b[:, i]
        want[:, i] = r
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)


def test_tensor_tensor_scan_with_an_immediate_initial_and_a_free_dim_of_1():
    a, b = rand(3, 1), rand(3, 1)

    @nki.jit
    def kernel(a, b):
        out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
        dst = nl.ndarray(a.shape, dtype=nl.float32, buffer=nl.sbuf)
        nisa.tensor_tensor_scan(dst=dst, data0=nl.load(a), data1=nl.load(b),
                                initial=2.0, op0=nl.multiply, op1=nl.add)
        nl.store(out, dst)
        return out

    np.testing.assert_allclose(kernel(a, b), a * 2.0 + b, rtol=1e-6)


def test_tensor_scalar_reduce_writes_the_tile_and_its_row_sums():
    x = rand(128, 300)

    @nki.jit
    def kernel(x):
        out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
        sums = nl.ndarray((128, 1), dtype=x.dtype, buffer=nl.shared_hbm)
        res = nl.ndarray((128, 1), dtype=nl.float32, buffer=nl.sbuf)
        y = nisa.tensor_scalar_reduce(data=nl.load(x), op0=nl.multiply,
                                      operand0=3.0, reduce_op=nl.add,
                                      reduce_res=res)
        nl.store(out, y)
        nl.store(sums, res)
        return out, sums

    y, sums = kernel(x)
    np.testing.assert_allclose(y, x * 3.0, rtol=1e-6)
    np.testing.assert_allclose(sums[:, 0], (x.astype(np.float64) * 3).sum(1),
                               rtol=1e-4, atol=1e-3)


def test_bn_stats_then_bn_aggr_give_each_rows_mean_and_variance():
    x = rand(96, 512) * 3 + 1

    @nki.jit
    def kernel(x):
        out = nl.ndarray((96, 2), dtype=nl.float32, buffer=nl.shared_hbm)
        stats = nisa.bn_stats(nl.load(x))
        nl.store(out, nisa.bn_aggr(stats))
        return out

    got = kernel(x)
    np.testing.assert_allclose(got[:, 0], x.mean(1), rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(got[:, 1], x.var(1), rtol=1e-4)


def test_bn_stats_and_bn_aggr_errors_name_their_own_call():
    # The two share one parameter tuple; each call's error must still name
    # the call it came from, whichever ran first.
    x = rand(8, 16)

    def kernel_with(opcode):
        @nki.jit
        def kernel(x):
            stats = nisa.bn_stats(nl.load(x))
            getattr(nisa, opcode)(stats if opcode == "bn_aggr" else
                                  nl.load(x), stray=1)
        return kernel

    for opcode in ("bn_stats", "bn_aggr", "bn_stats"):
        with pytest.raises(TypeError, match=rf"nisa\.{opcode}\b"):
            kernel_with(opcode)(x)


def test_where_selects_by_a_comparison_and_by_a_uint8_mask():
    x, y = rand(128, 64), rand(128, 64)
    mask = (RNG.random((128, 64)) > 0.5).astype(np.uint8)

    @nki.jit
    def kernel(x, y, mask):
        a = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
        b = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
        xt, yt = nl.load(x), nl.load(y)
        nl.store(a, nl.where(xt > yt, xt, yt))
        nl.store(b, nl.where(nl.load(mask), xt, -1.0))
        return a, b

    a, b = kernel(x, y, mask)
    np.testing.assert_array_equal(a, np.maximum(x, y))
    np.testing.assert_array_equal(b, np.where(mask != 0, x, -1.0))


def test_activation_reduce_sums_the_activation():
    x = rand(128, 200)

    @nki.jit
    def kernel(x):
        out = nl.ndarray((128, 1), dtype=nl.float32, buffer=nl.shared_hbm)
        res = nl.ndarray((128, 1), dtype=nl.float32, buffer=nl.sbuf)
        nisa.activation_reduce(op=nl.exp, data=nl.load(x), reduce_op=nl.add,
                               reduce_res=res)
        nl.store(out, res)
        return out

    np.testing.assert_allclose(kernel(x)[:, 0], np.exp(x).sum(1), rtol=1e-5)


def test_a_one_partition_row_broadcast_over_partitions_is_a_matmul():
    row, x = rand(1, 1100), rand(128, 1100)

    @nki.jit
    def kernel(row, x):
        out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
        wide = nl.load(row).broadcast_to((128, 1100))
        nl.store(out, nisa.tensor_tensor(nl.load(x), wide, op=nl.multiply))
        return out

    np.testing.assert_array_equal(kernel(row, x), x * row)
    g = nki.trace(kernel, row, x)
    # 1100 columns: three matmuls of at most 512 against a ones row.
    assert g.text.count("opcode: NC_MATMUL") == 3


def test_both_cores_each_take_half_the_rows():
    x = rand(256, 128)

    @nki.jit
    def kernel(x):
        out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
        rows = nl.program_id(0) * 128 + nl.arange(128)[:, None]
        cols = nl.arange(128)[None, :]
        nl.store(out[rows, cols], nl.exp(nl.load(x[rows, cols])))
        return out

    np.testing.assert_allclose(kernel[nl.nc(2)](x), np.exp(x), rtol=1e-6)
    g = nki.trace(kernel[nl.nc(2)], x)
    assert "2 core(s)" in repr(g)


def test_both_cores_writing_the_same_rows_is_a_race():
    x = rand(128, 64)

    @nki.jit
    def kernel(x):
        out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
        nl.store(out, nl.load(x))  # every core writes all of out
        return out

    with pytest.raises(nkigraph.DeviceError) as e:
        kernel[nl.nc(2)](x)
    assert e.value.kind == "race"


def test_benchmark_gives_the_cost_models_estimate():
    x = rand(128, 512)

    @nki.benchmark(warmup=2, iters=5)
    def kernel(x):
        out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
        nl.store(out, nl.exp(nl.load(x)))
        return out

    assert kernel(x) is None
    result = kernel.benchmark_result
    assert result.is_estimate and "estimate" in repr(result)
    us = result.nc_latency.get_latency_percentile(50)
    expect = nkigraph.profile(nki.trace(kernel, x)).latency_ns / 1000.0
    assert us == pytest.approx(expect) and us > 0


def test_a_reduction_without_keepdims_adds_to_a_column():
    x = rand(128, 64)

    @nki.jit
    def kernel(x):
        out = nl.ndarray((128, 1), dtype=x.dtype, buffer=nl.shared_hbm)
        t = nl.load(x)
        col = nl.max(t, axis=1, keepdims=True)  # [128, 1]
        total = nl.sum(t, axis=1)  # [128]
        nl.store(out, nl.add(total, col))
        return out

    np.testing.assert_allclose(kernel(x)[:, 0], x.sum(1) + x.max(1),
                               rtol=1e-5, atol=1e-5)


def test_is_transpose_matmul_transposes_moving_and_mod_alloc_is_a_buffer():
    import nkigraph.nki.compiler as ncc
    x = rand(64, 96)

    @nki.jit
    def kernel(x):
        out = nl.ndarray((96, 64), dtype=x.dtype, buffer=nl.shared_hbm)
        t = nl.ndarray((64, 96), dtype=x.dtype,
                       buffer=ncc.sbuf.mod_alloc(base_addr=0))
        nisa.dma_copy(dst=t, src=x)
        ps = nl.ndarray((96, 64), dtype=nl.float32, buffer=nl.psum)
        nisa.nc_matmul(dst=ps, stationary=t, moving=t, is_transpose=True)
        nl.store(out, ps)
        return out

    np.testing.assert_array_equal(kernel(x), x.T)


def test_a_dtype_given_by_name_compares_equal_to_nls():
    seen = []

    def kernel(a, b):
        seen.append((a.dtype == nl.float16, b.dtype == nl.bfloat16))
        out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
        nl.store(out, nl.load(a))
        return out

    nki.trace(kernel, ((128, 4), "float16"), ((128, 4), "bfloat16"))
    assert seen == [(True, True)]


def test_tile_size_gives_the_sbuf_a_kernel_can_fill():
    words = nl.tile_size.total_available_sbuf_size // 4

    def fits(n):
        def kernel(a):
            t = nl.ndarray((128, n), dtype=nl.float32, buffer=nl.sbuf)
            nisa.memset(dst=t, value=0.0)
            return None
        nki.trace(kernel, nki.TensorSpec((1, 1)))

    fits(words)  # the whole partition
    with pytest.raises(nkigraph.InvalidArgumentError, match="capacity"):
        fits(words + 1)
