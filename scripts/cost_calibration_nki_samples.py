#!/usr/bin/env python3
"""The calibration rows that trace the public NKI samples' kernels.

The public NKI samples repository (aws-neuron/nki-samples) has unit tests
that benchmark its reference kernels on Trainium and assert a latency
limit: `latency_res.get_latency_percentile(p) <= limit` (microseconds).
Those limits are upper bounds the tests assert, not measurements. This
script traces the kernels, unmodified, through nkigraph.nki at the tests'
shapes and dtypes and sets the cost model's estimate beside each limit.

    # trace the kernels: DIR holds the samples' kernel files (not part of
    # this project, see CASES for the layout); writes the rows as TSV
    python3 scripts/cost_calibration_nki_samples.py trace DIR > rows.tsv

    # append rows.tsv to bench/cost_calibration's table (stdin) and
    # recompute the median over all rows
    build/bench/cost_calibration | \
        python3 scripts/cost_calibration_nki_samples.py merge rows.tsv

Needs PYTHONPATH to reach the nkigraph module (build/python) for `trace`.
"""

import datetime
import hashlib
import math
import os
import sys
import traceback

SAMPLES = "https://github.com/aws-neuron/nki-samples"
RMSNORM_TEST = ("test/unit/test_rmsnorm_qkv.py at commit "
                "05c076990ef230876106db737998d266fa8fc91b")
AVGPOOL_TEST = ("test/unit/test_adaptive_avg_pool2d.py at commit "
                "a02929410cabca4c88ed5ee893874645cbabb47b")
RESIZE_TEST = ("test/unit/test_resize_nearest.py at commit "
               "23835a53cfcb83fcf6bb0eeb0cb98f39d15a8019")
DOUBLE_ROW_TEST = ("test/unit/test_double_row_matmul.py at commit "
                   "025b291454e274d2a37990026639a64accaf196f")
SCATTER_TEST = ("test/unit/test_select_and_scatter.py at commit "
                "23835a53cfcb83fcf6bb0eeb0cb98f39d15a8019")

# The kernel files, as DIR/<folder>/<file>, each copied verbatim from one
# stored version of the samples repository and checked by its sha256 so
# that a row always names the code it was estimated on.
FILES = {
    "fused_linear_23835a53/allocated_fused_linear.py": (
        "b3f945754c440bc5be0e18dcfbd4bafcaf679c8d59e2bf2708c28fa855052b05",
        "src/nki_samples/reference/allocated_fused_linear.py at commit "
        "23835a53cfcb83fcf6bb0eeb0cb98f39d15a8019"),
    "vision_009f1263/vision.py": (
        "68eb1bc5489a96f1c125257cf5f3ca592f7d1eb20cd7d37efb23a85628aed9f2",
        "src/nki_samples/reference/vision.py at commit "
        "009f1263ee29feb4582ed86731920ed9f675a800 (resize_nearest_fixed_dma"
        "_kernel loading one pixel per DMA)"),
    "double_row_41753fb3/double_row_matmul.py": (
        "b1817ee03a76da1af17544145b09bc45403b7996db46231ef9b64a722a0980c0",
        "src/nki_samples/reference/double_row_matmul.py at commit "
        "41753fb36f55dd9d0c3c737ce7ee12e968030a95"),
    "vision_adaptive/vision.py": (
        "8a7ac86bbdc8bf94f8fa1d75badb7496bf1a001945ba04dad05bd28c7e726766",
        "src/nki_samples/reference/vision.py, the stored version that "
        "defines adaptive_avg_pool2d_kernel (commit not recorded; sha256 "
        "8a7ac86b...)"),
}


def case(what, file, kernel, args, kwargs, grid, limit, percentile, test):
    return dict(what=what, file=file, kernel=kernel, args=args, kwargs=kwargs,
                grid=grid, limit=limit, percentile=percentile, test=test)


def cases():
    """(kernel, shapes, the test's limit) for each test case used."""
    out = []
    for seqlen, dim, d_head, dtype, limit in [
            (128, 512, 512, "float16", 25),
            (512, 1024, 384, "bfloat16", 40),
            (128, 1024, 512, "bfloat16", 28)]:
        out.append(case(
            f"allocated_fused_rms_norm_qkv, hidden [1,{seqlen},{dim}] @ "
            f"[{dim},{d_head}] {dtype}",
            "fused_linear_23835a53/allocated_fused_linear.py",
            "allocated_fused_rms_norm_qkv",
            [((1, seqlen, dim), dtype), ((dim, d_head), dtype)], {}, None,
            limit, 50, RMSNORM_TEST))
    for n, c, h, w, size, dtype, limit in [
        (1, 64, 56, 56, 7, "float32", 65 * 1.05),
        (2, 128, 28, 28, 7, "float32", 109 * 1.05),
        (1, 256, 14, 14, 7, "float16", 88 * 1.05),
        (4, 64, 56, 56, (7, 7), "float32", 152 * 1.05),
        (2, 128, 28, 28, (14, 14), "float32", 327 * 1.05),
        (1, 512, 7, 7, 1, "float32", 14 * 1.05),
        (8, 64, 32, 32, (4, 4), "float16", 103 * 1.05),
        (2, 2048, 32, 32, (3, 3), "float32", 564 * 1.05),
        (2, 64, 256, 256, 1, "float32", 255 * 1.05)]:
        out.append(case(
            f"adaptive_avg_pool2d_kernel, [{n},{c},{h},{w}] {dtype} to "
            f"{size}", "vision_adaptive/vision.py",
            "adaptive_avg_pool2d_kernel",
            [((n, c, h, w), dtype)], {"output_size": size}, None, limit, 99,
            AVGPOOL_TEST))
    for b, dtype, limit in [(10, "float32", 1740), (1, "float16", 659),
                            (1, "bfloat16", 659)]:
        out.append(case(
            f"resize_nearest_fixed_dma_kernel, grid [{b}], [{b},30,20,1280] "
            f"to [{b},59,38,1280] {dtype}", "vision_009f1263/vision.py",
            "resize_nearest_fixed_dma_kernel", [((b, 30, 20, 1280), dtype)],
            {"out_shape": (b, 59, 38, 1280)}, b, limit, 50, RESIZE_TEST))
    out.append(case(
        "select_and_scatter_kernel, [8,64,112,112] and [8,64,56,56] float32",
        "vision_009f1263/vision.py", "select_and_scatter_kernel",
        [((8, 64, 112, 112), "float32"), ((8, 64, 56, 56), "float32")], {},
        None, 4500, 50, SCATTER_TEST))
    # The test runs only on trn2 and asserts p99.
    out.append(case(
        "quantized_double_row_matmul, [512,16384] bf16 @ [16384,1024] "
        "fp8_e4m3 (blocks 2 x 2 x 16)",
        "double_row_41753fb3/double_row_matmul.py",
        "quantized_double_row_matmul",
        [((512, 16384), "bfloat16"), ((8192, 2048), "float8_e4m3"),
         ((128, 1024), "bfloat16"), 2, 2, 16], {}, None, 320, 99,
        DOUBLE_ROW_TEST))
    return out


def load_module(directory, relative):
    """Imports DIR/relative after checking it is the file the rows name."""
    import importlib.util
    path = os.path.join(directory, relative)
    digest = hashlib.sha256(open(path, "rb").read()).hexdigest()
    if digest != FILES[relative][0]:
        raise SystemExit(f"{path}: sha256 {digest} is not the recorded "
                         f"{FILES[relative][0]} ({FILES[relative][1]})")
    name = "nki_sample_" + relative.replace("/", "_").replace(".py", "")
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def trace(directory):
    import nkigraph
    import nkigraph.nki as nki
    import nkigraph.nki.language as nl
    nki.install_aliases()
    modules = {}
    print(f"# traced {datetime.date.today().isoformat()} by "
          "scripts/cost_calibration_nki_samples.py")
    print("# status\twhat\tpercentile\tlimit_us\testimate_us\tinstructions\t"
          "kernel file\ttest")
    for c in cases():
        if c["file"] not in modules:
            modules[c["file"]] = load_module(directory, c["file"])
        kernel = getattr(modules[c["file"]], c["kernel"])
        if c["grid"] is not None:
            kernel = kernel[c["grid"]]
        source = FILES[c["file"]][1]
        # dtypes as nki.language's objects: kernels compare `t.dtype == nl.X`
        args = [(a[0], getattr(nl, a[1])) if isinstance(a, tuple) else a
                for a in c["args"]]
        try:
            graph = nki.trace(kernel, *args, **c["kwargs"])
            estimate = nkigraph.profile(graph).latency_ns / 1000
            fields = ["row", c["what"], c["percentile"], f"{c['limit']:.4g}",
                      f"{estimate:.4g}", graph.num_instructions]
        except Exception as e:  # a name the front-end lacks, or a refusal
            where = ""
            frames = traceback.extract_tb(e.__traceback__)
            kernel_frames = [f for f in frames
                             if os.path.abspath(f.filename).startswith(
                                 os.path.abspath(directory))]
            if kernel_frames:
                where = (f" at {os.path.basename(kernel_frames[-1].filename)}:"
                         f"{kernel_frames[-1].lineno} "
                         f"`{kernel_frames[-1].line.strip()}`")
            message = f"{type(e).__name__}: {e}"
            message = message.replace(os.path.abspath(directory) + "/", "")
            message = message.replace("\t", " ").replace("\n", " ")
            fields = ["left out", c["what"], c["percentile"],
                      f"{c['limit']:.4g}", message + where, ""]
        print("\t".join(str(f) for f in fields + [source, c["test"]]))


def read_rows(tsv):
    date, rows = None, []
    for line in open(tsv):
        line = line.rstrip("\n")
        if line.startswith("# traced "):
            date = line.split()[2]
        if not line or line.startswith("#"):
            continue
        rows.append(line.split("\t"))
    return date, rows


def median(values):
    v = sorted(values)
    if not v:
        return 0.0
    n = len(v)
    return v[n // 2] if n % 2 else (v[n // 2 - 1] + v[n // 2]) / 2


def merge(tsv, fresh):
    date, rows = read_rows(tsv)
    logs, latency_logs, misses, number = [], [], [], 0
    table = []
    for line in sys.stdin.read().splitlines():
        cells = [c.strip() for c in line.split("|")]
        if len(cells) > 8 and cells[1].isdigit():
            number = int(cells[1])
            published, estimate = float(cells[5]), float(cells[6])
            ratio = estimate / published
            logs.append(abs(math.log(ratio)))
            if "latency" in cells[4]:
                latency_logs.append(abs(math.log(ratio)))
            if abs(math.log(ratio)) > math.log(2):
                misses.append(f"{number} ({ratio:.2f}x)")
            table.append(line)
        elif line.startswith("|"):
            table.append(line)
    measured_logs = list(logs)
    bound_logs = []
    origin = (f"this run, {date}" if fresh else
              f"the run of {date}: the samples' files were not given to this "
              "run, so these rows are the last traced ones")
    left_out = []
    for r in rows:
        status, what, percentile, limit = r[0], r[1], r[2], r[3]
        if status != "row":
            left_out.append(r)
            continue
        number += 1
        estimate, instructions, kernel_file, test = r[4], r[5], r[6], r[7]
        ratio = float(estimate) / float(limit)
        logs.append(abs(math.log(ratio)))
        latency_logs.append(abs(math.log(ratio)))
        bound_logs.append(abs(math.log(ratio)))
        if ratio > 2:
            misses.append(f"{number} ({ratio:.2f}x, above the limit)")
        table.append(
            f"| {number} | NKI samples: {what} | Trainium | latency limit "
            f"(us), p{percentile} asserted <= | {limit} | {estimate} | "
            f"{ratio:.2f} "
            f"(bound) | {instructions} | upper bound asserted by {test} "
            f"({SAMPLES}); kernel {kernel_file}, traced unmodified; row from "
            f"{origin} |")
    print("\n".join(table))
    print(f"\nrows: {len(logs)}; median |log(estimate / published)|: "
          f"{median(logs):.3f} (a factor of {math.exp(median(logs)):.2f}; the "
          f"target is log 2 = 0.693, a factor of 2). The {len(latency_logs)} "
          f"latency rows alone: {median(latency_logs):.3f} (a factor of "
          f"{math.exp(median(latency_logs)):.2f}). The {len(measured_logs)} "
          f"measured rows alone: {median(measured_logs):.3f} (a factor of "
          f"{math.exp(median(measured_logs)):.2f}); the {len(bound_logs)} "
          f"limit rows alone: {median(bound_logs):.3f} (a factor of "
          f"{math.exp(median(bound_logs)):.2f}).\n")
    print("rows off by more than 2x: " + (", ".join(misses) or "none"))
    if left_out:
        print(f"\n## NKI samples' test cases left out (traced {date})\n")
        print("| kernel and shape | limit (us) | why | kernel file | test |")
        print("|---|---:|---|---|---|")
        for r in left_out:
            print(f"| {r[1]} | {r[3]} | {r[4]} | {r[6]} | {r[7]} |")


def main():
    if len(sys.argv) == 3 and sys.argv[1] == "trace":
        trace(sys.argv[2])
    elif len(sys.argv) in (3, 4) and sys.argv[1] == "merge":
        fresh = len(sys.argv) == 4 and sys.argv[3] == "--fresh"
        merge(sys.argv[2], fresh=fresh)
    else:
        raise SystemExit(__doc__)


if __name__ == "__main__":
    main()
