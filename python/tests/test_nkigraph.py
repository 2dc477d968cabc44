"""The nkigraph Python module: kernels against numpy math written here,
round trips through files and bytes, errors carrying their diagnostics."""
import os

import numpy as np
import pytest

import nkigraph


def bf16(a):
    """a rounded to bfloat16 (nearest even), as float32."""
    bits = np.asarray(a, np.float32).view(np.uint32).astype(np.uint64)
    rounded = (bits + 0x7FFF + ((bits >> 16) & 1)) & 0xFFFF0000
    return rounded.astype(np.uint32).view(np.float32)


def conv1d_numpy(x, w, bias, stride=1, pad_left=0, pad_right=0, dilation=1):
    """out[b,o,l] = bias[o] + sum_i sum_k w[k,i,o] x[b,i,l*stride+k*dilation-pad_left]."""
    batch, c_in, length = x.shape
    taps, _, c_out = w.shape
    padded = np.zeros((batch, c_in, pad_left + length + pad_right), np.float64)
    padded[:, :, pad_left:pad_left + length] = x
    l_out = (length + pad_left + pad_right - dilation * (taps - 1) - 1) // stride + 1
    out = np.zeros((batch, c_out, l_out), np.float64)
    for k in range(taps):
        start = k * dilation
        window = padded[:, :, start:start + stride * (l_out - 1) + 1:stride]
        out += np.einsum("bil,io->bol", window, w[k])
    return out + bias[None, :, None]


def test_kernels_lists_parameters_and_io():
    names = [k.name for k in nkigraph.kernels()]
    assert "conv1d" in names and "fgcc" in names
    conv = nkigraph.kernel("conv1d")
    params = {p.name: p for p in conv.params}
    assert params["c_in"].required and params["c_in"].default is None
    assert params["stride"].default == "1" and params["stride"].type == "int"
    assert params["dtype"].choices == ["float32", "bfloat16"]
    assert [(io.name, io.shape) for io in conv.inputs] == [
        ("x_in", "[B, c_in, L]"), ("filters", "[K, c_in, c_out]"),
        ("bias", "[c_out]")]
    assert [io.name for io in conv.outputs] == ["out"]
    assert "conv1d" in conv.text and conv.has_reference


def test_conv1d_matches_numpy():
    rng = np.random.default_rng(3)
    # c_in 40: a 33-64 channel tile (two taps stacked), a length tail,
    # stride 2 with padding on both sides.
    b, c_in, c_out, length, taps = 2, 40, 24, 37, 3
    g = nkigraph.trace("conv1d", batch=b, c_in=c_in, c_out=c_out,
                       length=length, kernel_size=taps, stride=2, pad_left=2,
                       pad_right=1, dtype="float32")
    x = rng.uniform(-1, 1, (b, c_in, length)).astype(np.float32)
    w = rng.uniform(-1, 1, (taps, c_in, c_out)).astype(np.float32)
    bias = rng.uniform(-1, 1, c_out).astype(np.float32)
    out = nkigraph.run(g, {"x_in": x, "filters": w, "bias": bias})
    assert list(out) == ["out"]
    want = conv1d_numpy(x.astype(np.float64), w.astype(np.float64), bias,
                        stride=2, pad_left=2, pad_right=1)
    assert out["out"].dtype == np.float32
    assert out["out"].shape == want.shape == (2, 24, 19)
    np.testing.assert_allclose(out["out"], want, rtol=1e-5, atol=1e-5)


def test_conv1d_bfloat16_from_float_or_raw_bits():
    rng = np.random.default_rng(4)
    g = nkigraph.trace("conv1d", batch=1, c_in=16, c_out=8, length=20,
                       kernel_size=2, bias=False)
    x = rng.uniform(-1, 1, (1, 16, 20)).astype(np.float32)
    w = rng.uniform(-1, 1, (2, 16, 8)).astype(np.float32)
    from_floats = nkigraph.run(g, {"x_in": x, "filters": w})["out"]
    # The same inputs as raw bfloat16 bits give the same outputs.
    raw = lambda a: (bf16(a).view(np.uint32) >> 16).astype(np.uint16)
    from_bits = nkigraph.run(g, {"x_in": raw(x), "filters": raw(w)})["out"]
    np.testing.assert_array_equal(from_floats, from_bits)
    want = conv1d_numpy(bf16(x).astype(np.float64), bf16(w).astype(np.float64),
                        np.zeros(8))
    # Accumulated in float32, rounded once to bfloat16 (2^-8 relative).
    np.testing.assert_allclose(from_floats, want, rtol=8e-3, atol=8e-3)
    bits = nkigraph.run(g, {"x_in": x, "filters": w}, raw_bits=True)["out"]
    assert bits.dtype == np.uint16
    np.testing.assert_array_equal(
        (bits.astype(np.uint32) << 16).view(np.float32), from_floats)


def test_fgcc_matches_numpy_allgather_matmul():
    rng = np.random.default_rng(5)
    tp, m, k, n = 4, 16, 48, 40
    g = nkigraph.trace("fgcc", tp_degree=tp, m=m, k=k, n=n, dtype="float32")
    assert g.num_ranks == tp and g.num_cores == 2
    assert g.inputs[0] == {"name": "lhs", "shape": (tp, m, k),
                           "dtype": "float32"}
    lhs = rng.uniform(-1, 1, (tp, m, k)).astype(np.float32)
    rhs = rng.uniform(-1, 1, (tp, k, n)).astype(np.float32)
    out = nkigraph.run(g, {"lhs": lhs, "rhs": rhs})["out"]
    assert out.shape == (tp, tp * m, n)
    gathered = lhs.reshape(tp * m, k).astype(np.float64)
    for r in range(tp):
        np.testing.assert_allclose(out[r], gathered @ rhs[r], rtol=1e-5,
                                   atol=1e-5)


def test_random_inputs_are_what_run_uses():
    g = nkigraph.trace("tiled_matmul", m=40, k=130, n=20, bias=True)
    inputs = nkigraph.random_inputs(g, 9)
    assert sorted(inputs) == ["bias", "lhs", "rhs"]
    # bfloat16 values: already rounded.
    np.testing.assert_array_equal(bf16(inputs["lhs"]), inputs["lhs"])
    out = nkigraph.run(g, random_inputs=9)["out"]
    want = inputs["lhs"].astype(np.float64) @ inputs["rhs"] + inputs["bias"]
    np.testing.assert_allclose(out, want, rtol=1e-2, atol=1e-2)
    # Given inputs win over random ones; the others are still drawn.
    ones = np.ones((130, 20), np.float32)
    drawn = nkigraph.random_inputs(g, 9, inputs={"rhs": ones})
    np.testing.assert_array_equal(drawn["rhs"], ones)
    partial = nkigraph.run(g, {"rhs": ones}, random_inputs=9)["out"]
    np.testing.assert_allclose(
        partial, drawn["lhs"].sum(axis=1, keepdims=True) + drawn["bias"],
        rtol=1e-2, atol=1e-2)


def test_round_trip_trace_save_load_run(tmp_dir):
    g = nkigraph.trace("conv1d", batch=1, c_in=8, c_out=8, length=16,
                       kernel_size=3, pad_left=1, pad_right=1)
    path_pb = os.path.join(tmp_dir, "conv.pb")
    path_txt = os.path.join(tmp_dir, "conv.pbtxt")
    g.save(path_pb)
    g.save(path_txt)
    loaded = nkigraph.Graph.load(path_pb)
    from_text = nkigraph.Graph.load(path_txt)
    assert bytes(loaded) == bytes(g) == g.to_bytes()
    with open(path_pb, "rb") as f:
        assert f.read() == bytes(g)
    assert from_text.text == g.text and "kernel_name" in g.text
    assert nkigraph.Graph.from_bytes(bytes(g)).text == g.text
    assert nkigraph.Graph.from_text(g.text).to_bytes() == bytes(g)
    assert loaded.kernel == "conv1d" and loaded.params["c_in"] == "8"
    assert "kernel: conv1d" in loaded.info()
    results = [nkigraph.run(x, random_inputs=2)["out"]
               for x in (g, loaded, from_text)]
    np.testing.assert_array_equal(results[0], results[1])
    np.testing.assert_array_equal(results[0], results[2])
    assert not nkigraph.diff(g, loaded)


def test_verify_passes_and_reports():
    v = nkigraph.verify("tiled_matmul", m=130, k=70, n=150, seed=3)
    assert v.passed and bool(v)
    assert v.params["m"] == "130" and v.seed == 3
    assert [c.name for c in v.checks] == ["out"]
    assert v.checks[0].ok and v.checks[0].measure <= v.tolerance
    assert v.text.endswith("tiled_matmul: PASS\n")
    assert v.outputs["out"].shape == v.reference["out"].shape == (130, 150)


def test_diff_reports_a_change():
    a = nkigraph.trace("tiled_matmul", m=128, k=128, n=128)
    b = nkigraph.trace("tiled_matmul", m=128, k=256, n=128)
    d = nkigraph.diff(a, b, label_a="k128", label_b="k256")
    assert d and not d.same
    assert d.summary.startswith("summary: ")
    assert "param k" in d.text and d.summary in d.text
    assert d.header["changed"] >= 1
    same = nkigraph.diff(a, nkigraph.trace("tiled_matmul", m=128, k=128, n=128))
    assert same.same and "no differences" in same.summary


def test_dot_and_profile(tmp_dir):
    g = nkigraph.trace("tiled_matmul", m=128, k=128, n=128)
    dot = nkigraph.dot(g)
    assert dot.startswith("digraph") and "nc_matmul" in dot
    barrier = nkigraph.dot(g, view="barrier")
    assert barrier.startswith("digraph") and barrier != dot
    svg_path = os.path.join(tmp_dir, "g.svg")
    assert nkigraph.dot(g, svg_path) is None
    with open(svg_path) as f:
        assert "<svg" in f.read()
    p = nkigraph.profile(g, trace=os.path.join(tmp_dir, "t.json"))
    assert p.latency_ns > 0 and p.roofline_ratio >= 1
    assert p.instructions == g.num_instructions
    assert any(e.engine == "tensor" and e.busy_ns > 0 for e in p.engines)
    assert "latency" in p.text and '"latency_ns"' in p.json
    assert os.path.getsize(os.path.join(tmp_dir, "t.json")) > 0


def test_unknown_kernel_and_bad_parameters_raise():
    with pytest.raises(nkigraph.NotFoundError, match="unknown kernel 'nope'"):
        nkigraph.trace("nope")
    with pytest.raises(nkigraph.InvalidArgumentError) as e:
        nkigraph.trace("tiled_matmul", m=0)
    assert isinstance(e.value, ValueError)
    assert "parameter 'm' is 0" in str(e.value)
    with pytest.raises(nkigraph.InvalidArgumentError, match="missing required"):
        nkigraph.trace("conv1d", batch=1)


def test_bad_inputs_raise_naming_the_input():
    g = nkigraph.trace("tiled_matmul", m=8, k=8, n=8, bias=False)
    good = np.zeros((8, 8), np.float32)
    with pytest.raises(nkigraph.InvalidArgumentError) as e:
        nkigraph.run(g, {"lhs": np.zeros((8, 9), np.float32), "rhs": good})
    assert e.value.kind == "input" and "lhs" in str(e.value)
    with pytest.raises(nkigraph.InvalidArgumentError, match="inputs rhs not given|input rhs not given"):
        nkigraph.run(g, {"lhs": good})
    with pytest.raises(nkigraph.InvalidArgumentError, match="no input 'x'"):
        nkigraph.run(g, {"x": good, "lhs": good, "rhs": good})
    with pytest.raises(nkigraph.InvalidArgumentError, match="got an array of complex64"):
        nkigraph.run(g, {"lhs": good.astype(np.complex64), "rhs": good})
    f32 = nkigraph.trace("tiled_matmul", m=8, k=8, n=8, bias=False,
                         dtype="float32")
    with pytest.raises(nkigraph.InvalidArgumentError, match="raw bits"):
        nkigraph.run(f32, {"lhs": good.astype(np.uint16), "rhs": good})


def test_int_inputs_must_be_integers():
    g = nkigraph.trace("cross_entropy_forward", num_positions=4,
                       vocab_size=16, dtype="float32")
    assert g.inputs[1] == {"name": "targets", "shape": (4,), "dtype": "int32"}
    logits = np.zeros((4, 16), np.float32)
    with pytest.raises(nkigraph.InvalidArgumentError, match="integer array"):
        nkigraph.run(g, {"logits": logits, "targets": np.zeros(4, np.float32)})
    with pytest.raises(nkigraph.InvalidArgumentError, match="does not fit int32"):
        nkigraph.run(g, {"logits": logits,
                         "targets": np.array([0, 1, 2, 2**40], np.int64)})
    # Any integer dtype that fits is taken.
    loss = nkigraph.run(g, {"logits": logits,
                            "targets": np.array([0, 1, 2, 3], np.int64)})["loss"]
    np.testing.assert_allclose(loss, np.full(4, np.log(16)), rtol=1e-6)


def test_device_error_carries_the_diagnostic():
    # A target outside [0, V) without ignore_index: the indirect DMA that
    # gathers the target logit reads past its row, which the device refuses.
    g = nkigraph.trace("cross_entropy_forward", num_positions=4,
                       vocab_size=16, dtype="float32")
    logits = np.zeros((4, 16), np.float32)
    targets = np.array([0, 1, 99, 2], np.int32)
    with pytest.raises(nkigraph.DeviceError) as e:
        nkigraph.run(g, {"logits": logits, "targets": targets})
    err = e.value
    assert err.code == "ABORTED" and err.kind == "device"
    assert err.opcode == "dma_copy"
    assert err.instruction_id is not None and err.instruction_id >= 0
    assert err.file.endswith("cross_entropy_forward.cc") and err.line > 0
    assert "position_tile" in err.scope
    assert err.message and err.message in str(err)
    assert f"#{err.instruction_id} dma_copy" in str(err)


def test_verify_device_error_raises():
    # No kernel fails verify; a parameter error raises before any run.
    with pytest.raises(nkigraph.InvalidArgumentError, match="parameter 'n'"):
        nkigraph.verify("tiled_matmul", n=-1)


def _file_path_variants():
    """Every kernel with a reference at its defaults (its example where
    parameters are required); in-place kernels with inplace 0 and 1."""
    variants = []
    for kernel in nkigraph.kernels():
        if not kernel.has_reference:
            continue
        params = dict(kernel.example)
        if any(p.name == "inplace" for p in kernel.params):
            for inplace in ("0", "1"):
                variants.append((kernel.name, dict(params, inplace=inplace)))
        else:
            variants.append((kernel.name, params))
    return variants


def _bits(a):
    a = np.ascontiguousarray(a)
    return a.view(np.uint32) if a.dtype == np.float32 else a


@pytest.mark.parametrize(
    "name,params", _file_path_variants(),
    ids=lambda v: v if isinstance(v, str) else
    "-".join(f"{k}{x}" for k, x in v.items() if k == "inplace") or "defaults")
def test_run_on_verify_inputs_gives_its_outputs_bit_for_bit(name, params):
    """Python's run() of a traced graph, on the inputs verify() ran on (as
    the device held them), gives verify()'s outputs bit for bit, every
    output by its output name (an in-place one included); with raw_bits,
    bfloat16 outputs as their bits."""
    v = nkigraph.verify(name, **params)
    assert v.passed, v.text
    graph = nkigraph.trace(name, **params)
    got = nkigraph.run(graph, dict(v.inputs))
    assert sorted(got) == sorted(v.outputs)
    for out, want in v.outputs.items():
        assert got[out].shape == want.shape, out
        assert np.array_equal(_bits(got[out]), _bits(want)), out
    raw = nkigraph.run(graph, dict(v.inputs), raw_bits=True)
    for out, want in v.outputs.items():
        if raw[out].dtype == np.uint16:
            assert np.array_equal(raw[out], (_bits(want) >> 16).astype(np.uint16)), out
        else:
            assert np.array_equal(_bits(raw[out]), _bits(want)), out
