"""Finite-difference check, at float64, of the adjoint of every
differentiable txl op family (the backward ops txl-generate-backward emits
and their lowering).

Each case is a small @segment whose loss is the mean NLL of a fixed random
linear read-out of the op's output (so every output element gets a
different, position-dependent cotangent), or the op's own NLL for the
losses. It is compiled with `--txl-cpu-pipeline=generate-backward=true`;
the analytic gradient from `txl_segment_grad` is compared, for every
parameter and a sample of its elements, with a central difference of the
loss from `txl_segment_forward`."""

import os
import sys
import tempfile

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "lib"))
import txlrun  # noqa: E402

Q, B, C = 3, 2, 5  # positions, batch, read-out classes
H = 1e-5
RTOL, ATOL = 1e-5, 1e-8


def t(shape):
    return "tensor<%sxf64>" % "x".join("?" if s is None else str(s) for s in shape)


def readout(o, feat, rows=Q):
    """Appends loss = nll(linear(o, wc), tgt) for o [rows, B, feat]."""
    return (f"  %z = txl.linear {o}, %wc : {t((None, None, feat))}, {t((C, feat))} -> {t((None, None, C))}\n"
            f"  %l = txl.nll %z, %tgt : {t((None, None, C))}, tensor<?x?xi64> -> tensor<?x?xf64>\n"
            "  return %l : tensor<?x?xf64>\n"), [("wc", (C, feat), "f"), ("tgt", (rows, B), C)]


def case_linear_relu():
    body = ("  %y = txl.linear %x, %w, %b : tensor<?x?x4xf64>, tensor<6x4xf64>, tensor<6xf64> -> tensor<?x?x6xf64>\n"
            "  %o = txl.relu %y : tensor<?x?x6xf64>\n")
    tail, extra = readout("%o", 6)
    return body + tail, [("x", (Q, B, 4), "p"), ("w", (6, 4), "p"), ("b", (6,), "p")] + extra, Q


def case_layer_norm():
    body = ("  %o = txl.layer_norm %x, %g, %bt {epsilon = 1.0e-05 : f32} : tensor<?x?x6xf64>, tensor<6xf64>, tensor<6xf64>\n")
    tail, extra = readout("%o", 6)
    return body + tail, [("x", (Q, B, 6), "p"), ("g", (6,), "p"), ("bt", (6,), "p")] + extra, Q


def case_embedding_scale_add():
    body = ("  %e = txl.embedding %tab, %tok : tensor<7x4xf64>, tensor<?x?xi64> -> tensor<?x?x4xf64>\n"
            "  %s = txl.scale %e {factor = 2.0 : f32} : tensor<?x?x4xf64>\n"
            "  %o = txl.add %s, %e : tensor<?x?x4xf64>\n")
    tail, extra = readout("%o", 4)
    return body + tail, [("tab", (7, 4), "p"), ("tok", (Q, B), 7)] + extra, Q


def case_memory():
    # rows: take_last keeps 4 of the 2 + Q rows; the slice and the reshapes
    # are undone by their adjoints.
    body = ("  %cat = txl.concat_mem %mem, %h : tensor<?x?x4xf64>, tensor<?x?x4xf64> -> tensor<?x?x4xf64>\n"
            "  %c4 = arith.constant 4 : index\n"
            "  %last = txl.take_last %cat, %c4 : tensor<?x?x4xf64> -> tensor<?x?x4xf64>\n"
            "  %c0 = arith.constant 0 : index\n"
            "  %c1 = arith.constant 1 : index\n"
            "  %d0 = tensor.dim %last, %c0 : tensor<?x?x4xf64>\n"
            "  %d1 = tensor.dim %last, %c1 : tensor<?x?x4xf64>\n"
            "  %ex = tensor.expand_shape %last [[0], [1], [2, 3]] output_shape [%d0, %d1, 2, 2] : tensor<?x?x4xf64> into tensor<?x?x2x2xf64>\n"
            "  %co = tensor.collapse_shape %ex [[0], [1], [2, 3]] : tensor<?x?x2x2xf64> into tensor<?x?x4xf64>\n"
            "  %o = tensor.extract_slice %co[0, 0, 1] [%d0, %d1, 3] [1, 1, 1] : tensor<?x?x4xf64> to tensor<?x?x3xf64>\n")
    tail, extra = readout("%o", 3, rows=4)
    return body + tail, [("mem", (2, B, 4), "p"), ("h", (Q, B, 4), "p")] + extra, 4


def case_rel_attention(mlen, mem_len, same_length):
    klen = Q + mlen
    n, d = 2, 3
    qt, kt, rt, bt = t((None, None, n, d)), t((None, None, n, d)), t((None, n, d)), t((n, d))
    body = (f"  %ml = arith.constant {mem_len} : index\n"
            f"  %sl = arith.constant {'true' if same_length else 'false'}\n"
            f"  %a = txl.rel_attention %q, %k, %v, %r, %u, %vb, %ml, %sl {{scale = 0.5 : f32}}"
            f" : {qt}, {kt}, {kt}, {rt}, {bt}, {bt} -> {qt}\n"
            f"  %o = tensor.collapse_shape %a [[0], [1], [2, 3]] : {qt} into {t((None, None, n * d))}\n")
    tail, extra = readout("%o", n * d)
    args = [("q", (Q, B, n, d), "p"), ("k", (klen, B, n, d), "p"), ("v", (klen, B, n, d), "p"),
            ("r", (klen, n, d), "p"), ("u", (n, d), "p"), ("vb", (n, d), "p")]
    return body + tail, args + extra, Q


def case_decomposed_attention(mlen, mem_len, same_length):
    """The four-term form as the frontend writes it (paper §3.3), kept
    unfused (fuse-attention=false): attn_score, broadcast_head_bias,
    rel_shift, masked_softmax and attn_apply each get their own adjoint."""
    klen = Q + mlen
    n, d = 2, 3
    qt, rt, bt, st = t((None, None, n, d)), t((None, n, d)), t((n, d)), t((None, None, None, n))
    body = (f"  %ml = arith.constant {mem_len} : index\n"
            f"  %sl = arith.constant {'true' if same_length else 'false'}\n"
            f"  %ta = txl.attn_score %q, %k : {qt}, {qt} -> {st}\n"
            f"  %qu = txl.broadcast_head_bias %u, %q : {bt}, {qt}\n"
            f"  %tc = txl.attn_score %qu, %k : {qt}, {qt} -> {st}\n"
            f"  %tb = txl.attn_score %q, %r : {qt}, {rt} -> {st}\n"
            f"  %qv = txl.broadcast_head_bias %vb, %q : {bt}, {qt}\n"
            f"  %td = txl.attn_score %qv, %r : {qt}, {rt} -> {st}\n"
            f"  %bd0 = txl.add %tb, %td : {st}\n"
            f"  %bd = txl.rel_shift %bd0 : {st}\n"
            f"  %ac = txl.add %ta, %tc : {st}\n"
            f"  %s = txl.add %ac, %bd : {st}\n"
            f"  %p = txl.masked_softmax %s, %ml, %sl {{scale = 0.5 : f32}} : {st}\n"
            f"  %a = txl.attn_apply %p, %v : {st}, {qt} -> {qt}\n"
            f"  %o = tensor.collapse_shape %a [[0], [1], [2, 3]] : {qt} into {t((None, None, n * d))}\n")
    tail, extra = readout("%o", n * d)
    args = [("q", (Q, B, n, d), "p"), ("k", (klen, B, n, d), "p"), ("v", (klen, B, n, d), "p"),
            ("r", (klen, n, d), "p"), ("u", (n, d), "p"), ("vb", (n, d), "p")]
    return body + tail, args + extra, Q, "fuse-attention=false"


ENDS = [0, 3, 5, 9]


def case_adaptive_embedding():
    tabs = [(3, 4), (2, 2), (4, 1)]
    types = ", ".join(t(s) for s in tabs)
    ptypes = ", ".join(t((4, s[1])) for s in tabs)
    body = (f"  %o = txl.adaptive_embedding %tok tables(%t0, %t1, %t2 : {types}) projs(%p0, %p1, %p2 : {ptypes})"
            f" {{cutoff_ends = array<i64: {', '.join(map(str, ENDS))}>}} : tensor<?x?xi64> -> tensor<?x?x4xf64>\n")
    tail, extra = readout("%o", 4)
    args = [("tok", (Q, B), 9)] + [(f"t{i}", s, "p") for i, s in enumerate(tabs)] + \
           [(f"p{i}", (4, s[1]), "p") for i, s in enumerate(tabs)]
    return body + tail, args + extra, Q


def case_adaptive_nll(sliced):
    if sliced:
        ws, bs, ps = [(9, 4)], [(9,)], []
    else:
        ws, bs, ps = [(3, 4), (2, 2), (4, 1)], [(3,), (2,), (4,)], [(4, 4), (4, 2), (4, 1)]
    def group(prefix, shapes):
        names = ", ".join(f"%{prefix}{i}" for i in range(len(shapes)))
        return f"{names} : {', '.join(t(s) for s in shapes)}" if shapes else ""
    body = (f"  %l = txl.adaptive_nll %h, %tgt weights({group('w', ws)}) biases({group('b', bs)})"
            f" projs({group('p', ps)}) clusters(%cw, %cb : {t((2, 4))}, {t((2,))})"
            f" {{cutoff_ends = array<i64: {', '.join(map(str, ENDS))}>}}"
            " : tensor<?x?x4xf64>, tensor<?x?xi64> -> tensor<?x?xf64>\n"
            "  return %l : tensor<?x?xf64>\n")
    args = [("h", (Q, B, 4), "p"), ("tgt", (Q, B), 9)] + [(f"w{i}", s, "p") for i, s in enumerate(ws)] + \
           [(f"b{i}", s, "p") for i, s in enumerate(bs)] + [(f"p{i}", s, "p") for i, s in enumerate(ps)] + \
           [("cw", (2, 4), "p"), ("cb", (2,), "p")]
    return body, args, Q


def case_output_layer(vocab=1100):
    """txl.nll of txl.linear over 1100 words: lowered with its backward as
    two sweeps over blocks of 512 output columns (3 blocks)."""
    body = (f"  %z = txl.linear %h, %w, %b : tensor<?x?x4xf64>, {t((vocab, 4))}, {t((vocab,))}"
            f" -> {t((None, None, vocab))}\n"
            f"  %l = txl.nll %z, %tgt : {t((None, None, vocab))}, tensor<?x?xi64> -> tensor<?x?xf64>\n"
            "  return %l : tensor<?x?xf64>\n")
    return body, [("h", (Q, B, 4), "p"), ("w", (vocab, 4), "p"), ("b", (vocab,), "p"),
                  ("tgt", (Q, B), vocab)], Q


# Leading dimensions that are dynamic in the ops' types (positions, batch).
DYNAMIC = {"x": 2, "h": 2, "mem": 2, "q": 2, "k": 2, "v": 2, "r": 1}


def build(body, args):
    sig = []
    for name, shape, kind in args:
        if kind == "p":
            k = DYNAMIC.get(name, 0)
            shape = (None,) * k + tuple(shape[k:])
            sig.append(f"%{name}: {t(shape)} {{txl.param = \"{name}\"}}")
        elif kind == "f":
            sig.append(f"%{name}: {t(shape)}")
        else:
            sig.append(f"%{name}: tensor<?x?xi64>")
    return ("func.func @segment(" + ", ".join(sig) + ") -> tensor<?x?xf64>\n"
            "    attributes {llvm.emit_c_interface, txl.entry = \"txl_segment_forward\"} {\n" + body + "}\n")


def check(name, body, args, rows, options="", *, rng, work):
    path = os.path.join(work, name + ".mlir")
    with open(path, "w") as f:
        f.write(build(body, args))
    os.makedirs(work + "/" + name, exist_ok=True)
    so = txlrun.compile_module(
        path, work + "/" + name,
        pipeline=("txl-cpu-pipeline=generate-backward=true " + options).strip())
    fwd = txlrun.Segment(so)
    grad = txlrun.Segment(so, entry="txl_segment_grad")
    values = []
    for _, shape, kind in args:
        if kind in ("p", "f"):
            values.append(rng.randn(*shape))
        else:
            values.append(rng.randint(0, kind, size=shape).astype(np.int64))
    params = [i for i, a in enumerate(args) if a[2] == "p"]
    shapes = [(rows, B)] + [args[i][1] for i in params]
    # The last argument of the backward is the loss scale (1: the plain
    # gradient); 2^5 scales every gradient exactly.
    outs = grad(values + [np.float32(1.0)], shapes, [np.float64] * len(shapes))
    scaled = grad(values + [np.float32(32.0)], shapes,
                  [np.float64] * len(shapes))
    if not all(np.array_equal(s, 32.0 * g)
               for s, g in zip(scaled[1:], outs[1:])):
        print(f"FAIL: {name}: loss scale 32 does not scale the gradients by 32")
        return 1.0

    def loss(vals):
        return fwd(vals, [(rows, B)], [np.float64])[0].mean()

    if not abs(outs[0].mean() - loss(values)) < 1e-12:
        print(f"FAIL: {name}: the gradient function's loss differs from the forward's")
        return 1.0
    worst = 0.0
    for g, i in zip(outs[1:], params):
        flat = values[i].reshape(-1)
        picks = rng.choice(flat.size, size=min(flat.size, 10), replace=False)
        for e in picks:
            old = flat[e]
            flat[e] = old + H
            up = loss(values)
            flat[e] = old - H
            down = loss(values)
            flat[e] = old
            fd = (up - down) / (2 * H)
            err = abs(fd - g.reshape(-1)[e])
            if err > ATOL + RTOL * abs(fd):
                print(f"FAIL: {name}: d/d{args[i][0]}[{e}] analytic {g.reshape(-1)[e]:.10g} vs FD {fd:.10g}")
                return 1.0
            worst = max(worst, err / (abs(fd) + 1e-12))
    print(f"{name}: ok, worst relative error {worst:.1e}")
    return 0.0


def main():
    rng = np.random.RandomState(0)
    cases = {
        "linear_relu": case_linear_relu(),
        "layer_norm": case_layer_norm(),
        "embedding_scale_add": case_embedding_scale_add(),
        "memory_slices_reshapes": case_memory(),
        "rel_attention": case_rel_attention(mlen=2, mem_len=4, same_length=False),
        "rel_attention_same_length": case_rel_attention(mlen=3, mem_len=3, same_length=True),
        "rel_attention_no_memory": case_rel_attention(mlen=0, mem_len=2, same_length=False),
        "decomposed_attention": case_decomposed_attention(mlen=2, mem_len=4, same_length=False),
        "decomposed_attention_same_length": case_decomposed_attention(mlen=3, mem_len=3,
                                                                      same_length=True),
        "adaptive_embedding": case_adaptive_embedding(),
        "adaptive_nll_div2_projs": case_adaptive_nll(sliced=False),
        "adaptive_nll_sliced": case_adaptive_nll(sliced=True),
        "output_layer_blocks": case_output_layer(),
    }
    failed = 0
    with tempfile.TemporaryDirectory() as work:
        for name, case in cases.items():
            failed += check(name, *case, rng=rng, work=work)
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
