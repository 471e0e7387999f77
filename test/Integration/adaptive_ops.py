"""Checks txl.adaptive_embedding and txl.adaptive_nll, compiled for the CPU,
against a numpy transcription of the official AdaptiveEmbedding and
ProjectedAdaptiveLogSoftmax (mem_transformer.py / proj_adaptive_softmax.py)
on random inputs, for the div_val = 1 (sliced) and div_val = 2 forms."""

import os
import sys
import tempfile

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "lib"))
import txlrun  # noqa: E402

D_MODEL = 8
ENDS = [0, 5, 9, 16]


def log_softmax(x):
    m = x.max(axis=1, keepdims=True)
    return x - m - np.log(np.exp(x - m).sum(axis=1, keepdims=True))


def reference_nll(h, target, weights, biases, projs, cw, cb):
    """Official ProjectedAdaptiveLogSoftmax.forward (keep_order)."""
    sliced = len(weights) == 1
    def layer(i):
        if sliced:
            return (weights[0][ENDS[i]:ENDS[i + 1]], biases[0][ENDS[i]:ENDS[i + 1]])
        return weights[i], biases[i]
    def logit(x, i):
        w, b = layer(i)
        if i == 0:
            w, b = np.concatenate([w, cw]), np.concatenate([b, cb])
        return (x @ projs[i] if projs else x) @ w.T + b
    head = log_softmax(logit(h, 0))
    nll = np.zeros(len(target))
    for n, t in enumerate(target):
        i = sum(t >= e for e in ENDS[1:-1])
        if i == 0:
            nll[n] = -head[n, t]
        else:
            tail = log_softmax(logit(h[n:n + 1], i))
            nll[n] = -head[n, -i] - tail[0, t - ENDS[i]]
    return nll


def reference_embedding(tokens, tables, projs):
    """Official AdaptiveEmbedding.forward for div_val != 1, before emb_scale."""
    out = np.zeros((len(tokens), D_MODEL))
    for n, t in enumerate(tokens):
        i = sum(t >= e for e in ENDS[1:-1])
        out[n] = tables[i][t - ENDS[i]].astype(np.float64) @ projs[i].T
    return out


def check(name, got, want, failed):
    err = np.abs(got.reshape(want.shape) - want).max()
    print(f"{name}: max |diff| {err:.2e}")
    if not err < 1e-4:
        print(np.round(got.reshape(want.shape) - want, 4))
        failed.append(name)


def main():
    rng = np.random.default_rng(0)
    qlen, bsz = 5, 3
    clusters = len(ENDS) - 1
    dims = [D_MODEL, D_MODEL // 2, D_MODEL // 4]
    tokens = rng.integers(0, ENDS[-1], size=(qlen, bsz)).astype(np.int64)
    tokens[0, 0], tokens[0, 1], tokens[0, 2] = 4, 5, 15  # cluster edges
    hidden = rng.normal(size=(qlen, bsz, D_MODEL)).astype(np.float32)
    # 350 positions: the cluster compaction's blocks of 64 (five full, one
    # partial).
    long_len, long_bsz = 70, 5
    long_tokens = rng.integers(0, ENDS[-1], size=(long_len, long_bsz)).astype(np.int64)
    long_hidden = rng.normal(size=(long_len, long_bsz, D_MODEL)).astype(np.float32)
    # 5,000 positions: 79 blocks, more than one group of 64 blocks in the
    # compaction's blocked scan of the block counts.
    huge_len, huge_bsz = 100, 50
    huge_tokens = rng.integers(0, ENDS[-1], size=(huge_len, huge_bsz)).astype(np.int64)
    huge_hidden = rng.normal(size=(huge_len, huge_bsz, D_MODEL)).astype(np.float32)
    shapes = [("", tokens, hidden),
              (f" {long_len * long_bsz} positions", long_tokens, long_hidden),
              (f" {huge_len * huge_bsz} positions", huge_tokens, huge_hidden)]
    tables = [rng.normal(size=(ENDS[i + 1] - ENDS[i], dims[i])).astype(np.float32)
              for i in range(clusters)]
    projs = [rng.normal(size=(D_MODEL, dims[i])).astype(np.float32)
             for i in range(clusters)]
    biases = [rng.normal(size=(ENDS[i + 1] - ENDS[i],)).astype(np.float32)
              for i in range(clusters)]
    cw = rng.normal(size=(clusters - 1, dims[0])).astype(np.float32)
    cb = rng.normal(size=(clusters - 1,)).astype(np.float32)
    full_w = rng.normal(size=(ENDS[-1], 6)).astype(np.float32)
    full_b = rng.normal(size=(ENDS[-1],)).astype(np.float32)
    full_p = [rng.normal(size=(D_MODEL, 6)).astype(np.float32) for _ in range(clusters)]
    cw6 = rng.normal(size=(clusters - 1, 6)).astype(np.float32)

    ends = ", ".join(map(str, ENDS))
    def ty(a):
        return "tensor<" + "x".join(map(str, a.shape)) + "xf32>"
    sig = lambda xs: ", ".join(ty(x) for x in xs)
    cases = {
        "div2": (tables, biases, projs, cw, cb),
        "div1": ([full_w], [full_b], full_p, cw6, cb),
    }
    failed = []
    with tempfile.TemporaryDirectory() as work:
        targs = ", ".join("%%t%d: %s" % (i, ty(t)) for i, t in enumerate(tables))
        pargs = ", ".join("%%q%d: %s" % (i, ty(p)) for i, p in enumerate(projs))
        text = f"""
func.func @segment({targs}, {pargs}, %ids: tensor<?x?xi64>) -> tensor<?x?x{D_MODEL}xf32> attributes {{llvm.emit_c_interface, txl.entry = "txl_segment_forward"}} {{
  %e = txl.adaptive_embedding %ids
      tables({", ".join("%%t%d" % i for i in range(clusters))} : {sig(tables)})
      projs({", ".join("%%q%d" % i for i in range(clusters))} : {sig(projs)})
      {{cutoff_ends = array<i64: {ends}>}} : tensor<?x?xi64> -> tensor<?x?x{D_MODEL}xf32>
  return %e : tensor<?x?x{D_MODEL}xf32>
}}
"""
        path = os.path.join(work, "embedding.mlir")
        open(path, "w").write(text)
        os.mkdir(os.path.join(work, "embedding"))
        seg = txlrun.Segment(txlrun.compile_module(path, os.path.join(work, "embedding")))
        for suffix, ids, _ in shapes:
            (got,) = seg(tables + projs + [ids], [ids.shape + (D_MODEL,)])
            check("adaptive_embedding" + suffix, got,
                  reference_embedding(ids.reshape(-1), tables, projs), failed)

        for name, (ws, bs, ps, cwv, cbv) in cases.items():
            params = ws + bs + ps + [cwv, cbv]
            args = ", ".join("%%p%d: %s" % (i, ty(p)) for i, p in enumerate(params))
            names = ["%%p%d" % i for i in range(len(params))]
            nw, nb, np_ = len(ws), len(bs), len(ps)
            text = f"""
func.func @segment({args}, %h: tensor<?x?x{D_MODEL}xf32>, %t: tensor<?x?xi64>) -> tensor<?x?xf32> attributes {{llvm.emit_c_interface, txl.entry = "txl_segment_forward"}} {{
  %nll = txl.adaptive_nll %h, %t
      weights({", ".join(names[:nw])} : {sig(ws)})
      biases({", ".join(names[nw:nw + nb])} : {sig(bs)})
      projs({", ".join(names[nw + nb:nw + nb + np_])} : {sig(ps)})
      clusters({names[-2]}, {names[-1]} : {ty(cwv)}, {ty(cbv)})
      {{cutoff_ends = array<i64: {ends}>}}
      : tensor<?x?x{D_MODEL}xf32>, tensor<?x?xi64> -> tensor<?x?xf32>
  return %nll : tensor<?x?xf32>
}}
"""
            path = os.path.join(work, name + ".mlir")
            open(path, "w").write(text)
            so_dir = os.path.join(work, name)
            os.mkdir(so_dir)
            seg = txlrun.Segment(txlrun.compile_module(path, so_dir))
            for suffix, ids, h in shapes:
                (got,) = seg(params + [h, ids], [ids.shape])
                want = reference_nll(h.reshape(-1, D_MODEL).astype(np.float64),
                                     ids.reshape(-1), ws, bs, ps, cwv, cbv)
                check("adaptive_nll " + name + suffix, got, want, failed)
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
