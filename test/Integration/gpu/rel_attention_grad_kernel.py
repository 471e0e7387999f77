#!/usr/bin/env python3
"""Runs the fused attention backward kernels of txl-rel-attention-to-gpu
(rel_attention_grad_{q,kv,r}_d<d_head>, launched in that order as the host
code does) through the runtime's device layer on an OpenCL device (this
machine's CPU in CI), and compares their gradients with the official
attention math's, differentiated in numpy (float64): the four terms, the
decoder mask (causal with memory, same_length), softmax over keys, P·V.

usage: rel_attention_grad_kernel.py --device-lib LIB [--tol T] KERNELS.mlir KERNELS.img

Prints one line per case with the worst relative error ||g - g_ref|| /
||g_ref|| over dq, dk, dv, dr, du and dv_bias, and exits 1 if any case
exceeds the tolerance or no case ran.
"""

import argparse
import ctypes
import sys

import numpy as np

from rel_attention_kernel import (DROPATT, Device, dec_attn_mask, dropatt_args,
                                  dropatt_multiplier, kernel_layouts)


def reference_grads(do, q, k, v, r, u, vb, mem_len, same_length, scale,
                    dropatt=None):
    """The gradients of sum(out * do) with respect to q, k, v, r, u, vb; with
    `dropatt`, of the attention whose probabilities are dropped."""
    qlen, klen = q.shape[0], k.shape[0]
    do, q, k, v, r, u, vb = (x.astype(np.float64) for x in (do, q, k, v, r, u, vb))
    qu, qv = q + u, q + vb
    # m[i, j] = qlen - 1 - i + j: the r row of pair (i, j) (the official
    # rel-shift of a visible pair).
    m = qlen - 1 - np.arange(qlen)[:, None] + np.arange(klen)[None, :]
    hidden = dec_attn_mask(qlen, klen, mem_len, same_length)
    valid = ~hidden
    mc = np.clip(m, 0, klen - 1)
    ac = np.einsum("ibnd,jbnd->ijbn", qu, k)
    bd = np.einsum("ibnd,ijnd->ijbn", qv, r[mc])
    score = (ac + bd) * scale
    score[hidden] = -np.inf
    score -= score.max(axis=1, keepdims=True)
    p = np.exp(score)
    p /= p.sum(axis=1, keepdims=True)
    mult = dropatt_multiplier(p.shape, dropatt)
    dp = np.einsum("ibnd,jbnd->ijbn", do, v) * mult
    dv = np.einsum("ijbn,ibnd->jbnd", p * mult, do)
    ds = p * (dp - (p * dp).sum(axis=1, keepdims=True)) * scale
    ds[hidden] = 0.0
    dqu = np.einsum("ijbn,jbnd->ibnd", ds, k)
    dk = np.einsum("ijbn,ibnd->jbnd", ds, qu)
    dqv = np.einsum("ijbn,ijnd->ibnd", ds, r[mc])
    dr = np.zeros_like(r)
    for i in range(qlen):
        for j in np.nonzero(valid[i])[0]:
            dr[m[i, j]] += np.einsum("bn,bnd->nd", ds[i, j], qv[i])
    return {"dq": dqu + dqv, "dk": dk, "dv": dv, "dr": dr,
            "du": dqu.sum(axis=(0, 1)), "dvb": dqv.sum(axis=(0, 1))}


def run_case(dev, layouts, case, rng, tol, dropatt=None, training=False):
    """The three launches for `case`; with `dropatt` (rate, seed, offset,
    stream), of the kernels' dropatt forms, training (the masks drawn) or
    not."""
    qlen, mlen, batch, n_head, d_head, same_length, mem_len = case
    klen = qlen + mlen
    form = "_dropatt" if dropatt else ""
    names = [f"rel_attention_grad_{kind}{form}_d{d_head}" for kind in ("q", "kv", "r")]
    scale = np.float32(0.125)
    # q, k, v as views of one [klen, batch, n_head, 3 * d_head] projection,
    # like the model's qkv split.
    heads = rng.standard_normal((klen, batch, n_head, 3 * d_head)).astype(np.float32)
    q = heads[mlen:, :, :, :d_head]
    k = heads[:, :, :, d_head:2 * d_head]
    v = heads[:, :, :, 2 * d_head:]
    do = rng.standard_normal((qlen, batch, n_head, d_head)).astype(np.float32)
    r = rng.standard_normal((klen, n_head, d_head)).astype(np.float32)
    u = rng.standard_normal((n_head, d_head)).astype(np.float32)
    vb = rng.standard_normal((n_head, d_head)).astype(np.float32)

    inputs = []
    inputs += dev.memref(do)[1]
    for x in (q, k, v):
        inputs += dev.memref(x, heads)[1]
    for x in (r, u, vb):
        inputs += dev.memref(x)[1]
    stats = [np.full((batch * n_head, qlen), np.nan, np.float32) for _ in range(2)]
    for x in stats:
        inputs += dev.memref(x)[1]
    outs = {
        "dqu": np.full(q.shape, np.nan, np.float32),
        "dqv": np.full(q.shape, np.nan, np.float32),
        "dk": np.full(k.shape, np.nan, np.float32),
        "dv": np.full(v.shape, np.nan, np.float32),
        "dr": np.full(r.shape, np.nan, np.float32),
    }
    bufs = {name: dev.memref(x) for name, x in outs.items()}
    tail = [ctypes.c_int64(mem_len), ctypes.c_int32(same_length), ctypes.c_float(scale)]
    if dropatt:
        tail += dropatt_args(dropatt, training)
    plan = [(names[0], qlen, batch * n_head, ["dqu", "dqv"]),
            (names[1], klen, batch * n_head, ["dk", "dv"]),
            (names[2], klen, n_head, ["dr"])]
    for name, rows, grid_y, out_names in plan:
        tiles, block = layouts[name]
        args = list(inputs)
        for o in out_names:
            args += bufs[o][1]
        args += tail
        dev.launch(dev.kernel(name), (-(-rows // tiles[0][0]), grid_y, 1),
                   (block, 1, 1), args)
    for name, x in outs.items():
        dev.read(x, bufs[name][0])
    dev.free()

    got = {"dq": outs["dqu"] + outs["dqv"], "dk": outs["dk"], "dv": outs["dv"],
           "dr": outs["dr"], "du": outs["dqu"].sum(axis=(0, 1)),
           "dvb": outs["dqv"].sum(axis=(0, 1))}
    want = reference_grads(do, q, k, v, r, u, vb, mem_len, same_length, float(scale),
                           dropatt if training else None)
    errs = {}
    for name, ref in want.items():
        g = got[name].astype(np.float64)
        errs[name] = (float(np.linalg.norm(g - ref) / np.linalg.norm(ref))
                      if np.all(np.isfinite(g)) else float("inf"))
    worst = max(errs, key=errs.get)
    ok = errs[worst] <= tol
    mode = f" dropatt={dropatt[0]} training={int(training)}" if dropatt else ""
    print(f"{'ok  ' if ok else 'FAIL'} rel_attention_grad{form}_d{d_head} qlen={qlen} "
          f"mlen={mlen} batch={batch} n_head={n_head} same_length={int(same_length)} "
          f"mem_len={mem_len}{mode}: "
          f"worst relative error {errs[worst]:.3g} ({worst})")
    return ok


# (qlen, mlen, batch, n_head, d_head, same_length, mem_len): every kernel
# walks more than one tile (klen > 32 keys for _q, qlen > 32 queries for
# _kv and _r, and _r more than one batch column), tiles cut at neither qlen
# nor klen.
CASES = [
    (8, 0, 2, 2, 32, False, 0),       # no memory yet
    (37, 23, 3, 2, 32, False, 23),
    (64, 64, 2, 2, 32, False, 64),    # ptb_small's shape
    (64, 64, 2, 2, 32, True, 64),     # same_length
    (48, 16, 2, 2, 32, True, 64),     # same_length, memory still filling
    (33, 70, 2, 2, 64, False, 70),
    (40, 30, 2, 2, 64, True, 30),
    (35, 40, 2, 3, 80, False, 40),    # d_head not a multiple of 32
    (45, 30, 2, 2, 41, True, 30),     # wt103_base's odd d_head
]


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("mlir")
    parser.add_argument("image")
    parser.add_argument("--device-lib", required=True, help="libtxl_device.so")
    parser.add_argument("--tol", type=float, default=1e-5)
    args = parser.parse_args()
    rng = np.random.default_rng(0)
    layouts = kernel_layouts(open(args.mlir).read())
    dev = Device(args.device_lib, open(args.image, "rb").read())
    results = [run_case(dev, layouts, case, rng, args.tol) for case in CASES
               if f"rel_attention_grad_q_d{case[4]}" in layouts]
    # The dropatt kernels: evaluating (the identity) and training (the
    # masks of txl.dropout's Philox layout).
    for case in CASES:
        if f"rel_attention_grad_q_dropatt_d{case[4]}" in layouts:
            for training in (False, True):
                results.append(run_case(dev, layouts, case, rng, args.tol,
                                        DROPATT, training))
    dev.lib.txl_device_close()
    if not results:
        print("no kernel to run")
        return 1
    return 0 if all(results) else 1


if __name__ == "__main__":
    sys.exit(main())
