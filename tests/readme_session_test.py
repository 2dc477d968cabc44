"""Runs the README's "A first session" as a newcomer would type it.

Every `nkigraph ...` line of its shell blocks runs against the built
command (files the lines name but do not make, such as x.npy or old.pb,
are made first), the Python one-liner runs, and the NKI kernel file runs
under `python3 -m nkigraph.nki` and must print an error of 0. The install
lines are ctest's install_and_example (scripts/check_install.sh) and are
left out.
"""

import os
import re
import shlex
import subprocess
import sys

import numpy as np
import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CLI = os.environ.get("NKIGRAPH_CLI", os.path.join(ROOT, "build/tools/nkigraph"))
PYTHONPATH = os.environ.get("PYTHONPATH", os.path.join(ROOT, "build/python"))


def first_session():
    with open(os.path.join(ROOT, "README.md"), encoding="utf-8") as f:
        text = f.read()
    start = text.index("## A first session")
    end = text.index("\n## ", start + 1)
    return text[start:end]


def blocks(section, language):
    return re.findall(r"```" + language + r"\n(.*?)```", section, re.S)


def commands(section):
    """The section's shell lines that call nkigraph, joined across `\\`."""
    lines = []
    for block in blocks(section, "sh"):
        joined = block.replace("\\\n", " ")
        for line in joined.splitlines():
            line = line.split("#", 1)[0].strip()
            if line.startswith("nkigraph "):
                lines.append(shlex.split(line))
    return lines


def run(argv, cwd, env=None):
    result = subprocess.run(argv, cwd=cwd, env=env, capture_output=True,
                            text=True, timeout=600)
    assert result.returncode == 0, (
        f"{' '.join(argv)} exited {result.returncode}:\n{result.stderr}")
    return result


@pytest.fixture
def session_dir(tmp_path):
    # What the README's lines read but do not write: conv1d's inputs at the
    # traced shape (batch 2, c_in 64, c_out 128, length 300, 3 taps), and
    # two graphs to diff.
    rng = np.random.default_rng(3)
    np.save(tmp_path / "x.npy", rng.standard_normal((2, 64, 300), np.float32))
    np.save(tmp_path / "w.npy", rng.standard_normal((3, 64, 128), np.float32))
    np.save(tmp_path / "b.npy", rng.standard_normal(128, np.float32))
    for name, m in (("old.pb", 128), ("new.pb", 256)):
        run([CLI, "trace", "tiled_matmul", "--set", f"m={m}", "-o", name],
            tmp_path)
    return tmp_path


def test_every_nkigraph_line_runs(session_dir):
    argvs = commands(first_session())
    verbs = [argv[1] for argv in argvs]
    # The session shows each of these; a rewrite that drops one should
    # mean to.
    for verb in ("list", "trace", "info", "run", "verify", "dot", "view",
                 "profile"):
        assert verb in verbs, f"the first session lost `nkigraph {verb}`"
    for argv in argvs:
        if argv[1] == "diff":
            # Exit 1 says the graphs differ, which old.pb and new.pb do.
            result = subprocess.run([CLI] + argv[1:], cwd=session_dir,
                                    capture_output=True, text=True)
            assert result.returncode == 1, result.stderr
            continue
        run([CLI] + argv[1:], session_dir)
    assert (session_dir / "out").is_dir()
    assert (session_dir / "conv.html").stat().st_size > 0
    assert (session_dir / "conv.json").stat().st_size > 0


def test_python_lines_run(session_dir):
    env = dict(os.environ, PYTHONPATH=PYTHONPATH)
    section = first_session()
    one_liner = re.search(r"/usr/bin/python3 -c '(.*?)'\n", section, re.S)
    assert one_liner, "the first session lost its Python one-liner"
    out = run([sys.executable, "-c", one_liner.group(1)], session_dir, env)
    error, passed = out.stdout.split()
    assert float(error) < 1e-3 and passed == "True", out.stdout

    kernel = blocks(section, "python")
    assert len(kernel) == 1, "expected one NKI kernel file in the session"
    (session_dir / "add_kernel.py").write_text(kernel[0])
    out = run([sys.executable, "-m", "nkigraph.nki", "add_kernel.py"],
              session_dir, env)
    assert float(out.stdout.strip()) == 0.0, out.stdout
