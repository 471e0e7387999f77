"""Checks every forward txl op at float64: each op alone in a @segment,
compiled with --txl-cpu-pipeline, called on random float64 inputs and
compared with a float64 numpy transcription of the op (the formulas of
adaptive_ops.py for the adaptive ops, the op descriptions in TxlOps.td for
the others). The lowered module must be free of f32 (constants, products
and math all in the tensors' element type), its products must be
cblas_dgemm calls, and every element must agree
within 1e-10 relative to max(1, |reference|): a float32 computation
anywhere on the way misses that by about four orders of magnitude.

Attributes stay f32 (the model's hyper-parameters): the reference uses the
f32-rounded value of scale, factor and epsilon, widened exactly."""

import os
import sys
import tempfile

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "lib"))
import txlrun  # noqa: E402
from adaptive_ops import (D_MODEL, ENDS, reference_embedding,  # noqa: E402
                          reference_nll)

RTOL = 1e-10
QLEN, MLEN, BSZ, N_HEAD, D_HEAD, N_TOKEN = 5, 3, 2, 2, 4, 11
KLEN = MLEN + QLEN


def f32(x):
    """The value an f32 attribute written as `x` holds, as a float64."""
    return float(np.float32(x))


def softmax(x, axis):
    e = np.exp(x - x.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


def log_softmax(x):
    m = x.max(axis=-1, keepdims=True)
    return x - m - np.log(np.exp(x - m).sum(axis=-1, keepdims=True))


def rel_shift(x):
    """result[i, j] = x[i, j + qlen - 1 - i] where that is < klen, else 0."""
    qlen, klen = x.shape[:2]
    out = np.zeros_like(x)
    for i in range(qlen):
        for j in range(klen):
            src = j + qlen - 1 - i
            if src < klen:
                out[i, j] = x[i, src]
    return out


def visible(qlen, klen, mem_len, same_length):
    """The official dec_attn_mask, inverted: key j visible to query i."""
    mlen = klen - qlen
    s = qlen - (klen - mem_len) if klen > mem_len else qlen
    i = np.arange(qlen)[:, None]
    j = np.arange(klen)[None, :]
    keep = j <= i + mlen
    if same_length:
        keep &= ~(j <= i - s)
    return keep


def masked_softmax(scores, mem_len, same_length, scale):
    """softmax_j(scale * scores) over [qlen, klen, batch, n_head], masked."""
    keep = visible(scores.shape[0], scores.shape[1], mem_len, same_length)
    x = np.where(keep[:, :, None, None], scale * scores, -np.inf)
    return softmax(x, axis=1)


def pos_emb(inv_freq, klen, clamp_len):
    pos = np.arange(klen - 1, -1, -1.0)
    if clamp_len > 0:
        pos = np.minimum(pos, clamp_len)
    angle = pos[:, None] * inv_freq[None, :]
    return np.concatenate([np.sin(angle), np.cos(angle)], axis=1)


def layer_norm(x, g, b, eps):
    mean = x.mean(axis=-1, keepdims=True)
    var = ((x - mean) ** 2).mean(axis=-1, keepdims=True)
    return (x - mean) / np.sqrt(var + eps) * g + b


def rel_attention(q, k, v, r, u, vb, mem_len, same_length, scale):
    """Paper §3.3: softmax(mask(scale (AC + BD))) V."""
    ac = np.einsum("ibnd,jbnd->ijbn", q + u, k)
    bd = rel_shift(np.einsum("ibnd,jnd->ijbn", q + vb, r))
    p = masked_softmax(ac + bd, mem_len, same_length, scale)
    return np.einsum("ijbn,jbnd->ibnd", p, v)


def nll(logits, target):
    lsm = log_softmax(logits)
    return -np.take_along_axis(lsm, target[..., None], axis=-1)[..., 0]


def tensor(shape):
    """MLIR tensor type; None is a dynamic dimension."""
    dims = ["?" if d is None else str(d) for d in shape[:-1]]
    return "tensor<" + "x".join(dims + [shape[-1]]) + ">"


def segment(args, results, body):
    """A @segment function over `args` [(name, type)] returning `results`
    [(value, type)] after `body`."""
    params = ", ".join(f"%{n}: {t}" for n, t in args)
    rtypes = ", ".join(t for _, t in results)
    values = ", ".join(v for v, _ in results)
    return (f"func.func @segment({params}) -> ({rtypes}) "
            f"attributes {{llvm.emit_c_interface, txl.entry = \"txl_segment_forward\"}} {{\n{body}\n"
            f"  return {values} : {rtypes}\n}}\n")


class Checker:
    def __init__(self, work):
        self.work = work
        self.failed = []

    def run(self, name, text, runs, gemm=False, pipeline="txl-cpu-pipeline"):
        """Compiles `text` once (through `pipeline`) and checks each (label,
        inputs, wants) of `runs`; the results are float64 arrays shaped like
        the wants. With `gemm`, the op's products must have become
        cblas_dgemm calls; without, there must be none."""
        path = os.path.join(self.work, name + ".mlir")
        with open(path, "w") as f:
            f.write(text)
        so_dir = os.path.join(self.work, name)
        os.mkdir(so_dir)
        seg = txlrun.Segment(txlrun.compile_module(path, so_dir, pipeline))
        with open(os.path.join(so_dir, "lowered.mlir")) as f:
            lowered = f.read()
        problems = []
        if "f32" in lowered or "f64" not in lowered:
            problems.append("the lowered module is not f64 only")
        if "cblas_sgemm" in lowered or gemm != ("llvm.call @cblas_dgemm" in lowered):
            problems.append("dgemm calls expected" if gemm else "unexpected gemm")
        for problem in problems:
            print(f"{name}: FAIL: {problem}")
            self.failed.append(name)
        for label, inputs, wants in runs:
            label = name + (" " + label if label else "")
            gots = seg(inputs, [w.shape for w in wants],
                       [np.float64] * len(wants))
            err = 0.0
            ok = True
            for got, want in zip(gots, wants):
                if not np.all(np.isfinite(got)):
                    ok = False
                    continue
                if want.size:
                    err = max(err, float((np.abs(got - want) /
                                          np.maximum(1.0, np.abs(want))).max()))
            ok = ok and err <= RTOL
            print(f"{label}: max rel diff {err:.1e} {'ok' if ok else 'FAIL'}")
            if not ok:
                self.failed.append(label)


def main():
    rng = np.random.default_rng(0)
    normal = lambda *shape: rng.normal(size=shape)
    heads = (None, None, N_HEAD, D_HEAD)
    scores = (None, None, None, N_HEAD)
    hid = (None, None, D_MODEL)
    T = lambda shape: tensor(shape + ("f64",))
    TI = lambda shape: tensor(shape + ("i64",))

    x = normal(QLEN, BSZ, D_MODEL)
    mem = normal(MLEN, BSZ, D_MODEL)
    q, k, v = normal(QLEN, BSZ, N_HEAD, D_HEAD), normal(KLEN, BSZ, N_HEAD, D_HEAD), \
        normal(KLEN, BSZ, N_HEAD, D_HEAD)
    r = normal(KLEN, N_HEAD, D_HEAD)
    u, vb = normal(N_HEAD, D_HEAD), normal(N_HEAD, D_HEAD)
    s = normal(QLEN, KLEN, BSZ, N_HEAD)
    tokens = rng.integers(0, N_TOKEN, size=(QLEN, BSZ)).astype(np.int64)
    scale = 0.353553385
    # Memory lengths for masked_softmax and rel_attention: s = 0 (mem_len = mlen),
    # s = 3 (klen > mem_len), s = qlen (klen <= mem_len).
    mask_runs = [(MLEN, False), (MLEN, True), (6, True), (KLEN + 2, True)]

    with tempfile.TemporaryDirectory() as work:
        c = Checker(work)

        table = normal(N_TOKEN, D_MODEL)
        c.run("embedding", segment(
            [("table", T((N_TOKEN, D_MODEL))), ("tokens", TI((None, None)))],
            [("%e", T(hid))],
            f"  %e = txl.embedding %table, %tokens : {T((N_TOKEN, D_MODEL))}, "
            f"{TI((None, None))} -> {T(hid)}"),
            [("", [table, tokens], [table[tokens]])])

        dims = [D_MODEL, D_MODEL // 2, D_MODEL // 4]
        clusters = len(ENDS) - 1
        ad_tokens = rng.integers(0, ENDS[-1], size=(QLEN, BSZ)).astype(np.int64)
        ad_tokens[0, 0], ad_tokens[0, 1], ad_tokens[1, 0] = 4, 5, 15  # edges
        tables = [normal(ENDS[i + 1] - ENDS[i], dims[i]) for i in range(clusters)]
        projs = [normal(D_MODEL, dims[i]) for i in range(clusters)]
        ts = [T(t.shape) for t in tables]
        ps = [T(p.shape) for p in projs]
        c.run("adaptive_embedding", segment(
            [(f"t{i}", ts[i]) for i in range(clusters)] +
            [(f"p{i}", ps[i]) for i in range(clusters)] +
            [("ids", TI((None, None)))],
            [("%e", T(hid))],
            f"  %e = txl.adaptive_embedding %ids\n"
            f"      tables({', '.join(f'%t{i}' for i in range(clusters))} : {', '.join(ts)})\n"
            f"      projs({', '.join(f'%p{i}' for i in range(clusters))} : {', '.join(ps)})\n"
            f"      {{cutoff_ends = array<i64: {', '.join(map(str, ENDS))}>}}"
            f" : {TI((None, None))} -> {T(hid)}"),
            [("", tables + projs + [ad_tokens],
              [reference_embedding(ad_tokens.reshape(-1), tables, projs)
               .reshape(QLEN, BSZ, D_MODEL)])],
            gemm=True)

        w, b = normal(6, D_MODEL), normal(6)
        c.run("linear bias", segment(
            [("x", T(hid)), ("w", T((6, D_MODEL))), ("b", T((6,)))],
            [("%y", T((None, None, 6)))],
            f"  %y = txl.linear %x, %w, %b : {T(hid)}, {T((6, D_MODEL))}, "
            f"{T((6,))} -> {T((None, None, 6))}"),
            [("", [x, w, b], [x @ w.T + b])],
            gemm=True)
        rows = normal(7, D_MODEL)
        c.run("linear no-bias", segment(
            [("x", T((None, D_MODEL))), ("w", T((6, D_MODEL)))],
            [("%y", T((None, 6)))],
            f"  %y = txl.linear %x, %w : {T((None, D_MODEL))}, {T((6, D_MODEL))}"
            f" -> {T((None, 6))}"),
            [("", [rows, w], [rows @ w.T])],
            gemm=True)

        g, beta = normal(D_MODEL), normal(D_MODEL)
        c.run("layer_norm", segment(
            [("x", T(hid)), ("g", T((D_MODEL,))), ("b", T((D_MODEL,)))],
            [("%y", T(hid))],
            f"  %y = txl.layer_norm %x, %g, %b {{epsilon = 1.0e-05 : f32}} : "
            f"{T(hid)}, {T((D_MODEL,))}, {T((D_MODEL,))}"),
            [("", [x, g, beta], [layer_norm(x, g, beta, f32(1e-5))])])

        c.run("add", segment(
            [("a", T(heads)), ("b", T(heads))], [("%y", T(heads))],
            f"  %y = txl.add %a, %b : {T(heads)}"),
            [("", [q, q[::-1]], [q + q[::-1]])])
        c.run("scale", segment(
            [("x", T(hid))], [("%y", T(hid))],
            f"  %y = txl.scale %x {{factor = 2.82842712 : f32}} : {T(hid)}"),
            [("", [x], [f32(2.82842712) * x])])
        c.run("relu", segment(
            [("x", T(hid))], [("%y", T(hid))],
            f"  %y = txl.relu %x : {T(hid)}"),
            [("", [x], [np.maximum(x, 0.0)])])

        c.run("concat_mem", segment(
            [("m", T(hid)), ("h", T(hid))], [("%y", T(hid))],
            f"  %y = txl.concat_mem %m, %h : {T(hid)}, {T(hid)} -> {T(hid)}"),
            [("", [mem, x], [np.concatenate([mem, x])])])
        cat = np.concatenate([mem, x])
        c.run("take_last", segment(
            [("x", T(hid)), ("n", "index")], [("%y", T(hid))],
            f"  %y = txl.take_last %x, %n : {T(hid)} -> {T(hid)}"),
            [("count < len", [cat, 3], [cat[-3:]]),
             ("count > len", [cat, KLEN + 4], [cat])])
        # The new memory: take_last of concat_mem, lowered without the
        # concatenation (the rows it keeps of each operand).
        c.run("new_memory", segment(
            [("m", T(hid)), ("h", T(hid)), ("n", "index")], [("%y", T(hid))],
            f"  %c = txl.concat_mem %m, %h : {T(hid)}, {T(hid)} -> {T(hid)}\n"
            f"  %y = txl.take_last %c, %n : {T(hid)} -> {T(hid)}"),
            [(f"count {n}", [mem, x, n], [cat[max(0, KLEN - n):]])
             for n in (0, QLEN - 1, QLEN, QLEN + 1, KLEN, KLEN + 4)])
        c.run("stop_gradient", segment(
            [("x", T(hid))], [("%y", T(hid))],
            f"  %y = txl.stop_gradient %x : {T(hid)}"),
            [("", [x], [x])])

        inv_freq = 1.0 / 10000.0 ** (np.arange(0, D_MODEL, 2.0) / D_MODEL)
        c.run("pos_emb", segment(
            [("f", T((D_MODEL // 2,))), ("klen", "index"), ("clamp", "i64")],
            [("%r", T((None, D_MODEL)))],
            f"  %r = txl.pos_emb %f, %klen, %clamp : {T((D_MODEL // 2,))} -> "
            f"{T((None, D_MODEL))}"),
            [("unclamped", [inv_freq, KLEN, 0], [pos_emb(inv_freq, KLEN, 0)]),
             ("clamp_len 3", [inv_freq, KLEN, 3], [pos_emb(inv_freq, KLEN, 3)])])

        c.run("broadcast_head_bias", segment(
            [("u", T((N_HEAD, D_HEAD))), ("q", T(heads))], [("%y", T(heads))],
            f"  %y = txl.broadcast_head_bias %u, %q : {T((N_HEAD, D_HEAD))}, "
            f"{T(heads)}"),
            [("", [u, q], [np.broadcast_to(u, q.shape)])])
        c.run("attn_score content", segment(
            [("q", T(heads)), ("k", T(heads))], [("%s", T(scores))],
            f"  %s = txl.attn_score %q, %k : {T(heads)}, {T(heads)} -> "
            f"{T(scores)}"),
            [("", [q, k], [np.einsum("ibnd,jbnd->ijbn", q, k)])],
            gemm=True)
        rk = (None, N_HEAD, D_HEAD)
        c.run("attn_score positional", segment(
            [("q", T(heads)), ("r", T(rk))], [("%s", T(scores))],
            f"  %s = txl.attn_score %q, %r : {T(heads)}, {T(rk)} -> "
            f"{T(scores)}"),
            [("", [q, r], [np.einsum("ibnd,jnd->ijbn", q, r)])],
            gemm=True)
        c.run("rel_shift", segment(
            [("s", T(scores))], [("%y", T(scores))],
            f"  %y = txl.rel_shift %s : {T(scores)}"),
            [("", [s], [rel_shift(s)])])
        c.run("masked_softmax", segment(
            [("s", T(scores)), ("ml", "index"), ("sl", "i1")], [("%p", T(scores))],
            f"  %p = txl.masked_softmax %s, %ml, %sl {{scale = {scale} : f32}}"
            f" : {T(scores)}"),
            [(f"mem_len {ml}{' same_length' if sl else ''}", [s, ml, sl],
              [masked_softmax(s, ml, sl, f32(scale))]) for ml, sl in mask_runs])
        p = masked_softmax(s, MLEN, False, 1.0)
        c.run("attn_apply", segment(
            [("p", T(scores)), ("v", T(heads))], [("%o", T(heads))],
            f"  %o = txl.attn_apply %p, %v : {T(scores)}, {T(heads)} -> "
            f"{T(heads)}"),
            [("", [p, v], [np.einsum("ijbn,jbnd->ibnd", p, v)])],
            gemm=True)
        bias = T((N_HEAD, D_HEAD))
        # The tiled kernel (txl-rel-attention-to-cpu: no BLAS), and the
        # BLAS-product lowering (tiled-attention=false).
        for name, options in (("rel_attention", {}),
                              ("rel_attention_blas", {
                                  "gemm": True,
                                  "pipeline": "txl-cpu-pipeline="
                                              "tiled-attention=false"})):
            c.run(name, segment(
                [("q", T(heads)), ("k", T(heads)), ("v", T(heads)),
                 ("r", T(rk)), ("u", bias), ("vb", bias), ("ml", "index"),
                 ("sl", "i1")],
                [("%o", T(heads))],
                f"  %o = txl.rel_attention %q, %k, %v, %r, %u, %vb, %ml, %sl "
                f"{{scale = {scale} : f32}}\n"
                f"      : {T(heads)}, {T(heads)}, {T(heads)}, {T(rk)}, {bias}, "
                f"{bias} -> {T(heads)}"),
                [(f"mem_len {ml}{' same_length' if sl else ''}",
                  [q, k, v, r, u, vb, ml, sl],
                  [rel_attention(q, k, v, r, u, vb, ml, sl, f32(scale))])
                 for ml, sl in mask_runs],
                **options)

        logits = 3 * normal(QLEN, BSZ, N_TOKEN)
        c.run("nll", segment(
            [("l", T((None, None, N_TOKEN))), ("t", TI((None, None)))],
            [("%n", T((None, None)))],
            f"  %n = txl.nll %l, %t : {T((None, None, N_TOKEN))}, "
            f"{TI((None, None))} -> {T((None, None))}"),
            [("", [logits, tokens], [nll(logits, tokens)])])

        # txl.nll of a txl.linear with no other use: lowered block by block
        # (512 columns) with an online log-sum-exp. 1100 words = 3 blocks;
        # the bias ramp makes later blocks raise the running max, so the
        # rescaling of the running sum is exercised.
        vocab = 1100
        hidden = normal(QLEN, BSZ, D_MODEL)
        w_out = normal(vocab, D_MODEL)
        ramp = np.linspace(-4.0, 4.0, vocab) + normal(vocab)
        words = rng.integers(0, vocab, size=(QLEN, BSZ)).astype(np.int64)
        for label, with_bias in (("bias", True), ("no-bias", False)):
            args = [("h", T((None, None, D_MODEL))), ("w", T((vocab, D_MODEL))),
                    ("t", TI((None, None)))]
            operands = "%h, %w"
            types = f"{T((None, None, D_MODEL))}, {T((vocab, D_MODEL))}"
            inputs = [hidden, w_out, words]
            logits = hidden @ w_out.T
            if with_bias:
                args.insert(2, ("b", T((vocab,))))
                operands += ", %b"
                types += f", {T((vocab,))}"
                inputs.insert(2, ramp)
                logits = logits + ramp
            c.run(f"linear_nll {label}", segment(
                args, [("%n", T((None, None)))],
                f"  %l = txl.linear {operands} : {types} -> "
                f"{T((None, None, vocab))}\n"
                f"  %n = txl.nll %l, %t : {T((None, None, vocab))}, "
                f"{TI((None, None))} -> {T((None, None))}"),
                [("", inputs, [nll(logits, words)])],
                gemm=True)

        hidden = normal(QLEN, BSZ, D_MODEL)
        adaptive = {
            "div2": ([normal(ENDS[i + 1] - ENDS[i], dims[i]) for i in range(clusters)],
                     [normal(ENDS[i + 1] - ENDS[i]) for i in range(clusters)],
                     [normal(D_MODEL, dims[i]) for i in range(clusters)],
                     normal(clusters - 1, dims[0]), normal(clusters - 1)),
            "div1": ([normal(ENDS[-1], 6)], [normal(ENDS[-1])],
                     [normal(D_MODEL, 6) for _ in range(clusters)],
                     normal(clusters - 1, 6), normal(clusters - 1)),
        }
        for name, (ws, bs, pj, cw, cb) in adaptive.items():
            params = ws + bs + pj + [cw, cb]
            names = [f"%p{i}" for i in range(len(params))]
            types = [T(a.shape) for a in params]
            nw, nb, npj = len(ws), len(bs), len(pj)
            group = lambda lo, hi: (f"{', '.join(names[lo:hi])} : "
                                    f"{', '.join(types[lo:hi])}")
            want = reference_nll(hidden.reshape(-1, D_MODEL),
                                 ad_tokens.reshape(-1), ws, bs, pj, cw, cb)
            c.run("adaptive_nll " + name, segment(
                [(n[1:], t) for n, t in zip(names, types)] +
                [("h", T(hid)), ("t", TI((None, None)))],
                [("%n", T((None, None)))],
                f"  %n = txl.adaptive_nll %h, %t\n"
                f"      weights({group(0, nw)})\n"
                f"      biases({group(nw, nw + nb)})\n"
                f"      projs({group(nw + nb, nw + nb + npj)})\n"
                f"      clusters({group(len(params) - 2, len(params))})\n"
                f"      {{cutoff_ends = array<i64: {', '.join(map(str, ENDS))}>}}\n"
                f"      : {T(hid)}, {TI((None, None))} -> {T((None, None))}"),
                [("", params + [hidden, ad_tokens],
                  [want.reshape(QLEN, BSZ)])],
                gemm=True)

        if c.failed:
            print("FAILED: " + ", ".join(c.failed))
        sys.exit(1 if c.failed else 0)


if __name__ == "__main__":
    main()
