"""nkigraph.nki's entry points: the nki.jit / nki.baremetal / nki.benchmark
and nki.compiler.skip_middle_end_transformations decorators,
nki.simulate_kernel and nki.simulate(kernel)(...), SPMD grids
(kernel[g0, g1] with nl.program_id / num_programs / program_ndim),
nkigraph.nki.trace giving an nkigraph.Graph for run, dot, profile, diff and
save (its instructions carrying the kernel's file:line), install_aliases()
and `python3 -m nkigraph.nki FILE.py`."""
import inspect
import os
import re
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import nkigraph
import nkigraph.nki as nki
import nkigraph.nki.isa as nisa
import nkigraph.nki.language as nl
from nki_helpers import same_file, uniform


def add_kernel(a, b):
    out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
    i_p, i_f = nl.mgrid[0:a.shape[0], 0:a.shape[1]]
    nl.store(out[i_p, i_f], nl.load(a[i_p, i_f]) + nl.load(b[i_p, i_f]))
    return out


def _ab(shape=(128, 512)):
    return uniform(1, shape), uniform(2, shape)


def test_decorators_run_the_kernel_on_numpy():
    a, b = _ab()
    decorated = [nki.jit(add_kernel), nki.jit()(add_kernel),
                 nki.jit(mode="simulation")(add_kernel),
                 nki.baremetal(add_kernel), nki.baremetal()(add_kernel),
                 nki.jit(nki.compiler.skip_middle_end_transformations(
                     add_kernel))]
    for k in decorated:
        out = k(a, b)
        assert isinstance(out, np.ndarray) and out.dtype == np.float32
        np.testing.assert_allclose(out, a + b, rtol=1e-6)


@nki.compiler.skip_middle_end_transformations
@nki.jit
def stacked(a, b):
    return add_kernel(a, b)


def test_skip_middle_end_transformations_over_jit():
    a, b = _ab((4, 4))
    np.testing.assert_allclose(stacked(a, b), a + b, rtol=1e-6)


def test_simulate_kernel_and_simulate():
    a, b = _ab((1, 1))
    for k in (add_kernel, nki.jit(add_kernel)):
        np.testing.assert_allclose(nki.simulate_kernel(k, a, b), a + b)
        np.testing.assert_allclose(nki.simulate(k)(a, b), a + b)
        np.testing.assert_allclose(nki.simulate(k)(a=a, b=b), a + b)


def test_benchmark_gives_an_estimate():
    bench = nki.benchmark(warmup=2, iters=5)(add_kernel)
    a, b = _ab()
    # An estimate, not a run: nothing comes back.
    assert bench(a, b) is None
    result = bench.benchmark_result
    assert result.is_estimate
    assert "estimate" in repr(result)
    us = result.nc_latency.get_latency_percentile(50)
    assert us > 0
    # Twice the data to move: a longer estimate.
    a2, b2 = _ab((128, 1024))
    bench(a2, b2)
    assert bench.benchmark_result.nc_latency.get_latency_percentile(99) > us
    plain = nki.benchmark(add_kernel)
    plain(a, b)
    assert plain.benchmark_result.nc_latency.get_latency_percentile(50) == us


@nki.jit
def grid_kernel(a):
    """Each of the grid's [2, 3] instances writes its 128 x 64 block of
    out: a's block plus 10 * its program ids and the grid's shape."""
    out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
    i = nl.program_id(0)
    j = nl.program_id(axis=1)
    assert nl.program_ndim() == 2
    assert nl.num_programs() == 6
    assert (nl.num_programs(0), nl.num_programs(1)) == (2, 3)
    rows = a.shape[0] // nl.num_programs(0)
    cols = a.shape[1] // nl.num_programs(1)
    blk = (slice(i * rows, (i + 1) * rows), slice(j * cols, (j + 1) * cols))
    t = nl.load(a[blk])
    nl.store(out[blk], nl.add(t, float(10 * i + j)))
    return out


def test_spmd_grid():
    a = uniform(3, (256, 192))
    want = a.copy()
    for i in range(2):
        for j in range(3):
            want[i * 128:(i + 1) * 128, j * 64:(j + 1) * 64] += 10 * i + j
    np.testing.assert_allclose(grid_kernel[2, 3](a), want, rtol=1e-6)
    np.testing.assert_allclose(nki.simulate_kernel(grid_kernel[2, 3], a),
                               want, rtol=1e-6)
    g = nki.trace(grid_kernel[2, 3], a)
    assert g.text.count("opcode: DMA_COPY") == 12


@nki.jit
def one_program(a):
    out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
    assert nl.program_ndim() == 0 and nl.num_programs() == 1
    nl.store(out, nl.add(nl.load(a), float(nl.program_id(0))))
    return out


def test_no_grid_is_program_zero():
    a = uniform(4, (2, 3))
    np.testing.assert_array_equal(one_program(a), a)


@nki.jit
def one_axis_grid(a):
    out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
    i = nl.program_id(0)
    assert nl.program_ndim() == 1
    n = nl.num_programs(0)
    rows = a.shape[0] // n
    nl.store(out[i * rows:(i + 1) * rows, :],
             nl.multiply(nl.load(a[i * rows:(i + 1) * rows, :]), float(i)))
    return out


def test_one_axis_grid():
    a = uniform(5, (4 * 128, 8))
    want = a * np.repeat(np.arange(4), 128)[:, None]
    np.testing.assert_allclose(one_axis_grid[4](a), want, rtol=1e-6)


@nki.jit
def bump_in_place(a):
    """Each of the grid's instances adds 1 to its two rows of the input;
    nothing returned."""
    i = nl.program_id(0)
    t = nl.load(a[i * 2:(i + 1) * 2, :])
    nl.store(a[i * 2:(i + 1) * 2, :], nl.add(t, 1.0))


def test_grid_writing_its_input_in_place():
    a = uniform(6, (6, 3))
    want = a + 1
    assert bump_in_place[3](a) is None
    np.testing.assert_allclose(a, want, rtol=1e-6)


@nki.jit
def through_shared_scratch(a):
    """Instances share shared_hbm tensors: each writes its row of a
    named scratch tensor, then reads it back."""
    out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
    scratch = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm,
                         name="scratch")
    i = nl.program_id(0)
    nl.store(scratch[i:i + 1, :], nl.load(a[i:i + 1, :]))
    nl.store(out[i:i + 1, :], nl.multiply(nl.load(scratch[i:i + 1, :]), 3.0))
    return out


def test_grid_instances_share_shared_hbm():
    a = uniform(7, (4, 2))
    np.testing.assert_allclose(through_shared_scratch[4](a), 3 * a,
                               rtol=1e-6)
    g = nki.trace(through_shared_scratch[4], a)
    assert g.text.count('name: "scratch"') == 1


@nki.jit
def doubled(t):
    return nl.multiply(t, 2.0)


@nki.jit
def calls_a_kernel(a):
    out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
    nl.store(out, doubled(nl.load(a)))
    return out


def test_kernel_called_from_a_kernel_joins_its_trace():
    a = uniform(8, (128, 4))
    np.testing.assert_allclose(calls_a_kernel(a), 2 * a, rtol=1e-6)
    assert 'scopes: "doubled"' in nki.trace(calls_a_kernel, a).text


@nki.jit
def two_outputs(a):
    o1 = nl.ndarray(a.shape, dtype=nl.int32, buffer=nl.shared_hbm)
    o2 = nl.ndarray(a.shape, dtype=nl.float16, buffer=nl.shared_hbm)
    t = nl.load(a)
    nl.store(o1, nl.copy(t, dtype=nl.int32))
    nl.store(o2, nl.copy(t, dtype=nl.float16))
    return o2, o1


def test_outputs_come_back_in_order_with_their_dtypes():
    # float to int32 rounds to nearest, ties to even.
    a = np.array([[1.4, 1.5, 2.5, -1.5, -0.6, 1.0009765625]], np.float32)
    half, ints = two_outputs(a)
    assert half.dtype == np.float16 and ints.dtype == np.int32
    np.testing.assert_array_equal(ints, [[1, 2, 2, -2, -1, 1]])
    np.testing.assert_array_equal(half, a.astype(np.float16))


# --- trace -> Graph ----------------------------------------------------------

def test_trace_gives_a_graph_for_run_dot_profile_diff_save(tmp_dir):
    a, b = _ab()
    g = nki.trace(add_kernel, a, b)
    assert isinstance(g, nkigraph.Graph)
    assert g.kernel == "add_kernel"
    assert [(i["name"], list(i["shape"]), i["dtype"]) for i in g.inputs] == \
        [("a", [128, 512], "float32"), ("b", [128, 512], "float32")]
    assert [o["name"] for o in g.outputs] == ["out"]
    assert g.num_instructions == 4  # two loads, an add, a store
    out = nkigraph.run(g, {"a": a, "b": b})["out"]
    np.testing.assert_allclose(out, a + b, rtol=1e-6)
    dot = nkigraph.dot(g)
    assert dot.startswith("digraph") and "tensor_tensor" in dot
    prof = nkigraph.profile(g)
    assert prof.latency_ns > 0 and prof.instructions == g.num_instructions
    # By shapes, or (shape, dtype) pairs: the same graph.
    by_shape = nki.trace(add_kernel, (128, 512), ((128, 512), nl.float32))
    assert not nkigraph.diff(g, by_shape)
    bigger = nki.trace(add_kernel, (128, 1024), (128, 1024))
    assert nkigraph.diff(g, bigger)
    path = os.path.join(tmp_dir, "add.pb")
    g.save(path)
    loaded = nkigraph.Graph.load(path)
    assert not nkigraph.diff(g, loaded, strict=True)
    np.testing.assert_allclose(nkigraph.run(loaded, {"a": a, "b": b})["out"],
                               a + b, rtol=1e-6)


def test_trace_of_a_bfloat16_input_given_by_spec():
    g = nki.trace(add_kernel, nki.TensorSpec((128, 64), nl.bfloat16),
                  nki.TensorSpec((128, 64), "bfloat16"))
    assert [i["dtype"] for i in g.inputs] == ["bfloat16", "bfloat16"]
    with pytest.raises(nkigraph.Error, match="given by shape"):
        nki.simulate_kernel(add_kernel, nki.TensorSpec((2, 2)),
                            nki.TensorSpec((2, 2)))


def _line_of(fn, needle):
    lines, first = inspect.getsourcelines(fn)
    hits = [first + k for k, text in enumerate(lines) if needle in text]
    assert len(hits) == 1
    return hits[0]


def test_instructions_carry_the_kernel_file_and_line():
    g = nki.trace(add_kernel, (8, 8), (8, 8))
    text = g.text
    file = re.search(r'files: "([^"]*)"', text).group(1)
    assert same_file(file, __file__)
    store = _line_of(add_kernel, "nl.store(")
    # The store line holds both loads, the add and the store.
    assert text.count(f"line: {store}\n") >= g.num_instructions
    # The picture's tooltips name file:line.
    dot = nkigraph.dot(g)
    assert dot.count(f"{file}:{store}") >= g.num_instructions


# --- aliases and the runner ----------------------------------------------

_ALIASED = ("neuronxcc", "neuronxcc.nki", "neuronxcc.nki.language",
            "neuronxcc.nki.isa", "neuronxcc.nki.typing",
            "neuronxcc.nki.compiler", "nki", "nki.language", "nki.isa",
            "nki.typing", "nki.compiler")


@pytest.fixture
def aliases_undone():
    """sys.modules as it was before the test installed the aliases."""
    saved = {n: sys.modules.get(n) for n in _ALIASED}
    yield
    for n, m in saved.items():
        if m is None:
            sys.modules.pop(n, None)
        else:
            sys.modules[n] = m


def test_install_aliases_makes_nki_names_resolve(aliases_undone):
    nki.install_aliases()
    import neuronxcc.nki as nxnki
    import neuronxcc.nki.isa as nxisa
    import neuronxcc.nki.language as nxnl
    import neuronxcc.nki.typing as nt
    import nki as standalone
    import nki.isa as sisa
    import nki.language as snl
    from neuronxcc import nki as from_import
    assert nxnki is nki and from_import is nki and standalone is nki
    assert nxnl is nl and snl is nl and nxisa is nisa and sisa is nisa
    assert nt is nki.typing
    assert standalone.language.add is nl.add


_SCRIPT = '''\
import sys
import numpy as np
import neuronxcc.nki as nki
import neuronxcc.nki.language as nl
import neuronxcc.nki.isa as nisa
from neuronxcc.nki.typing import tensor


@nki.jit
def double(a_input: tensor):
    out = nl.ndarray(a_input.shape, dtype=a_input.dtype,
                     buffer=nl.shared_hbm)
    t = nl.load(a_input)
    nl.store(out, nisa.tensor_scalar(t, nl.multiply, 2.0))
    return out


if __name__ == "__main__":
    n = int(sys.argv[1])
    a = np.arange(n * 4, dtype=np.float32).reshape(n, 4)
    out = nki.simulate_kernel(double, a)
    assert np.array_equal(out, 2 * a), out
    print("ok", sys.argv[1:], out.sum())
'''


def _run_module(args, cwd):
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(
        p for p in [os.path.dirname(os.path.dirname(nkigraph.__file__)),
                    env.get("PYTHONPATH")] if p)
    return subprocess.run([sys.executable, "-m", "nkigraph.nki"] + args,
                          cwd=cwd, env=env, capture_output=True, text=True,
                          timeout=60)


def test_module_runs_a_kernel_file_unmodified(tmp_dir):
    path = os.path.join(tmp_dir, "double_kernel.py")
    with open(path, "w") as f:
        f.write(_SCRIPT)
    done = _run_module([path, "3", "extra"], tmp_dir)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "ok ['3', 'extra'] " + \
        str(float(2 * np.arange(12).sum()))


def test_runner_reports_a_kernel_error_with_its_line(tmp_dir,
                                                    aliases_undone):
    # In this process: the runner's main(), as `-m nkigraph.nki` calls it.
    from nkigraph.nki.__main__ import main
    path = os.path.join(tmp_dir, "too_tall.py")
    with open(path, "w") as f:
        f.write(textwrap.dedent('''\
            import numpy as np
            import nki
            import nki.language as nl

            def kernel(a):
                t = nl.ndarray((256, 4), dtype=nl.float32, buffer=nl.sbuf)
                return t

            nki.simulate_kernel(kernel, np.zeros((2, 2), np.float32))
            '''))
    argv = list(sys.argv)
    try:
        with pytest.raises(nkigraph.Error) as e:
            main(["nkigraph.nki", path])
    finally:
        sys.argv = argv
        sys.path.remove(tmp_dir)
    assert e.value.line == 6 and same_file(e.value.file, path)
    assert "partition" in str(e.value)


def test_runner_usage(capsys):
    from nkigraph.nki.__main__ import main
    assert main(["nkigraph.nki"]) == 2
    assert "usage" in capsys.readouterr().err
