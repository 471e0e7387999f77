"""The output layer's CPU kernel (txl-linear-nll-to-cpu), one txl.linear_nll
(or txl.linear_nll_fwd) compiled through the CPU pipeline (txlrun) and
called from numpy, against the NLL at float64: logsumexp(h·wᵀ + b) −
(h·w[t] + b[t]) per row, a target outside [0, n_token) counting a logit
of 0; for the fwd form also each row's log-sum-exp and the logits + bias
in their block-major slabs.

usage: linear_nll_cpu.py WORKDIR [--pipeline P] [--fwd | --grad] [--block B]
                         [--features D]

With --grad, txl.linear_nll_fwd and its adjoint txl.linear_nll_grad
(d_logits = (softmax − onehot(target))·g; d_input = d_logits·w, d_weight =
d_logitsᵀ·h, d_bias = Σ_rows d_logits; a target outside [0, n_token) gets
no one-hot), checked with the NLL.

Cases: n_token 1000 (a partial last vector and a partial last block), with
and without a bias, several column blocks (the one-pass sums of the later
blocks), and "jump" weights whose later columns give logits more than 64
above the earlier blocks' maximum (the two-pass fallback); rows from 1 to
120, so that the eval form takes both of its sweeps (row tiles from 2
tiles of rows: 32 rows in 256-bit vectors, 64 in 512-bit; 1000 columns
leave a partial step of the tile's columns, 66 and 120 rows a partial
tile). d_model is 32 (one chunk of columns) or --features (256: several
chunks of the row-tiled sweep). Prints one line per case, ok or FAIL;
exit status 1 on any FAIL.
"""

import argparse
import os
import sys

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "lib"))
import txlrun  # noqa: E402

D, V = 32, 1000  # D: --features
# (qlen, batch, weight kind)
CASES = [(5, 3, "normal"), (16, 2, "jump"), (1, 1, "normal"),
         (7, 4, "jump"), (40, 3, "normal"), (33, 2, "jump")]


def grad_module(bias, block):
    tb = ", %b" if bias else ""
    ttb = ", tensor<%dxf32>" % V if bias else ""
    arg = ", %%b: tensor<%dxf32>" % V if bias else ""
    blocks = -(-V // block)
    x = "tensor<%dx?x%dxf32>" % (blocks, block)
    results = ("tensor<?x?xf32>, tensor<?x?x%dxf32>, tensor<%dx%dxf32>, "
               "tensor<%dxf32>" % (D, V, D, V))
    return (
        "func.func @segment(%%h: tensor<?x?x%dxf32>, %%w: tensor<%dx%dxf32>%s, "
        "%%t: tensor<?x?xi64>, %%g: tensor<?x?xf32>) -> (%s) attributes "
        "{llvm.emit_c_interface, txl.entry = \"txl_segment_forward\"} {\n"
        "  %%n, %%l, %%x = txl.linear_nll_fwd %%h, %%w, %%t%s {block = %d : i64}"
        " : tensor<?x?x%dxf32>, tensor<%dx%dxf32>, tensor<?x?xi64>%s -> "
        "tensor<?x?xf32>, tensor<?xf32>, %s\n"
        "  %%dh, %%dw, %%db = txl.linear_nll_grad %%g, %%h, %%w, %%t, %%l, %%x "
        "{block = %d : i64} : tensor<?x?xf32>, tensor<?x?x%dxf32>, "
        "tensor<%dx%dxf32>, tensor<?x?xi64>, tensor<?xf32>, %s -> "
        "tensor<?x?x%dxf32>, tensor<%dx%dxf32>, tensor<%dxf32>\n"
        "  return %%n, %%dh, %%dw, %%db : %s\n}\n"
        % (D, V, D, arg, results, tb, block, D, V, D, ttb, x, block, D, V, D,
           x, D, V, D, V, results))


def module(bias, fwd, block):
    tb = ", %b" if bias else ""
    ttb = ", tensor<%dxf32>" % V if bias else ""
    arg = ", %%b: tensor<%dxf32>" % V if bias else ""
    blocks = -(-V // block)
    types = "tensor<?x?x%dxf32>, tensor<%dx%dxf32>, tensor<?x?xi64>%s" % (
        D, V, D, ttb)
    if fwd:
        results = ("tensor<?x?xf32>, tensor<?xf32>, tensor<%dx?x%dxf32>"
                   % (blocks, block))
        op = ("  %%n, %%l, %%x = txl.linear_nll_fwd %%h, %%w, %%t%s "
              "{block = %d : i64} : %s -> %s\n"
              "  return %%n, %%l, %%x : %s\n" % (tb, block, types, results,
                                                 results))
    else:
        results = "tensor<?x?xf32>"
        op = ("  %%n = txl.linear_nll %%h, %%w, %%t%s : %s -> %s\n"
              "  return %%n : %s\n" % (tb, types, results, results))
    return ("func.func @segment(%%h: tensor<?x?x%dxf32>, %%w: tensor<%dx%dxf32>"
            "%s, %%t: tensor<?x?xi64>) -> (%s) attributes "
            "{llvm.emit_c_interface, txl.entry = \"txl_segment_forward\"} {\n"
            "%s}\n" % (D, V, D, arg, results, op))


def main():
    global D
    ap = argparse.ArgumentParser()
    ap.add_argument("workdir")
    ap.add_argument("--pipeline", default="txl-cpu-pipeline")
    ap.add_argument("--fwd", action="store_true")
    ap.add_argument("--grad", action="store_true")
    ap.add_argument("--block", type=int, default=512,
                    help="the fwd op's block attribute")
    ap.add_argument("--features", type=int, default=32,
                    help="d_model (the input's and weight's last dimension)")
    args = ap.parse_args()
    D = args.features
    rng = np.random.RandomState(0)
    failed = ran = 0
    for bias in (True, False):
        name = "%s%s" % ("grad" if args.grad else
                         "fwd" if args.fwd else "eval",
                         "" if bias else "_nobias")
        work = os.path.join(args.workdir, name)
        os.makedirs(work, exist_ok=True)
        path = os.path.join(work, "segment.mlir")
        with open(path, "w") as f:
            f.write(grad_module(bias, args.block) if args.grad else
                    module(bias, args.fwd, args.block))
        segment = txlrun.Segment(
            txlrun.compile_module(path, work, pipeline=args.pipeline))
        for qlen, batch, kind in CASES:
            h = rng.randn(qlen, batch, D).astype(np.float32)
            w = (0.3 * rng.randn(V, D)).astype(np.float32)
            if kind == "jump":
                # Columns 700-703: logits about 90 in every row (the last
                # feature 5 times 18), far above those of the block before
                # them (a few units): more than 64 above the running max.
                h[..., D - 1] = 5.0
                w[700:704, D - 1] = 18.0
            b = (0.5 * rng.randn(V)).astype(np.float32)
            t = rng.randint(0, V, size=(qlen, batch)).astype(np.int64)
            t[0, 0] = -1  # outside [0, n_token): a logit of 0
            if kind == "jump":
                t.reshape(-1)[1 % t.size] = 701
            h64, w64 = h.reshape(-1, D).astype(np.float64), w.astype(np.float64)
            logits = h64 @ w64.T + (b.astype(np.float64) if bias else 0.0)
            top = logits.max(axis=1)
            lse = top + np.log(np.exp(logits - top[:, None]).sum(axis=1))
            t1 = t.reshape(-1)
            picked = np.where((t1 >= 0) & (t1 < V),
                              logits[np.arange(t1.size), np.clip(t1, 0, V - 1)],
                              0.0)
            want = (lse - picked).reshape(qlen, batch)
            inputs = [h, w] + ([b] if bias else []) + [t]
            rows = qlen * batch
            shapes = [(qlen, batch)]
            if args.fwd:
                blocks = -(-V // args.block)
                shapes += [(rows,), (blocks, rows, args.block)]
            if args.grad:
                g = (rng.rand(qlen, batch) + 0.5).astype(np.float32)
                inputs.append(g)
                shapes += [(qlen, batch, D), (V, D), (V,)]
            outs = segment(inputs, shapes)
            scale = np.maximum(1.0, np.abs(want))
            err = (np.abs(outs[0] - want) / scale).max()
            if args.grad:
                dl = np.exp(logits - lse[:, None])
                valid = (t1 >= 0) & (t1 < V)
                dl[np.arange(t1.size)[valid], t1[valid]] -= 1.0
                dl *= g.reshape(-1, 1).astype(np.float64)
                wants = [(dl @ w64).reshape(qlen, batch, D), dl.T @ h64,
                         dl.sum(axis=0)]
                for got, ref in zip(outs[1:], wants):
                    err = max(err, np.abs(got - ref).max() /
                              max(1.0, np.abs(ref).max()))
            if args.fwd:
                err = max(err, (np.abs(outs[1] - lse) /
                                np.maximum(1.0, np.abs(lse))).max())
                slabs = np.concatenate(
                    [outs[2][k] for k in range(outs[2].shape[0])], axis=1)
                err = max(err, (np.abs(slabs[:, :V] - logits) /
                                np.maximum(1.0, np.abs(logits))).max())
            ok = err <= 1e-5
            failed += not ok
            ran += 1
            print("%s %s qlen=%d batch=%d %s: max relative error %.2e" %
                  ("ok  " if ok else "FAIL", name, qlen, batch, kind, err))
    return 1 if failed or not ran else 0


if __name__ == "__main__":
    sys.exit(main())
