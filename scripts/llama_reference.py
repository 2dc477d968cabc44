#!/usr/bin/env python3
"""A Llama-3 decoder step in PyTorch, to check transformer_tkg against.

Two commands:

  llama_reference.py inputs DIR --layers L [--dtype bfloat16|float32]
      writes transformer_tkg's inputs as .npy files in DIR (2-byte dtypes
      as uint16 raw bits, which `nkigraph run --input` maps straight into
      device memory): Llama-3-8B weights per tensor-parallel rank at
      fan-in scale, RoPE cos/sin of the cache position (theta 500000), a
      mask of the prior positions, a cache holding values there.

  llama_reference.py compare DIR OUT --layers L [--dtype ...]
      builds the decoder in PyTorch from DIR's weights — RMSNorm,
      rotate-half RoPE at the cache position, grouped-query attention over
      the cache and the active tokens, SiLU-gated MLP, residuals, the
      tensor-parallel ranks' partial sums added — runs it on DIR's inputs,
      and compares nkigraph's outputs in OUT (out, K_cache, V_cache, as
      `nkigraph run --raw-bits` writes them) with it, in float32 and in
      bfloat16 (values rounded to bfloat16 where the kernel holds them in
      its dtype), as max |error| over the reference's max |value|: within
      the kernel family's tolerance (1e-4 float32, 3e-2 bfloat16), or for
      bfloat16 twice the drift of PyTorch's bfloat16 model from its
      float32 one when that is larger (deep stacks). Exit status 1 when a
      comparison fails.

The model is written from the Llama-3 decoder, not from the kernel: a
rank's weights are its shard of the full model's (W_qkv its q heads, k and
v heads; W_o and W_down the rows of its heads and intermediate columns),
so the per-rank sums are the full model's matmuls. Layer by layer, the
weights read from the memory-mapped files, so 32 layers need no more
memory than one.
"""
import argparse
import os
import sys

import numpy as np

# Llama-3-8B at tensor parallelism 8, per rank.
SHAPE = dict(tp=8, hidden=4096, q_heads=4, kv_heads=1, head_dim=128,
             intermediate=1792, batch=1, seq=1, cache=2048)
ROPE_THETA = 500000.0
EPS = 1e-5


def bf16_bits(values):
    """float32 -> bfloat16 raw bits, round to nearest even (no NaNs here)."""
    u = np.ascontiguousarray(values, dtype=np.float32).view(np.uint32)
    rounded = u + (0x7FFF + ((u >> 16) & 1))
    return (rounded >> 16).astype(np.uint16)


def bits_to_f32(bits):
    return (np.asarray(bits, dtype=np.uint16).astype(np.uint32) << 16).view(
        np.float32)


PAGE = 4096


def open_npy(path, dtype, shape):
    """A .npy file (version 1.0) whose values start on a 4 KiB page — its
    header padded with spaces, as the format allows — so that `nkigraph
    run` maps its pages into device memory instead of copying them;
    returned as a writable memory map of the values."""
    header = "{'descr': '%s', 'fortran_order': False, 'shape': %r, }" % (
        np.dtype(dtype).str, tuple(shape))
    header = header.ljust(PAGE - 10 - 1) + "\n"
    nbytes = int(np.prod(shape)) * np.dtype(dtype).itemsize
    with open(path, "wb") as f:
        f.write(b"\x93NUMPY\x01\x00" + len(header).to_bytes(2, "little"))
        f.write(header.encode("latin1"))
        f.truncate(PAGE + nbytes)
    return np.memmap(path, dtype=dtype, mode="r+", offset=PAGE,
                     shape=tuple(shape))


def save(directory, name, values, dtype):
    path = os.path.join(directory, name + ".npy")
    if values.dtype != np.int32 and dtype != "float32":
        values = bf16_bits(values)
    out = open_npy(path, values.dtype, values.shape)
    out[...] = values
    out.flush()
    del out


def save_uniform(directory, name, shape, scale, dtype, rng):
    """Uniform in ±scale, written a slice of the leading axes at a time, so
    the float32 draw never holds more than one [H, ...] matrix."""
    path = os.path.join(directory, name + ".npy")
    out = open_npy(path, np.float32 if dtype == "float32" else np.uint16,
                   shape)
    flat = out.reshape(-1, shape[-2] * shape[-1]) if len(shape) > 2 else \
        out.reshape(1, -1)
    for i in range(flat.shape[0]):
        v = rng.random(flat.shape[1], dtype=np.float32) * np.float32(
            2 * scale) - np.float32(scale)
        flat[i] = v if dtype == "float32" else bf16_bits(v)
    out.flush()
    del out


def make_inputs(args):
    s = SHAPE
    L, R, H, d = args.layers, s["tp"], s["hidden"], s["head_dim"]
    Hq, Hkv, I, B, S, C = (s["q_heads"], s["kv_heads"], s["intermediate"],
                           s["batch"], s["seq"], s["cache"])
    os.makedirs(args.dir, exist_ok=True)
    rng = np.random.default_rng(args.seed)
    dt = args.dtype
    position = np.full(B, args.position, dtype=np.int32)
    save(args.dir, "X", rng.standard_normal((B, S, H), dtype=np.float32), dt)
    for name in ("rmsnorm_attn_gamma", "rmsnorm_mlp_gamma"):
        save(args.dir, name,
             (0.5 + rng.random((L, H), dtype=np.float32)), dt)
    W = (Hq + 2 * Hkv) * d
    save_uniform(args.dir, "W_qkv", (R, L, H, W), np.sqrt(3 / H), dt, rng)
    save_uniform(args.dir, "W_o", (R, L, Hq * d, H), np.sqrt(3 / (Hq * d * R)),
                 dt, rng)
    save_uniform(args.dir, "W_gate_up", (R, L, H, 2, I), np.sqrt(3 / H), dt,
                 rng)
    save_uniform(args.dir, "W_down", (R, L, I, H), np.sqrt(3 / (I * R)), dt,
                 rng)
    for name in ("K_cache", "V_cache"):
        save_uniform(args.dir, name, (R, L, B, Hkv, C, d), 1.0, dt, rng)
    # RoPE angles (position + s) · theta^(−2j/d), in float64, then rounded.
    inv_freq = ROPE_THETA ** (-np.arange(0, d, 2, dtype=np.float64) / d)
    angles = (position[:, None, None] + np.arange(S)[None, :, None]) * \
        inv_freq[None, None, :]
    save(args.dir, "cos", np.cos(angles).astype(np.float32), dt)
    save(args.dir, "sin", np.sin(angles).astype(np.float32), dt)
    mask = (np.arange(C)[None, :] < position[:, None]).astype(np.float32)
    save(args.dir, "mask_cache", np.broadcast_to(mask, (B, C)).copy(), dt)
    save(args.dir, "cache_position", position, dt)


class Decoder:
    """The decoder in torch, in `dtype` (torch.float32 or torch.bfloat16):
    in bfloat16, every tensor the kernel holds in its dtype is rounded to
    it (normalised rows, q/k/v, block outputs, partial and reduced sums,
    the residual, the gated product, the cache); statistics (RMS, softmax)
    are taken in float32 as the hardware's engines do."""

    def __init__(self, torch, directory, layers, dtype):
        self.torch, self.dir, self.L, self.dtype = torch, directory, layers, \
            dtype

    def load(self, name):
        a = np.load(os.path.join(self.dir, name + ".npy"), mmap_mode="r")
        return a

    def tensor(self, array):
        a = np.asarray(array)
        f = bits_to_f32(a) if a.dtype == np.uint16 else a.astype(np.float32)
        return self.torch.from_numpy(np.ascontiguousarray(f))

    def r(self, t):
        """Held in the kernel's dtype."""
        return t.to(self.dtype).float()

    def rmsnorm(self, x, gamma):
        rstd = self.torch.rsqrt((x * x).mean(-1, keepdim=True) + EPS)
        return self.r(x * rstd * gamma)

    def rope(self, x, cos, sin):
        half = x.shape[-1] // 2
        x1, x2 = x[..., :half], x[..., half:]
        rotated = self.torch.cat((-x2, x1), dim=-1)
        return x * self.torch.cat((cos, cos), -1) + rotated * \
            self.torch.cat((sin, sin), -1)

    def run(self):
        torch, s = self.torch, SHAPE
        R, H, d = s["tp"], s["hidden"], s["head_dim"]
        Hq, Hkv, I = s["q_heads"], s["kv_heads"], s["intermediate"]
        B, S, C = s["batch"], s["seq"], s["cache"]
        T = B * S
        x = self.r(self.tensor(self.load("X")).reshape(T, H))
        cos = self.tensor(self.load("cos"))  # [B, S, d/2]
        sin = self.tensor(self.load("sin"))
        mask = self.tensor(self.load("mask_cache"))  # [B, C]
        position = np.asarray(self.load("cache_position"))
        g_attn = self.load("rmsnorm_attn_gamma")
        g_mlp = self.load("rmsnorm_mlp_gamma")
        w_qkv, w_o = self.load("W_qkv"), self.load("W_o")
        w_gu, w_down = self.load("W_gate_up"), self.load("W_down")
        k_in, v_in = self.load("K_cache"), self.load("V_cache")
        k_out = np.empty(k_in.shape, np.float32)
        v_out = np.empty(v_in.shape, np.float32)
        scale = 1.0 / np.sqrt(d)
        for l in range(self.L):
            # Attention, each rank's heads, summed over the ranks.
            xn = self.rmsnorm(x, self.tensor(g_attn[l]))
            total = torch.zeros(T, H)
            for r in range(R):
                qkv = self.r(xn @ self.tensor(w_qkv[r, l]))
                qkv = qkv.reshape(B, S, Hq + 2 * Hkv, d)
                q = self.r(self.rope(qkv[:, :, :Hq], cos[:, :, None],
                                     sin[:, :, None]))
                k = self.r(self.rope(qkv[:, :, Hq:Hq + Hkv], cos[:, :, None],
                                     sin[:, :, None]))
                v = qkv[:, :, Hq + Hkv:]
                kc = self.tensor(k_in[r, l])  # [B, Hkv, C, d]
                vc = self.tensor(v_in[r, l])
                attn = torch.zeros(B, S, Hq, d)
                for b in range(B):
                    prior = mask[b] == 1
                    for h in range(Hq):
                        g = h // (Hq // Hkv)
                        keys = torch.cat((kc[b, g][prior], k[b, :, g]), 0)
                        vals = torch.cat((vc[b, g][prior], v[b, :, g]), 0)
                        n_prior = int(prior.sum())
                        for si in range(S):
                            scores = (keys[:n_prior + si + 1] @ q[b, si, h]) \
                                * scale
                            p = torch.softmax(scores, 0)
                            attn[b, si, h] = p @ vals[:n_prior + si + 1]
                    kc[b, :, position[b]:position[b] + S] = k[b].transpose(0, 1)
                    vc[b, :, position[b]:position[b] + S] = v[b].transpose(0, 1)
                k_out[r, l] = self.r(kc).numpy()
                v_out[r, l] = self.r(vc).numpy()
                o = self.r(self.r(attn.reshape(T, Hq * d)) @
                           self.tensor(w_o[r, l]))
                total += o
            x = self.r(x + self.r(total))
            # MLP, each rank's intermediate columns, summed over the ranks.
            xn = self.rmsnorm(x, self.tensor(g_mlp[l]))
            total = torch.zeros(T, H)
            for r in range(R):
                gu = xn @ self.tensor(w_gu[r, l]).reshape(H, 2 * I)
                gate, up = gu[:, :I], gu[:, I:]
                product = self.r(torch.nn.functional.silu(gate) * up)
                total += self.r(product @ self.tensor(w_down[r, l]))
            x = self.r(x + self.r(total))
        return x.reshape(B, S, H).numpy(), k_out, v_out


def read_output(directory, name):
    a = np.load(os.path.join(directory, name + ".npy"), mmap_mode="r")
    return bits_to_f32(a) if a.dtype == np.uint16 else np.asarray(a, np.float32)


def relative_error(got, want):
    """The kernel's comparison: max |got − want| over max |want|."""
    return float(np.max(np.abs(got - want))) / max(
        float(np.max(np.abs(want))), 1e-30)


def compare(args):
    import torch
    torch.set_num_threads(max(1, os.cpu_count() or 1))
    got = {"out": read_output(args.out, "out"),  # [R, B, S, H]
           "K_cache": read_output(args.out, "K_cache"),
           "V_cache": read_output(args.out, "V_cache")}
    names = ("out", "K_cache", "V_cache")

    def run(dtype):
        x, k, v = Decoder(torch, args.dir, args.layers, dtype).run()
        return {"out": np.broadcast_to(x, got["out"].shape), "K_cache": k,
                "V_cache": v}

    references = {"float32": run(torch.float32)}
    # The kernel family's tolerance (kernels/decode_common.cc). A bfloat16
    # stack drifts from float32 layer by layer whoever computes it: the
    # tolerance is then also at least twice the drift of PyTorch's own
    # bfloat16 model from its float32 one.
    tolerance = {name: 1e-4 if args.dtype == "float32" else 3e-2
                 for name in names}
    if args.dtype == "bfloat16":
        references["bfloat16"] = run(torch.bfloat16)
        for name in names:
            drift = relative_error(references["bfloat16"][name],
                                   references["float32"][name])
            tolerance[name] = max(tolerance[name], 2 * drift)
            print(f"{args.layers} layers, torch bfloat16 vs torch float32: "
                  f"{name} drift {drift:.3g} of its scale")
    failed = False
    for label, want in references.items():
        for name in names:
            err = relative_error(got[name], want[name])
            ok = err <= tolerance[name] and bool(np.all(np.isfinite(
                got[name])))
            failed |= not ok
            print(f"{args.layers} layers, nkigraph {args.dtype} vs torch "
                  f"{label}: {name} max error {err:.3g} of its scale "
                  f"(tolerance {tolerance[name]:.3g}) "
                  f"{'ok' if ok else 'FAILED'}")
    return 1 if failed else 0


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    for name in ("inputs", "compare"):
        p = sub.add_parser(name)
        p.add_argument("dir")
        if name == "compare":
            p.add_argument("out")
        p.add_argument("--layers", type=int, required=True)
        p.add_argument("--dtype", default="bfloat16",
                       choices=("bfloat16", "float32"))
        p.add_argument("--seed", type=int, default=1)
        p.add_argument("--position", type=int, default=1500,
                       help="cache position of the token (default 1500)")
    args = parser.parse_args()
    if args.command == "inputs":
        make_inputs(args)
        return 0
    return compare(args)


if __name__ == "__main__":
    sys.exit(main())
