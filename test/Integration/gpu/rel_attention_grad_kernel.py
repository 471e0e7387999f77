#!/usr/bin/env python3
"""Runs the fused attention backward kernels of txl-rel-attention-to-gpu
(rel_attention_grad_{q,kv,r}_d<d_head>, launched in that order as the host
code does) through the runtime's device layer on an OpenCL device (this
machine's CPU in CI), and compares their gradients with the official
attention math's, differentiated in numpy (float64): the four terms, the
decoder mask (causal with memory, same_length), softmax over keys, P·V.
Where the image also has the saved-statistics kernels (from a forward with
an lse result and a backward with a saved group), each case runs a second
time through them: the forward rel_attention_lse_d<d_head> over the keys in
3 parts and rel_attention_combine_lse (its output and each row's
log-sum-exp, the latter checked against numpy's), then
rel_attention_grad_q_saved_d<d_head> on those, _kv and _r.

With --precision bf16 or f16 (a module lowered with that precision), the
launches are the tensor-core kernels where the image has them
(rel_attention_grad_{q_saved,kv,r}_<bf16|f16>_d<d_head>, 64 rows per
workgroup), whose gradients are held to --kv-tol instead; the saved chain
runs the tensor-core forward rel_attention_<bf16|f16>_lse_d<d_head>, and
every gradient of that chain (all of them from a bf16 or f16 forward's
statistics) is held to --kv-tol.

--do-scale S multiplies dO (standard normal) by S: at 2^-20 (about 1e-6, the
order of an unscaled backward's gradients under the mean loss's 1/numel
seed), f16's subnormals swallow dO and dS.

usage: rel_attention_grad_kernel.py --device-lib LIB [--tol T]
           [--precision f32|bf16|f16 --kv-tol T] [--do-scale S]
           KERNELS.mlir KERNELS.img

Prints one line per case with the worst relative error ||g - g_ref|| /
||g_ref|| over dq, dk, dv, dr, du and dv_bias (and, at bf16 or f16, that
of dk and dv on their own), and exits 1 if any case exceeds its tolerance
or no case ran.
"""

import argparse
import ctypes
import re
import sys

import numpy as np

from rel_attention_kernel import (DROPATT, Device, dec_attn_mask, dropatt_args,
                                  dropatt_multiplier, kernel_layouts,
                                  launch_attention, launch_pack)
from official_attention import gradients  # noqa: E402


def reference_grads(do, q, k, v, r, u, vb, mem_len, same_length, scale,
                    dropatt=None):
    """The gradients of sum(out * do) with respect to q, k, v, r, u, vb; with
    `dropatt`, of the attention whose probabilities are dropped."""
    shape = (q.shape[0], k.shape[0]) + q.shape[1:3]
    return gradients(do, q, k, v, r, u, vb, mem_len, same_length, scale,
                     dropatt_multiplier(shape, dropatt))


def reference_lse(q, k, r, u, vb, mem_len, same_length, scale):
    """Each row's log-sum-exp of the scaled, masked scores: [batch, n_head,
    qlen]."""
    qlen, klen = q.shape[0], k.shape[0]
    q, k, r, u, vb = (x.astype(np.float64) for x in (q, k, r, u, vb))
    m = np.clip(qlen - 1 - np.arange(qlen)[:, None] + np.arange(klen)[None, :],
                0, klen - 1)
    score = (np.einsum("ibnd,jbnd->ijbn", q + u, k)
             + np.einsum("ibnd,ijnd->ijbn", q + vb, r[m])) * scale
    score[dec_attn_mask(qlen, klen, mem_len, same_length)] = -np.inf
    top = score.max(axis=1)
    lse = top + np.log(np.exp(score - top[:, None]).sum(axis=1))
    return lse.transpose(1, 2, 0)


def kernel_name(layouts, kind, form, d_head, precision):
    """The kernel of `kind` (q, q_saved, kv, r; rel_attention_lse for the
    forward) in `layouts`: its tensor-core form at bf16 or f16 where the
    image has one, else the f32 kernel (None if neither)."""
    mma = "" if precision == "f32" else f"_{precision}"
    if kind == "rel_attention_lse":
        names = [f"rel_attention{mma}{form}_lse_d{d_head}"]
    else:
        names = [f"rel_attention_grad_{kind}{mma}{form}_d{d_head}",
                 f"rel_attention_grad_{kind}{form}_d{d_head}"]
    return next((n for n in names if n in layouts), None)


def saved_forms(layouts, d_head, form, precision):
    """Whether the image has the saved-statistics kernels of `d_head`."""
    return all(kernel_name(layouts, kind, form, d_head, precision)
               for kind in ("q_saved", "rel_attention_lse"))


# Rows (queries, keys or r rows) per workgroup of the tensor-core backward
# kernels (kMmaGradQueryTile, kMmaGradKeyTile, kMmaGradPosTile); the f32
# kernels' row tile is their first workgroup tile's rows.
MMA_ROW_TILE = 64


def column_parts(mlir_text):
    """{kernel name: the grid's z} of the backward launches in the host
    code: the tensor-core kernels' d_head column parts
    (mmaGradColumnParts), 1 for the others."""
    return {m.group(1): int(m.group(2)) for m in re.finditer(
        r"gpu\.launch_func\s+@txl_kernels::@(rel_attention_grad_\w+) blocks in "
        r"\([^,]+, [^,]+, %c(\d+)(?:_\d+)?\)", mlir_text)}


def run_case(dev, layouts, parts, case, rng, tol, dropatt=None,
             training=False, saved=False, precision="f32", kv_tol=None,
             do_scale=1.0):
    """The three launches for `case`, each over its grid's z in `parts`
    (column_parts); with `dropatt` (rate, seed, offset,
    stream), of the kernels' dropatt forms, training (the masks drawn) or
    not; `saved`, after the forward's lse kernel, with `_q_saved` first;
    at `precision` bf16 or f16, the tensor-core kernels where the image has
    them: `_kv`'s dk and dv are held to `kv_tol`, and with `saved` (the
    forward's lse and output from bf16 or f16 products) every gradient.
    dO is standard normal times `do_scale` (a power of two: the gradients
    and their reference scale exactly, the errors are relative)."""
    qlen, mlen, batch, n_head, d_head, same_length, mem_len = case
    klen = qlen + mlen
    form = "_dropatt" if dropatt else ""
    first = "q_saved" if saved else "q"
    names = [kernel_name(layouts, kind, form, d_head, precision)
             for kind in (first, "kv", "r")]
    scale = np.float32(0.125)
    # q, k, v as views of one [klen, batch, n_head, 3 * d_head] projection,
    # like the model's qkv split.
    heads = rng.standard_normal((klen, batch, n_head, 3 * d_head)).astype(np.float32)
    q = heads[mlen:, :, :, :d_head]
    k = heads[:, :, :, d_head:2 * d_head]
    v = heads[:, :, :, 2 * d_head:]
    do = (rng.standard_normal((qlen, batch, n_head, d_head))
          * do_scale).astype(np.float32)
    r = rng.standard_normal((klen, n_head, d_head)).astype(np.float32)
    u = rng.standard_normal((n_head, d_head)).astype(np.float32)
    vb = rng.standard_normal((n_head, d_head)).astype(np.float32)

    tail = [ctypes.c_int64(mem_len), ctypes.c_int32(same_length), ctypes.c_float(scale)]
    if dropatt:
        tail += dropatt_args(dropatt, training)
    operands = []
    for x in (q, k, v):
        operands += dev.memref(x, heads)[1]
    for x in (r, u, vb):
        operands += dev.memref(x)[1]
    stats = [np.full((batch, n_head, qlen), np.nan, np.float32) for _ in range(2)]
    stat_bufs = [dev.memref(x) for x in stats]
    lse_err = None
    if saved:
        # The forward: out and lse (into the buffer the backward reads).
        fwd = kernel_name(layouts, "rel_attention_lse", form, d_head, precision)
        out = np.full(q.shape, np.nan, np.float32)
        out_buf = dev.memref(out)
        tiles, block = layouts[fwd]
        fwd_operands = operands
        fwd_tail = tail
        pack = f"rel_attention_pack_{precision}_d{d_head}"
        if pack in layouts:
            # The packed form: key, value and pos_key packed first (as the
            # host code launches it), klen after out.
            packed, check, _ = launch_pack(dev, pack, layouts[pack][1], heads,
                                           k, v, r, precision)
            fwd_operands = dev.memref(q, heads)[1]
            for desc in packed:
                fwd_operands += desc
            for x in (u, vb):
                fwd_operands += dev.memref(x)[1]
            fwd_tail = [ctypes.c_int64(klen)] + tail
        # Over the keys in 3 parts: the combine writes the lse.
        launch_attention(dev, fwd, (-(-qlen // tiles[0][0]), batch * n_head), block,
                         fwd_operands + out_buf[1] + fwd_tail + stat_bufs[0][1], out,
                         out_buf[1], lse_desc=stat_bufs[0][1], parts=3)
        lse = np.empty_like(stats[0])
        dev.read(lse, stat_bufs[0][0])
        lse_ref = reference_lse(q, k, r, u, vb, mem_len, same_length, float(scale))
        lse_err = float(np.max(np.abs(lse - lse_ref) / np.maximum(1.0, np.abs(lse_ref))))
    inputs = dev.memref(do)[1] + operands
    for _, desc in stat_bufs:
        inputs += desc
    outs = {
        "dqu": np.full(q.shape, np.nan, np.float32),
        "dqv": np.full(q.shape, np.nan, np.float32),
        "dk": np.full(k.shape, np.nan, np.float32),
        "dv": np.full(v.shape, np.nan, np.float32),
        "dr": np.full(r.shape, np.nan, np.float32),
    }
    bufs = {name: dev.memref(x) for name, x in outs.items()}
    plan = [(names[0], qlen, batch * n_head, ["dqu", "dqv"]),
            (names[1], klen, batch * n_head, ["dk", "dv"]),
            (names[2], klen, n_head, ["dr"])]
    for name, rows, grid_y, out_names in plan:
        tiles, block = layouts[name]
        row_tile = MMA_ROW_TILE if precision != "f32" \
            and f"_{precision}_" in name else tiles[0][0]
        args = list(inputs)
        if name == names[0] and saved:
            args += out_buf[1]
        for o in out_names:
            args += bufs[o][1]
        args += tail
        dev.launch(dev.kernel(name),
                   (-(-rows // row_tile), grid_y, parts.get(name, 1)),
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
    if lse_err is not None:
        errs["lse"] = lse_err
    # The gradients of the tensor-core kernels, and with `saved` (from a
    # bf16 or f16 forward's statistics) all of them, are held to kv_tol.
    loose = []
    if precision != "f32":
        tag = f"_{precision}_"
        by_kernel = (["dq", "du", "dvb"], ["dk", "dv"], ["dr"])
        loose = list(errs) if saved else \
            [g for name, grads in zip(names, by_kernel) if tag in name
             for g in grads]
    kv_errs = {name: errs.pop(name) for name in loose}
    worst = max(errs, key=errs.get) if errs else None
    ok = not errs or errs[worst] <= tol
    mode = f" dropatt={dropatt[0]} training={int(training)}" if dropatt else ""
    kind = "_saved" if saved else ""
    prec = f"_{precision}" if loose else ""
    line = (f"rel_attention_grad{kind}{prec}{form}_d{d_head} qlen={qlen} "
            f"mlen={mlen} batch={batch} n_head={n_head} same_length={int(same_length)} "
            f"mem_len={mem_len}{mode}: ")
    parts = []
    if errs:
        parts.append(f"worst relative error {errs[worst]:.3g} ({worst})")
    if kv_errs:
        kv_worst = max(kv_errs, key=kv_errs.get)
        ok = ok and kv_errs[kv_worst] <= kv_tol
        parts.append(f"{precision} {kv_errs[kv_worst]:.3g} ({kv_worst})")
    line += ", ".join(parts)
    print(f"{'ok  ' if ok else 'FAIL'} {line}")
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
    (40, 36, 2, 2, 128, True, 36),    # _kv and _r tiles over 48 KiB
]


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("mlir")
    parser.add_argument("image")
    parser.add_argument("--device-lib", required=True, help="libtxl_device.so")
    parser.add_argument("--tol", type=float, default=1e-5)
    parser.add_argument("--precision", choices=("f32", "bf16", "f16"),
                        default="f32")
    parser.add_argument("--kv-tol", type=float, default=1e-5)
    parser.add_argument("--do-scale", type=float, default=1.0,
                        help="dO's scale: 1, or 2^-20 for the order of "
                             "an unscaled backward's gradients")
    args = parser.parse_args()
    prec = {"precision": args.precision, "kv_tol": args.kv_tol,
            "do_scale": args.do_scale}
    rng = np.random.default_rng(0)
    text = open(args.mlir).read()
    layouts = kernel_layouts(text)
    parts = column_parts(text)
    dev = Device(args.device_lib, open(args.image, "rb").read())
    results = [run_case(dev, layouts, parts, case, rng, args.tol, **prec)
               for case in CASES
               if f"rel_attention_grad_q_d{case[4]}" in layouts]
    # The dropatt kernels: evaluating (the identity) and training (the
    # masks of txl.dropout's Philox layout).
    for case in CASES:
        if f"rel_attention_grad_q_dropatt_d{case[4]}" in layouts:
            for training in (False, True):
                results.append(run_case(dev, layouts, parts, case, rng, args.tol,
                                        DROPATT, training, **prec))
    # The saved-statistics chain, without and with dropatt (training).
    for case in CASES:
        if saved_forms(layouts, case[4], "", args.precision):
            results.append(run_case(dev, layouts, parts, case, rng, args.tol,
                                    saved=True, **prec))
        if saved_forms(layouts, case[4], "_dropatt", args.precision):
            results.append(run_case(dev, layouts, parts, case, rng, args.tol, DROPATT,
                                    True, saved=True, **prec))
    dev.lib.txl_device_close()
    if not results:
        print("no kernel to run")
        return 1
    return 0 if all(results) else 1


if __name__ == "__main__":
    sys.exit(main())
