#!/usr/bin/python3
"""The interpreter speed rows of docs/performance.md, measured in one go: each
figure N times (default 3), the median printed with the range, the load
average before and after. With --baseline DIR (a build directory of
another revision, or a folder holding its interp_bench, cross_entropy_bench,
trace_bench and nkigraph), each run of a figure is followed by the same
run of the baseline, so both sides share the machine's state of the
moment and their ratio means something even on a busy machine.

  scripts/speed_figures.py [--build build] [--baseline DIR] [--runs 3]
      [--only tiled,numpy,dispatch,cross_entropy,trace,pytorch,fgcc64]
      [--bench-scripts DIR]

--bench-scripts names the folder of the eager-numpy and PyTorch scripts
(eager_numpy_tiled_matmul.py, eager_numpy_cross_entropy.py,
vs_pytorch.py); without it those rows are skipped. fgcc64 (fgcc at tp 64,
about a minute a run and 2 GB) runs only when named in --only. Needs the
benchmarks built (`ninja -C build benchmarks`); run on a quiet machine.

The sgemm baseline and numpy use the OpenBLAS kernel the library picks for
the processor, printed first ("OpenBLAS core"). OpenBLAS 0.3.21 (Debian
12) picks its AVX2 Haswell kernel on AMD processors with AVX-512, which
flatters the interpreter's AVX-512 kernel; OPENBLAS_CORETYPE=SkylakeX in
the environment makes every run here use OpenBLAS's AVX-512 kernel.
"""
import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time


def load():
    with open("/proc/loadavg") as f:
        return " ".join(f.read().split()[:3])


def blas_core():
    """The kernel OpenBLAS picks here, as it says with OPENBLAS_VERBOSE=2."""
    env = dict(os.environ, OPENBLAS_VERBOSE="2")
    out = subprocess.run(
        ["/usr/bin/python3", "-c",
         "import numpy; a = numpy.ones((64, 64), numpy.float32); a @ a"],
        capture_output=True, text=True, env=env)
    m = re.search(r"Core: (\S+)", out.stdout + out.stderr)
    return m[1] if m else "unknown"


def find(directory, name):
    for sub in ("bench", "tools", ""):
        path = os.path.join(directory, sub, name)
        if os.path.isfile(path) and os.access(path, os.X_OK):
            return os.path.abspath(path)
    sys.exit(f"speed_figures: no {name} under {directory}")


def google_bench(binary, pattern):
    """Runs a Google Benchmark binary; returns {run name: counters}."""
    out = subprocess.run(
        [binary, f"--benchmark_filter={pattern}", "--benchmark_format=json"],
        capture_output=True, text=True, check=True).stdout
    return {b["name"]: b for b in json.loads(out)["benchmarks"]}


def script_ms(script, threads):
    env = dict(os.environ, OPENBLAS_NUM_THREADS=str(threads))
    out = subprocess.run(["/usr/bin/python3", script], capture_output=True,
                         text=True, check=True, env=env).stdout
    return float(re.search(r": (\d+) ms", out).group(1))


def wall(cmd):
    start = time.perf_counter()
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL,
                   stderr=subprocess.DEVNULL)
    return time.perf_counter() - start


class Table:
    def __init__(self):
        self.rows = {}  # (figure, side) -> [values]

    def add(self, figure, side, value):
        self.rows.setdefault((figure, side), []).append(value)

    def print(self):
        if not self.rows:
            return
        width = max(len(f) for f, _ in self.rows) + 2
        for (figure, side), values in self.rows.items():
            med = statistics.median(values)
            spread = ", ".join(f"{v:.4g}" for v in values)
            print(f"{figure:{width}s} {side:9s} median {med:9.4g}  ({spread})")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--build", default="build")
    parser.add_argument("--baseline")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--only",
                        default="tiled,numpy,dispatch,cross_entropy,trace,pytorch")
    parser.add_argument("--bench-scripts")
    args = parser.parse_args()
    only = set(args.only.split(","))
    sides = [("this", args.build)]
    if args.baseline:
        sides.append(("baseline", args.baseline))
    table = Table()
    print(f"OpenBLAS core: {blas_core()}", flush=True)
    print(f"load before: {load()}", flush=True)

    for _ in range(args.runs):
        for side, directory in sides:
            if "tiled" in only:
                runs = google_bench(find(directory, "interp_bench"), "TiledMatmul")
                for name, b in runs.items():
                    tag = re.sub(r"BM_InterpTiledMatmul/size:(\d+)/bf16:(\d)/threads:(\d).*",
                                 lambda m: f"tiled_matmul {m[1]} {'bf16' if m[2] == '1' else 'fp32'} t{m[3]}",
                                 name)
                    table.add(tag + " ms", side, b["interpreter_ms"])
                    table.add(tag + " x sgemm", side, b["ratio_vs_sgemm"])
            if "dispatch" in only:
                for name, b in google_bench(find(directory, "interp_bench"), "Dispatch").items():
                    tag = "dispatch distinct" if "Distinct" in name else "dispatch"
                    table.add(f"{tag} ns/instr (cpu)", side, b["cpu_ns_per_instruction"])
            if "cross_entropy" in only:
                runs = google_bench(find(directory, "cross_entropy_bench"), "Forward")
                for name, b in runs.items():
                    dtype = "bf16" if "bf16:1" in name else "fp32"
                    # Builds before the threads argument ran at the machine's count.
                    m = re.search(r"threads:(\d)", name)
                    threads = f"t{m[1]}" if m else "t(machine)"
                    table.add(f"cross_entropy_forward {dtype} {threads} ms", side,
                              b["interpreter_ms"])
            if "trace" in only:
                runs = google_bench(find(directory, "trace_bench"),
                                    "BM_TraceInstructions|BM_ParseGraph/")
                for name, b in runs.items():
                    if name.startswith("BM_TraceInstructions"):
                        table.add("trace M instr/s", side, b["items_per_second"] / 1e6)
                    else:
                        # BM_ParseGraph/threads:N (the baseline's has no threads).
                        m = re.search(r"threads:(\d+)", name)
                        tag = f"parse (arena) t{m[1]}" if m else "parse (arena)"
                        table.add(tag + " MB/s", side, b["bytes_per_second"] / 1e6)
            if "pytorch" in only and args.bench_scripts:
                env = dict(os.environ, NKIGRAPH=find(directory, "nkigraph"))
                out = subprocess.run(
                    ["/usr/bin/python3", os.path.join(args.bench_scripts, "vs_pytorch.py")],
                    capture_output=True, text=True, check=True, env=env).stdout
                for line in out.splitlines():
                    m = re.match(r"(\S+)\s+trace.*run\s+([\d.]+)s\s+torch\s+([\d.]+)s\s+ratio\s+([\d.]+)", line)
                    if m:
                        table.add(f"vs_pytorch {m[1]} run s", side, float(m[2]))
                        table.add(f"vs_pytorch {m[1]} torch s", side, float(m[3]))
                    m = re.match(r"geomean ratio ([\d.]+)", line)
                    if m:
                        table.add("vs_pytorch geomean", side, float(m[1]))
            if "fgcc64" in only:
                nkigraph = find(directory, "nkigraph")
                with tempfile.TemporaryDirectory() as work:
                    graph = os.path.join(work, "fgcc64.pb")
                    subprocess.run([nkigraph, "trace", "fgcc", "--set", "tp_degree=64",
                                    "--set", "m=128", "--set", "k=1024", "--set", "n=1024",
                                    "-o", graph], check=True, stdout=subprocess.DEVNULL)
                    table.add("fgcc tp64 run s", side,
                              wall([nkigraph, "run", graph, "--random-inputs", "1", "-o",
                                    os.path.join(work, "out"), "--quiet"]))
        # Scripts that do not depend on the build: once a round.
        if "numpy" in only and args.bench_scripts:
            for threads in (1, 2):
                table.add(f"eager numpy tiled_matmul t{threads} ms", "numpy",
                          script_ms(os.path.join(args.bench_scripts,
                                                 "eager_numpy_tiled_matmul.py"), threads))
                table.add(f"eager numpy cross_entropy t{threads} ms", "numpy",
                          script_ms(os.path.join(args.bench_scripts,
                                                 "eager_numpy_cross_entropy.py"), threads))
        print(f"round done, load {load()}", flush=True)

    table.print()
    print(f"load after: {load()}")


if __name__ == "__main__":
    main()
