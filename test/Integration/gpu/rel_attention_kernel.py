#!/usr/bin/env python3
"""Runs the rel_attention GPU kernels of txl-rel-attention-to-gpu, compiled
to SPIR-V, on an OpenCL device (this machine's CPU in CI) and compares them
with the official Transformer-XL attention math in numpy: the four terms
(AC + BD), BD rel-shifted with the official pad + reshape + slice, the
official dec_attn_mask (causal with memory, same_length), softmax over keys,
then P·V.

usage: rel_attention_kernel.py [--tol T] KERNELS.mlir KERNELS.spv [...]

Each KERNELS.mlir is IR after txl-rel-attention-to-gpu (it gives each
kernel's workgroup tiles and block size, so that the harness launches what
the host code does), KERNELS.spv the same gpu.module as SPIR-V
(txl-translate --kernels-to-spirv). Runs every case whose d_head has a
kernel in a pair, prints one line per case with its max abs error, and
exits 1 if any case exceeds the tolerance or no case ran.
"""

import argparse
import os
import re
import sys

import numpy as np

os.environ.setdefault("PYOPENCL_NO_CACHE", "1")
import pyopencl as cl  # noqa: E402


def rel_shift(x):
    """The official _rel_shift of x [qlen, klen, ...]."""
    zero_pad = np.zeros((x.shape[0], 1) + x.shape[2:], x.dtype)
    x_padded = np.concatenate([zero_pad, x], axis=1)
    x_padded = x_padded.reshape((x.shape[1] + 1, x.shape[0]) + x.shape[2:])
    return x_padded[1:].reshape(x.shape)


def dec_attn_mask(qlen, klen, mem_len, same_length):
    """The official dec_attn_mask [qlen, klen]: True where hidden."""
    mlen = klen - qlen
    ones = np.ones((qlen, klen), bool)
    if same_length:
        mask_len = klen - mem_len
        shift = qlen - mask_len if mask_len > 0 else qlen
        return np.triu(ones, 1 + mlen) | np.tril(ones, -shift)
    return np.triu(ones, 1 + mlen)


def reference(q, k, v, r, u, vb, mem_len, same_length, scale):
    qlen, klen = q.shape[0], k.shape[0]
    q, k, v, r = (x.astype(np.float64) for x in (q, k, v, r))
    ac = np.einsum("ibnd,jbnd->ijbn", q + u, k)
    bd = rel_shift(np.einsum("ibnd,jnd->ijbn", q + vb, r))
    score = (ac + bd) * scale
    mask = dec_attn_mask(qlen, klen, mem_len, same_length)
    score[mask] = -np.inf
    score -= score.max(axis=1, keepdims=True)
    prob = np.exp(score)
    prob /= prob.sum(axis=1, keepdims=True)
    return np.einsum("ijbn,jbnd->ibnd", prob, v)


def kernel_layouts(mlir_text):
    """{kernel name: (workgroup tile shapes, block size)} from the IR."""
    kernels = {}
    for m in re.finditer(r"gpu\.func @(\w+)\((.*?)\) workgroup\((.*?)\) kernel"
                         r" attributes \{[^}]*known_block_size = array<i32: (\d+)",
                         mlir_text):
        tiles = [tuple(int(x) for x in t.split("x"))
                 for t in re.findall(r"memref<(\d+x\d+)xf32, 3>", m.group(3))]
        kernels[m.group(1)] = (tiles, int(m.group(4)))
    return kernels


class Device:
    def __init__(self, spirv):
        platform = cl.get_platforms()[0]
        self.device = platform.get_devices()[0]
        self.ctx = cl.Context([self.device])
        self.queue = cl.CommandQueue(self.ctx)
        self.program = cl.Program(self.ctx, spirv).build()
        self.kernels = {}
        print(f"device: {self.device.name} ({platform.name}, {platform.version})")

    def kernel(self, name):
        if name not in self.kernels:
            self.kernels[name] = cl.Kernel(self.program, name)
        return self.kernels[name]

    def memref(self, array, base=None):
        """The expanded memref descriptor of `array` (a view of `base`, a
        contiguous float32 array, or itself): buffer, buffer, offset, sizes,
        strides, all in elements."""
        base = array if base is None else base
        buf = cl.Buffer(self.ctx, cl.mem_flags.READ_WRITE | cl.mem_flags.COPY_HOST_PTR,
                        hostbuf=np.ascontiguousarray(base))
        item = array.itemsize
        offset = (array.__array_interface__["data"][0]
                  - base.__array_interface__["data"][0]) // item
        return buf, [buf, buf, np.int64(offset)] + \
            [np.int64(s) for s in array.shape] + \
            [np.int64(s // item) for s in array.strides]


def run_case(dev, layouts, case, rng, tol):
    qlen, mlen, batch, n_head, d_head, same_length, mem_len = case
    klen = qlen + mlen
    name = f"rel_attention_d{d_head}"
    tiles, block = layouts[name]
    scale = np.float32(1.0 / np.sqrt(d_head))
    # q, k, v as views of one [klen, batch, n_head, 3 * d_head] projection
    # (strided operands, q offset by mlen rows), like the model's qkv split.
    heads = rng.standard_normal((klen, batch, n_head, 3 * d_head)).astype(np.float32)
    q = heads[mlen:, :, :, :d_head]
    k = heads[:, :, :, d_head:2 * d_head]
    v = heads[:, :, :, 2 * d_head:]
    r = rng.standard_normal((klen, n_head, d_head)).astype(np.float32)
    u = rng.standard_normal((n_head, d_head)).astype(np.float32)
    vb = rng.standard_normal((n_head, d_head)).astype(np.float32)
    out = np.full((qlen, batch, n_head, d_head), np.nan, np.float32)

    args = []
    for x in (q, k, v):
        _, desc = dev.memref(x, heads)
        args += desc
    for x in (r, u, vb):
        _, desc = dev.memref(x)
        args += desc
    out_buf, desc = dev.memref(out)
    args += desc
    args += [np.int64(mem_len), np.int32(same_length), scale]
    args += [cl.LocalMemory(rows * cols * 4) for rows, cols in tiles]
    kernel = dev.kernel(name)
    query_tile = tiles[0][0]
    grid = (-(-qlen // query_tile) * block, batch * n_head)
    kernel(dev.queue, grid, (block, 1), *args)
    cl.enqueue_copy(dev.queue, out, out_buf)
    dev.queue.finish()

    want = reference(q, k, v, r, u, vb, mem_len, same_length, float(scale))
    err = float(np.max(np.abs(out - want)))
    ok = err <= tol
    print(f"{'ok  ' if ok else 'FAIL'} {name} qlen={qlen} mlen={mlen} batch={batch} "
          f"n_head={n_head} same_length={int(same_length)} mem_len={mem_len}: "
          f"max abs err {err:.3g}")
    return ok


# (qlen, mlen, batch, n_head, d_head, same_length, mem_len)
CASES = [
    (8, 0, 2, 4, 32, False, 0),       # no memory yet
    (37, 23, 3, 4, 32, False, 23),    # tiles cut at neither qlen nor klen
    (64, 64, 2, 4, 32, False, 64),    # ptb_small's eval shape
    (64, 64, 2, 4, 32, True, 64),     # same_length
    (40, 100, 1, 2, 32, True, 100),   # same_length, longer memory
    (48, 16, 1, 2, 32, True, 64),     # same_length, memory still filling
    (33, 70, 2, 2, 64, False, 70),
    (33, 70, 2, 2, 64, True, 70),
    (21, 40, 1, 3, 80, False, 40),    # d_head not a multiple of 32
    (30, 45, 2, 2, 41, True, 45),     # wt103_base's odd d_head
    (17, 35, 2, 2, 128, True, 35),    # narrower query tile
]


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("pairs", nargs="+", help="KERNELS.mlir KERNELS.spv ...")
    parser.add_argument("--tol", type=float, default=1e-5)
    args = parser.parse_args()
    if len(args.pairs) % 2:
        parser.error("expected KERNELS.mlir KERNELS.spv pairs")
    rng = np.random.default_rng(0)
    results = []
    for mlir, spirv in zip(args.pairs[::2], args.pairs[1::2]):
        layouts = kernel_layouts(open(mlir).read())
        dev = Device(open(spirv, "rb").read())
        results += [run_case(dev, layouts, case, rng, args.tol)
                    for case in CASES if f"rel_attention_d{case[4]}" in layouts]
    if not results:
        print("no kernel to run")
        return 1
    return 0 if all(results) else 1


if __name__ == "__main__":
    sys.exit(main())
