#!/usr/bin/env python3
"""Tracing speed of kernels written in Python (nkigraph.nki), in
instructions per second, beside the binding's own floor measured in the
same run: the same instructions recorded by calling the tracer binding
directly, with no front-end work.

    PYTHONPATH=build/python /usr/bin/python3 bench/nki_trace_bench.py [N]

Three kernels of N element-wise instructions each (default 200,000):
`isa` (nisa calls with an explicit dst, the newer dialect), `language`
(nl.add of two loaded tiles into new tiles, the older dialect: a tile
allocated and freed per instruction), and `indexed` (nisa calls on
tiles sliced in the loop). Each is timed 5 times; the median is given,
and its ratio to the binding floor.
"""

import statistics
import sys
import time

import nkigraph.nki as nki
import nkigraph.nki.isa as nisa
import nkigraph.nki.language as nl
from nkigraph import _nkigraph


def isa_kernel(n):
    def kernel(a):
        out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
        t = nl.ndarray((128, 512), dtype=nl.float32, buffer=nl.sbuf)
        u = nl.ndarray((128, 512), dtype=nl.float32, buffer=nl.sbuf)
        nisa.dma_copy(dst=t, src=a)
        for _ in range(n):
            nisa.tensor_tensor(dst=u, data1=t, data2=t, op=nl.add)
        nisa.dma_copy(dst=out, src=u)
        return out
    return kernel


def language_kernel(n):
    def kernel(a):
        out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
        t = nl.load(a)
        u = t
        for _ in range(n):
            u = nl.add(t, t)
        nl.store(out, u)
        return out
    return kernel


def indexed_kernel(n):
    def kernel(a):
        out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
        t = nl.ndarray((128, 512), dtype=nl.float32, buffer=nl.sbuf)
        u = nl.ndarray((128, 512), dtype=nl.float32, buffer=nl.sbuf)
        nisa.dma_copy(dst=t, src=a)
        for i in range(n):
            j = (i % 4) * 128
            nisa.tensor_tensor(dst=u[:, j:j + 128], data1=t[:, j:j + 128],
                               data2=t[:, j:j + 128], op=nl.multiply)
        nisa.dma_copy(dst=out, src=u)
        return out
    return kernel


def floor_rate(n):
    """The binding alone: the same tensor_tensor, n times."""
    tracer = _nkigraph._Tracer("floor", [], "trn2", 1, 1)
    opcode = _nkigraph._opcodes["tensor_tensor"]
    memset = _nkigraph._opcodes["memset"]
    seconds = []

    def body(core):
        del core
        t = tracer.alloc([128, 512], "float32", "sbuf", "t", "f", 1)
        u = tracer.alloc([128, 512], "float32", "sbuf", "u", "f", 1)
        pattern = (512, 128, 1, 512)
        tracer.emit(memset, [("dst", t, 0, pattern)], [("value", 0.0)],
                    "f", 1)
        operands = [("dst", u, 0, pattern), ("data1", t, 0, pattern),
                    ("data2", t, 0, pattern)]
        attrs = (("op", "add"),)
        start = time.perf_counter()
        for i in range(n):
            tracer.emit(opcode, operands, attrs, "f", i)
        seconds.append(time.perf_counter() - start)

    tracer.trace(body)
    return n / seconds[0]


def rate(make, n):
    spec = nki.TensorSpec((128, 512))
    start = time.perf_counter()
    nki.trace(make(n), spec)
    return n / (time.perf_counter() - start)


def main(argv):
    n = int(argv[1]) if len(argv) > 1 else 200_000
    runs = 5
    floor = statistics.median(floor_rate(n) for _ in range(runs))
    print(f"{'kernel':<10} {'instr/s (median of 5)':>22} {'x floor':>8}")
    print(f"{'floor':<10} {floor:>22,.0f} {1.0:>8.2f}")
    for name, make in (("isa", isa_kernel), ("language", language_kernel),
                       ("indexed", indexed_kernel)):
        r = statistics.median(rate(make, n) for _ in range(runs))
        print(f"{name:<10} {r:>22,.0f} {r / floor:>8.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
