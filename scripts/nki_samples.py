#!/usr/bin/env python3
"""Runs public NKI sample kernels, unmodified, on nkigraph.nki and prints a
table: kernel, passed or why not.

    python3 scripts/nki_samples.py SAMPLES_DIR

SAMPLES_DIR is a checkout of the public NKI samples repository (its
src/nki_samples/tutorials/ and contributed/ folders); nothing of it is
part of this project. Files with a __main__ of their own run as scripts
under `python3 -m nkigraph.nki` and pass when they exit 0; tutorial files
without one (matrix multiplication, attention) are imported with NKI's
module names aliased to nkigraph's and each kernel checked here against a
numpy reference written for this script. Needs PYTHONPATH to reach the
nkigraph module (build/python).
"""

import importlib
import os
import subprocess
import sys
import time
import traceback

import numpy as np

TUTORIALS = "src/nki_samples/tutorials"

# Scripts that check themselves: (label, path, extra arguments).
SCRIPTS = [
    ("tensor_addition", f"{TUTORIALS}/tensor_addition/"
     "tensor_addition_nki_kernels.py", []),
    ("spmd_tensor_addition", f"{TUTORIALS}/tensor_addition/"
     "spmd_tensor_addition_nki_kernels.py", []),
    ("transpose2d", f"{TUTORIALS}/transpose2d/transpose2d_nki_kernels.py",
     []),
    ("average_pool2d", f"{TUTORIALS}/average_pool2d/"
     "average_pool2d_nki_kernels.py", []),
    ("fused_mamba v1-v3", f"{TUTORIALS}/fused_mamba/mamba_nki_kernels.py",
     []),
    ("contributed/matmul", "contributed/matmul.py", []),
    ("contributed/maxpooling", "contributed/maxpooling.py", []),
]


def run_script(samples, path, args):
    full = os.path.join(samples, path)
    # The script runs in its own folder: give it the nkigraph module this
    # process imports, by absolute path (PYTHONPATH may be relative).
    import nkigraph
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(
        [os.path.dirname(os.path.dirname(os.path.abspath(nkigraph.__file__)))]
        + [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p])
    start = time.perf_counter()
    proc = subprocess.run(
        [sys.executable, "-m", "nkigraph.nki", os.path.basename(full)] + args,
        cwd=os.path.dirname(full), capture_output=True, text=True,
        timeout=1800, env=env)
    seconds = time.perf_counter() - start
    if proc.returncode == 0:
        return True, f"exit 0 in {seconds:.1f} s", proc.stdout
    tail = (proc.stderr.strip().splitlines() or ["(no output)"])[-1]
    return False, tail, proc.stdout + proc.stderr


# --- kernels checked here --------------------------------------------------

def _tiled_matmul_cases(mod):
    rng = np.random.default_rng(0)

    def case(name, k, m, n, **kw):
        lhs_t = rng.standard_normal((k, m)).astype(np.float32)
        rhs = rng.standard_normal((k, n)).astype(np.float32)
        want = lhs_t.T.astype(np.float64) @ rhs.astype(np.float64)
        got = getattr(mod, name)(lhs_t, rhs, **kw)
        err = float(np.abs(got - want).max() / np.abs(want).max())
        return err < 1e-5, f"max rel err {err:.1e} at {m}x{k}x{n}"

    yield "matmul basic", lambda: case("nki_matmul_basic_", 128, 64, 512)
    yield "matmul tiled", lambda: case("nki_matmul_tiled_", 256, 256, 1024)
    yield "matmul hoist_load", lambda: case("nki_matmul_hoist_load_", 256,
                                            256, 1024)
    yield "matmul block_free_dimension", lambda: case(
        "nki_matmul_block_free_dimension_", 256, 256, 2048)
    yield "matmul fully_optimized", lambda: case(
        "nki_matmul_fully_optimized_", 1024, 2048, 1024)


def _attention_reference(q, k, v):
    """softmax(q^T k) v^T, in float64."""
    scores = q.T.astype(np.float64) @ k.astype(np.float64)
    scores = np.exp(scores - scores.max(axis=1, keepdims=True))
    scores /= scores.sum(axis=1, keepdims=True)
    return scores @ v.T.astype(np.float64)


def _attention_cases(mod):
    def case(name, seqlen):
        rng = np.random.default_rng(42)
        q, k, v = (rng.random((128, seqlen)).astype(np.float32)
                   for _ in range(3))
        got = np.asarray(getattr(mod, name)(q, k, v))
        want = _attention_reference(q, k, v)
        err = float(np.abs(got - want).max())
        return err < 1e-2, f"max abs err {err:.1e} at seqlen {seqlen}"

    yield "attention v1", lambda: case("attn_fwd_v1", 128)
    yield "attention v2", lambda: case("attn_fwd_v2", 128)
    yield "attention v3", lambda: case("attn_fwd_v3", 1024)


MODULES = [
    (f"{TUTORIALS}/matrix_multiplication",
     "matrix_multiplication_nki_kernels", _tiled_matmul_cases),
    (f"{TUTORIALS}/attention_fwd_performance", "attention_kernels",
     _attention_cases),
]


def run_modules(samples, rows):
    import nkigraph.nki
    nkigraph.nki.install_aliases()
    for folder, name, cases in MODULES:
        sys.path.insert(0, os.path.join(samples, folder))
        try:
            mod = importlib.import_module(name)
        except Exception as e:  # the whole file: every case fails alike
            rows.append((name, False, f"import: {type(e).__name__}: {e}"))
            continue
        for label, check in cases(mod):
            start = time.perf_counter()
            try:
                ok, detail = check()
                detail += f", {time.perf_counter() - start:.1f} s"
            except Exception as e:
                ok = False
                last = traceback.extract_tb(e.__traceback__)[-1]
                detail = (f"{type(e).__name__}: {e} "
                          f"({os.path.basename(last.filename)}:{last.lineno})")
            rows.append((label, ok, detail))


def main(argv):
    if len(argv) != 2:
        print(__doc__, file=sys.stderr)
        return 2
    samples = os.path.abspath(argv[1])
    rows = []
    for label, path, args in SCRIPTS:
        try:
            ok, detail, _ = run_script(samples, path, args)
        except subprocess.TimeoutExpired:
            ok, detail = False, "timed out"
        rows.append((label, ok, detail))
    run_modules(samples, rows)
    print("| kernel | result | detail |")
    print("|---|---|---|")
    for label, ok, detail in rows:
        detail = detail.replace("|", "/")
        print(f"| {label} | {'passed' if ok else 'FAILED'} | {detail} |")
    return 0 if all(ok for _, ok, _ in rows) else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv))
