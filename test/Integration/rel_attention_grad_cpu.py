"""The CPU target's tiled attention backward kernel (txl-rel-attention-to-cpu
with grad) against the official attention math differentiated in numpy
(test/lib/official_attention.py `gradients`, float64).

Each d_head and element type is one @segment of one txl.rel_attention_grad
(static n_head and d_head, dynamic qlen, klen and batch), compiled through
the CPU pipeline (txlrun) and called for every case of rel_attention_cpu's
CASES (query and key tiles whole and partial, one query row, no memory,
long memories, same_length on both sides of mem_len) with a standard
normal d_result. Every gradient (dq, dk, dv, dr, du, dv_bias) must be
within the relative tolerance ||g - g_ref|| / ||g_ref|| (1e-5 at f32,
1e-12 at f64).

`--strided` passes k, v and r as views with stride 2 along d_head (the
kernel's scalar packing path). `--saved` computes the forward first
(txl.rel_attention with its lse result) and passes its lse and output to
the backward as its saved group, as training does (the kernel form that
reads them instead of running the forward again).

usage: rel_attention_grad_cpu.py WORKDIR [--pipeline P] [--only f32:32]
                                 [--strided] [--saved]
Prints one line per case with the worst relative error, exits 1 if any
fails or none ran.
"""

import argparse
import os
import sys

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "lib"))
sys.path.insert(0, os.path.dirname(__file__))
import txlrun  # noqa: E402
from official_attention import gradients  # noqa: E402
from rel_attention_cpu import CASES, kvr_operands, strided_inputs  # noqa: E402

# (element type, n_head, d_head): ptb_small's 32, wt103_base's 41,
# enwik8_base's 64, enwik8_large's 128, a small one; f64.
KERNELS = [("f32", 2, 32), ("f32", 2, 41), ("f32", 1, 64), ("f32", 1, 128),
           ("f32", 3, 5), ("f64", 2, 16)]
NAMES = ["dq", "dk", "dv", "dr", "du", "dvb"]


def module(et, n_head, d_head, strided=False, saved=False):
    t4 = "tensor<?x?x%dx%dx%s>" % (n_head, d_head, et)
    t3 = "tensor<?x%dx%dx%s>" % (n_head, d_head, et)
    t2 = "tensor<%dx%dx%s>" % (n_head, d_head, et)
    tl = "tensor<?x%dx?x%s>" % (n_head, et)
    results = ", ".join([t4, t4, t4, t3, t2, t2])
    a4, a3, pre, kvr = kvr_operands(et, n_head, d_head, strided)
    group = ""
    if saved:
        pre += ("  %%o, %%lse = txl.rel_attention %%q, %s, %%u, %%w, %%m, %%s "
                "{scale = 0.125 : f32} : %s, %s, %s, %s, %s, %s -> %s, %s\n"
                % (kvr, t4, t4, t4, t3, t2, t2, t4, tl))
        group = " saved(%%lse, %%o : %s, %s)" % (tl, t4)
    return (
        "func.func @segment(%%do: %s, %%q: %s, %%k: %s, %%v: %s, %%r: %s, "
        "%%u: %s, %%w: %s, %%m: index, %%s: i1) -> (%s) attributes "
        "{llvm.emit_c_interface, txl.entry = \"txl_segment_forward\"} {\n%s"
        "  %%g:6 = txl.rel_attention_grad %%do, %%q, %s, %%u, %%w, "
        "%%m, %%s%s {scale = 0.125 : f32} : %s, %s, %s, %s, %s, %s\n"
        "  return %%g#0, %%g#1, %%g#2, %%g#3, %%g#4, %%g#5 : %s\n}\n"
        % (t4, t4, a4, a4, a3, t2, t2, results, pre, kvr, group, t4, t4, t4,
           t3, t2, t2, results))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("workdir")
    ap.add_argument("--pipeline", default=(
        "pass-pipeline=builtin.module(txl-rel-attention-to-cpu{grad=true},"
        "txl-cpu-pipeline)"))
    ap.add_argument("--only", help="one kernel, e.g. f32:32")
    ap.add_argument("--strided", action="store_true",
                    help="k, v and r with stride 2 along d_head")
    ap.add_argument("--saved", action="store_true",
                    help="the forward's lse and output passed as saved")
    args = ap.parse_args()
    rng = np.random.RandomState(0)
    failed = ran = 0
    for et, n_head, d_head in KERNELS:
        if args.only and args.only != "%s:%d" % (et, d_head):
            continue
        name = "%s_d%d" % (et, d_head)
        work = os.path.join(args.workdir, "grad_" + name)
        os.makedirs(work, exist_ok=True)
        path = os.path.join(work, "segment.mlir")
        with open(path, "w") as f:
            f.write(module(et, n_head, d_head, args.strided, args.saved))
        segment = txlrun.Segment(
            txlrun.compile_module(path, work, pipeline=args.pipeline))
        dtype = np.float32 if et == "f32" else np.float64
        tol = 1e-5 if et == "f32" else 1e-12
        for qlen, mlen, batch, mem_len, same_length in CASES:
            klen = qlen + mlen
            q = rng.randn(qlen, batch, n_head, d_head).astype(dtype)
            k = rng.randn(klen, batch, n_head, d_head).astype(dtype)
            v = rng.randn(klen, batch, n_head, d_head).astype(dtype)
            r = rng.randn(klen, n_head, d_head).astype(dtype)
            u = rng.randn(n_head, d_head).astype(dtype)
            w = rng.randn(n_head, d_head).astype(dtype)
            do = rng.randn(qlen, batch, n_head, d_head).astype(dtype)
            shapes = [q.shape, k.shape, v.shape, r.shape, u.shape, w.shape]
            kvr = strided_inputs([k, v, r]) if args.strided else [k, v, r]
            outs = segment([do, q] + kvr + [u, w, mem_len, same_length],
                           shapes, [dtype] * 6)
            want = gradients(do, q, k, v, r, u, w, mem_len, same_length,
                             float(np.float32(0.125)))
            errs = {n: np.linalg.norm(o - want[n]) /
                    max(np.linalg.norm(want[n]), 1e-300)
                    for n, o in zip(NAMES, outs)}
            worst = max(errs, key=errs.get)
            ok = all(e <= tol for e in errs.values())
            failed += not ok
            ran += 1
            print("%s %s qlen=%d mlen=%d batch=%d mem_len=%d same_length=%d: "
                  "worst relative error %.2e (%s)"
                  % ("ok  " if ok else "FAIL", name, qlen, mlen, batch,
                     mem_len, same_length, errs[worst], worst))
    return 1 if failed or not ran else 0


if __name__ == "__main__":
    sys.exit(main())
