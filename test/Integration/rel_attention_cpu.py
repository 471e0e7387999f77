"""The CPU target's tiled attention kernel (txl-rel-attention-to-cpu)
against the official attention math in numpy (test/lib/official_attention.py:
AC + BD, the pad/reshape/slice rel-shift, dec_attn_mask, softmax, P·V at
float64).

Each d_head and element type is one @segment of one txl.rel_attention
(static n_head and d_head, dynamic qlen, klen and batch), compiled through
the CPU pipeline (txlrun) and called for every case of CASES: query tiles
of 32 rows and key tiles of 64 keys whole and partial, one query row
(generation), no memory, long memories, same_length with the memory
shorter and longer than mem_len. The output of every case must be within
the tolerance (1e-5 at f32, 1e-12 at f64) of the reference; an lse form
(`--lse`) also checks each row's log-sum-exp; `--strided` passes k, v and
r as views with stride 2 along d_head (the kernel's scalar packing path);
`--nan` makes one key of the first batch column NaN (key klen // 3, in a
tile that rows see whole or partly): every row that sees it must be NaN
(as the official scores are, the mask replacing only what a row does not
see), every other element within the tolerance.

usage: rel_attention_cpu.py WORKDIR [--pipeline P] [--only f32:32] [--lse]
                             [--strided] [--nan]
Prints one line per case, exits 1 if any fails.
"""

import argparse
import os
import sys

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "lib"))
import txlrun  # noqa: E402
from official_attention import attention, scores  # noqa: E402

# (element type, n_head, d_head): ptb_small's 32, wt103_base's 41,
# enwik8_base's 64, lm1b_large's 80, enwik8_large's 128, and small ones.
KERNELS = [("f32", 2, 32), ("f32", 2, 41), ("f32", 1, 64), ("f32", 1, 80),
           ("f32", 1, 128), ("f32", 3, 5), ("f64", 2, 16), ("f64", 1, 41)]
# (qlen, mlen, batch, mem_len, same_length)
CASES = [(8, 8, 2, 8, False), (37, 23, 2, 23, False), (64, 64, 1, 64, False),
         (70, 130, 1, 130, False), (1, 200, 2, 200, False), (3, 0, 2, 0, False),
         (33, 0, 1, 33, False), (64, 64, 2, 40, True), (45, 100, 1, 100, True),
         (100, 30, 1, 130, True), (5, 300, 1, 256, True)]


def kvr_operands(et, n_head, d_head, strided):
    """The k, v and r of a @segment: (their argument types [4-D, 3-D], the
    IR that makes the views the op reads, the op's three operands). With
    `strided` they are every other element of rows of 2·d_head: views with
    stride 2 along d_head (the kernels' scalar packing); the caller passes
    arrays with the last dimension doubled (strided_inputs)."""
    t4 = "tensor<?x?x%dx%dx%s>" % (n_head, d_head, et)
    t3 = "tensor<?x%dx%dx%s>" % (n_head, d_head, et)
    if not strided:
        return t4, t3, "", "%k, %v, %r"
    a4 = "tensor<?x?x%dx%dx%s>" % (n_head, 2 * d_head, et)
    a3 = "tensor<?x%dx%dx%s>" % (n_head, 2 * d_head, et)
    pre = ("  %c0 = arith.constant 0 : index\n"
           "  %c1 = arith.constant 1 : index\n"
           "  %kl = tensor.dim %k, %c0 : " + a4 + "\n"
           "  %bt = tensor.dim %k, %c1 : " + a4 + "\n")
    for name in ("k", "v"):
        pre += ("  %%%ss = tensor.extract_slice %%%s[0, 0, 0, 0] "
                "[%%kl, %%bt, %d, %d] [1, 1, 1, 2] : %s to %s\n"
                % (name, name, n_head, d_head, a4, t4))
    pre += ("  %%rs = tensor.extract_slice %%r[0, 0, 0] [%%kl, %d, %d] "
            "[1, 1, 2] : %s to %s\n" % (n_head, d_head, a3, t3))
    return a4, a3, pre, "%ks, %vs, %rs"


def strided_inputs(arrays):
    """kvr_operands' strided arguments: each array's elements at the even
    positions of a last dimension twice as long, NaN at the odd ones (which
    the kernel must not read)."""
    out = [np.repeat(x, 2, axis=-1) for x in arrays]
    for x in out:
        x[..., 1::2] = np.nan
    return out


def module(et, n_head, d_head, lse, strided=False):
    t4 = "tensor<?x?x%dx%dx%s>" % (n_head, d_head, et)
    t3 = "tensor<?x%dx%dx%s>" % (n_head, d_head, et)
    t2 = "tensor<%dx%dx%s>" % (n_head, d_head, et)
    tl = "tensor<?x%dx?x%s>" % (n_head, et)
    results = "%s, %s" % (t4, tl) if lse else t4
    names = "%o, %l" if lse else "%o"
    a4, a3, pre, kvr = kvr_operands(et, n_head, d_head, strided)
    return (
        "func.func @segment(%%q: %s, %%k: %s, %%v: %s, %%r: %s, %%u: %s, "
        "%%w: %s, %%m: index, %%s: i1) -> (%s) attributes "
        "{llvm.emit_c_interface, txl.entry = \"txl_segment_forward\"} {\n%s"
        "  %s = txl.rel_attention %%q, %s, %%u, %%w, %%m, %%s "
        "{scale = 0.125 : f32} : %s, %s, %s, %s, %s, %s -> %s\n"
        "  return %s : %s\n}\n" % (t4, a4, a4, a3, t2, t2, results, pre,
                                    names, kvr, t4, t4, t4, t3, t2, t2,
                                    results, names, results))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("workdir")
    ap.add_argument("--pipeline", default="txl-cpu-pipeline")
    ap.add_argument("--only", help="one kernel, e.g. f32:32")
    ap.add_argument("--lse", action="store_true")
    ap.add_argument("--strided", action="store_true",
                    help="k, v and r with stride 2 along d_head")
    ap.add_argument("--nan", action="store_true",
                    help="key klen // 3 of batch column 0 NaN")
    args = ap.parse_args()
    rng = np.random.RandomState(0)
    failed = ran = 0
    for et, n_head, d_head in KERNELS:
        if args.only and args.only != "%s:%d" % (et, d_head):
            continue
        name = "%s_d%d" % (et, d_head)
        work = os.path.join(args.workdir, name)
        os.makedirs(work, exist_ok=True)
        path = os.path.join(work, "segment.mlir")
        with open(path, "w") as f:
            f.write(module(et, n_head, d_head, args.lse, args.strided))
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
            if args.nan:
                k[klen // 3, 0] = np.nan
            shapes = [(qlen, batch, n_head, d_head)]
            if args.lse:
                shapes.append((batch, n_head, qlen))
            kvr = strided_inputs([k, v, r]) if args.strided else [k, v, r]
            outs = segment([q] + kvr + [u, w, mem_len, same_length], shapes,
                           [dtype] * len(shapes))
            want = attention(q, k, v, r, u, w, mem_len, same_length, 0.125)
            nan = np.isnan(want)
            if args.nan and not nan.any():
                print("FAIL %s: the case has no NaN output" % name)
                failed += 1
            if not np.array_equal(np.isnan(outs[0]), nan):
                err = np.inf  # a NaN lost or made
            else:
                err = np.abs(outs[0][~nan] - want[~nan]).max(initial=0.0)
            if args.lse:
                s = scores(q, k, r, u, w, mem_len, same_length,
                           float(np.float32(0.125)))
                top = s.max(axis=1)
                lse = top + np.log(np.exp(s - top[:, None]).sum(axis=1))
                err = max(err, np.abs(outs[1] - lse.transpose(1, 2, 0)).max())
            ok = err <= tol
            failed += not ok
            ran += 1
            print("%s %s qlen=%d mlen=%d batch=%d mem_len=%d same_length=%d: "
                  "max abs error %.2e" % ("ok  " if ok else "FAIL", name, qlen,
                                          mlen, batch, mem_len, same_length,
                                          err))
    return 1 if failed or not ran else 0


if __name__ == "__main__":
    sys.exit(main())
