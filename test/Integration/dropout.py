"""Checks txl.dropout and the train-mode segment end to end.

Op level (a @segment of two txl.dropout ops, compiled with
--txl-cpu-pipeline):
- philox: the numpy Philox4x32-10 below reproduces Random123's published
  known-answer vectors, and every mask txl.dropout draws is the one it
  predicts from the documented key/counter layout (key = seed, counter =
  (e / 4, stream_base + stream, offset lo, offset hi), word e mod 4, keep iff
  bits >> 8 >= ceil(rate 2^24)), bit for bit, at f32 and f64, with and
  without a stream base, on 3219 elements (not a multiple of 4, dynamic
  innermost size: one Philox call per element) and on [37, 3, 28] with a
  static innermost 28 (one call per block of four); a third site counts by
  batch column (`column`, batch_dim 1) and matches the numpy mask of the
  columns from that global column on; a slice of its columns run from its
  own global column draws the whole call's masks, and from the call's
  column (a local numbering) other ones;
- kept elements are exactly x * (1 / (1 - rate)) in the tensor's type, the
  others 0;
- over 10^6 elements the kept fraction is within 5 sigma of 1 - rate, and
  two offsets' masks agree at (1 - rate)^2 + rate^2 (independent);
- training = false returns x bit for bit;
- the same operands give the same output; another offset, stream or seed
  another mask.

Model level (txlc --emit=txl of a 2-layer model with dropout and dropatt):
- at float64 and training = 1, the NLL and every new memory match a numpy
  transcription of the official MemTransformerLM._forward in train mode
  (nn.Dropout on the word embedding, pos_emb, o_net's output, both CoreNet
  dropouts, the final hidden state, dropatt on the probabilities), whose
  masks come from the numpy Philox at the documented sites; post- and
  pre-LayerNorm (2 and 4 heads: the fused dropatt without and with whole
  blocks of four), fused and decomposed attention, the batch from global
  column 3 (pos_emb's mask shared by the columns);
- each column run alone from its global column gives the whole batch's
  outputs within 1e-12 (the masks of one call, however the batch is split),
  and every column run from column 0 does not (negative control);
- training = 0: the float32 model is bit-identical to the same model built
  with dropout = dropatt = 0;
- @segment_grad with training = 1 matches central finite differences of the
  mean NLL of @segment with training = 1 at float64 (fixed seed and offset:
  the function is deterministic).
"""

import itertools
import math
import os
import re
import subprocess
import sys
import tempfile

import numpy as np

HERE = os.path.dirname(__file__)
sys.path.insert(0, os.path.join(HERE, "..", "lib"))
sys.path.insert(0, HERE)
import txlrun  # noqa: E402
from f64_ops import (f32, layer_norm, log_softmax, masked_softmax,  # noqa: E402
                     pos_emb, rel_shift)

MASK32 = 0xFFFFFFFF
MASK64 = (1 << 64) - 1

# Random123's kat_vectors for philox4x32 with 10 rounds: counter, key, result.
KNOWN_ANSWERS = [
    ((0, 0, 0, 0), (0, 0), (0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8)),
    ((MASK32,) * 4, (MASK32,) * 2, (0x408f276d, 0x41c83b0e, 0xa20bc7c6, 0x6d5451fd)),
    ((0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344), (0xa4093822, 0x299f31d0),
     (0xd16cfe09, 0x94fdcceb, 0x5001e420, 0x24126ea1)),
]


def philox4x32_10(ctr, key):
    """Philox4x32-10 (Salmon et al. 2011) of counters `ctr` (four arrays or
    ints, 32-bit words) under `key` (two 32-bit words), as uint64 arrays."""
    m0, m1 = np.uint64(0xD2511F53), np.uint64(0xCD9E8D57)
    w0, w1 = np.uint64(0x9E3779B9), np.uint64(0xBB67AE85)
    mask, shift = np.uint64(MASK32), np.uint64(32)
    c0, c1, c2, c3 = (np.asarray(c, dtype=np.uint64) for c in ctr)
    k0, k1 = (np.asarray(k, dtype=np.uint64) for k in key)
    for r in range(10):
        if r:
            k0, k1 = (k0 + w0) & mask, (k1 + w1) & mask
        p0, p1 = m0 * c0, m1 * c2  # exact: both factors < 2^32
        c0, c1, c2, c3 = ((p1 >> shift) ^ c1 ^ k0, p1 & mask,
                          (p0 >> shift) ^ c3 ^ k1, p0 & mask)
    return c0, c1, c2, c3


def keep_mask(shape, seed, offset, stream, rate, batch_dim=None, column=0):
    """txl.dropout's mask per its documented layout (TxlOps.td); with
    `batch_dim`, the elements are counted with that dimension outermost,
    from global column `column` on."""
    if batch_dim is not None:
        moved = (shape[batch_dim],) + tuple(
            n for d, n in enumerate(shape) if d != batch_dim)
        m = keep_mask((column + moved[0],) + moved[1:], seed, offset, stream,
                      rate)[column:]
        return np.moveaxis(m, 0, batch_dim)
    seed, offset = seed & MASK64, offset & MASK64
    e = np.arange(int(np.prod(shape)), dtype=np.uint64)
    words = philox4x32_10(
        ((e >> np.uint64(2)) & np.uint64(MASK32), stream & MASK32,
         offset & MASK32, offset >> 32),
        (seed & MASK32, seed >> 32))
    bits = np.choose((e & np.uint64(3)).astype(np.int64), words)
    threshold = math.ceil(math.ldexp(rate, 24))
    return ((bits >> np.uint64(8)) >= threshold).reshape(shape)


def drop(x, seed, offset, stream, rate, batch_dim=None, column=0):
    """Inverted dropout of x with keep_mask, in x's dtype."""
    if rate == 0.0:
        return x
    keep = keep_mask(x.shape, seed, offset, stream, rate, batch_dim, column)
    return np.where(keep, x * x.dtype.type(1.0 / (1.0 - rate)), x.dtype.type(0))


class Report:
    def __init__(self):
        self.failed = 0

    def check(self, name, ok, detail=""):
        print(f"{name}: {'ok' if ok else 'FAIL'}{' ' + detail if detail else ''}")
        self.failed += not ok


# --- op level --------------------------------------------------------------

RATE = 0.3
SEED = -0x3A5F0C1E2D4B6987  # both key words used, two's complement in the ABI
OFFSET = 0x100000005        # both offset words used
BASE = 12
COLUMN = 5  # the global batch column of the tensor's first


def op_module(ftype, inner="?"):
    """Three dropout sites on a [?, ?, inner] tensor, the third counting by
    batch column (dimension 1); a static inner size that is a multiple of 4
    takes the lowering's one-Philox-call-per-block path."""
    t = f"tensor<?x?x{inner}x{ftype}>"
    return (f"func.func @segment(%x: {t}, %seed: i64, %offset: i64, %training: i1, %base: i64,"
            f" %column: i64) -> ({t}, {t}, {t}) attributes {{llvm.emit_c_interface, txl.entry = \"txl_segment_forward\"}} {{\n"
            f"  %a = txl.dropout %x, %seed, %offset, %training {{rate = {RATE} : f64, stream = 5 : i64}} : {t}\n"
            f"  %b = txl.dropout %x, %seed, %offset, %training stream_base %base"
            f" {{rate = {RATE} : f64, stream = 2 : i64}} : {t}\n"
            f"  %c = txl.dropout %x, %seed, %offset, %training stream_base %base column %column"
            f" {{batch_dim = 1 : i64, rate = {RATE} : f64, stream = 2 : i64}} : {t}\n"
            f"  return %a, %b, %c : {t}, {t}, {t}\n}}\n")


def compile_text(text, work, name, pipeline="txl-cpu-pipeline"):
    os.makedirs(os.path.join(work, name), exist_ok=True)
    path = os.path.join(work, name, name + ".mlir")
    with open(path, "w") as f:
        f.write(text)
    return txlrun.compile_module(path, os.path.join(work, name), pipeline=pipeline)


def check_ops(report, work, rng):
    for kat_ctr, kat_key, want in KNOWN_ANSWERS:
        got = tuple(int(w) for w in philox4x32_10(kat_ctr, kat_key))
        report.check(f"philox4x32-10 known answer {kat_ctr[0]:#x}", got == want,
                     " ".join(f"{w:#010x}" for w in got))

    for (ftype, dtype), (inner, size) in itertools.product(
            (("f32", np.float32), ("f64", np.float64)),
            (("?", 29), ("28", 28))):
        tag = f"{ftype} inner {inner}"
        seg = txlrun.Segment(compile_text(op_module(ftype, inner), work,
                                          f"op_{ftype}_{size}"))

        def run(x, seed=SEED, offset=OFFSET, training=True, base=BASE, column=COLUMN):
            return seg([x, seed, offset, training, base, column], [x.shape] * 3, [dtype] * 3)

        shape = (37, 3, size)
        x = rng.randn(*shape).astype(dtype)
        a, b, c = run(x)
        want_a = drop(x, SEED, OFFSET, 5, RATE)
        want_b = drop(x, SEED, OFFSET, BASE + 2, RATE)
        report.check(f"{tag} mask and values match the numpy Philox (stream 5)",
                     np.array_equal(a, want_a),
                     f"{np.count_nonzero(a != want_a)} of {a.size} differ")
        report.check(f"{tag} mask and values match the numpy Philox (stream_base {BASE} + 2)",
                     np.array_equal(b, want_b),
                     f"{np.count_nonzero(b != want_b)} of {b.size} differ")
        want_c = drop(x, SEED, OFFSET, BASE + 2, RATE, batch_dim=1, column=COLUMN)
        report.check(f"{tag} mask by batch column {COLUMN} matches the numpy Philox",
                     np.array_equal(c, want_c),
                     f"{np.count_nonzero(c != want_c)} of {c.size} differ")
        # Columns [1, 3) of a call from column COLUMN, run alone from
        # COLUMN + 1, draw the same masks; from COLUMN (the slice's local
        # numbering) they would not.
        part = np.ascontiguousarray(x[:, 1:])
        report.check(f"{tag} a column slice from its global column draws the whole call's masks",
                     np.array_equal(run(part, column=COLUMN + 1)[2], c[:, 1:]))
        report.check(f"{tag} the slice from the call's column draws other masks",
                     not np.array_equal(run(part, column=COLUMN)[2], c[:, 1:]))
        ea, eb, ec = run(x, training=False)
        report.check(f"{tag} training=0 is the identity",
                     np.array_equal(ea, x) and np.array_equal(eb, x) and np.array_equal(ec, x))

    seg = txlrun.Segment(compile_text(op_module("f32"), work, "op_f32"))
    ones = np.ones((1000, 10, 100), dtype=np.float32)

    def mask(seed=SEED, offset=OFFSET, base=BASE):
        """The mask of the site at stream_base + 2."""
        return seg([ones, seed, offset, True, base, 0], [ones.shape] * 3)[1] != 0

    m = mask()
    q = 1.0 - math.ceil(math.ldexp(RATE, 24)) / 2.0 ** 24
    sigma = math.sqrt(q * (1 - q) / m.size)
    kept = m.mean()
    report.check("keep rate within 5 sigma of 1 - rate", abs(kept - q) < 5 * sigma,
                 f"{kept:.5f} vs {q:.5f} (sigma {sigma:.1e})")
    other = mask(offset=OFFSET + 1)
    agree = (m == other).mean()
    want = q * q + (1 - q) * (1 - q)
    report.check("masks of two offsets are independent", abs(agree - want) < 5 * sigma,
                 f"agreement {agree:.5f} vs {want:.5f}")
    report.check("same seed and offset: same mask", np.array_equal(m, mask()))
    for what, changed in (("offset", other), ("stream base", mask(base=BASE + 1)),
                          ("seed", mask(seed=SEED + 1))):
        report.check(f"another {what}: another mask", not np.array_equal(m, changed),
                     f"agreement {(m == changed).mean():.5f}")


# --- model level -----------------------------------------------------------

QLEN, MLEN, BSZ, MEM_LEN, N_TOKEN = 5, 3, 2, 4, 11
MODEL = """[model]
n_token = {n_token}
n_layer = 2
d_model = 8
n_head = {n_head}
d_head = {d_head}
d_inner = 12
pre_lnorm = {pre_lnorm}
dropout = {dropout}
dropatt = {dropatt}

[segment]
tgt_len = {qlen}
mem_len = {mem_len}
"""


def emit_model(work, name, pre_lnorm, dropout, dropatt, f64, n_head=2):
    path = os.path.join(work, name + ".toml")
    with open(path, "w") as f:
        f.write(MODEL.format(n_token=N_TOKEN, pre_lnorm=str(pre_lnorm).lower(),
                             n_head=n_head, d_head=8 // n_head,
                             dropout=dropout, dropatt=dropatt, qlen=QLEN,
                             mem_len=MEM_LEN))
    text = subprocess.run(["txlc", path, "--emit=txl"], check=True,
                          capture_output=True, text=True).stdout
    # Only the segment is checked: drop the training functions (the f32
    # optimizer state would not survive the f64 rewrite below).
    text = drop_functions(text, ("grad_squared_norm", "squared_norm_part",
                                 "optimizer_step", "optimizer_update",
                                 "learning_rate"))
    # Every op accepts f64; the hyper-parameter attributes stay f32.
    return text.replace("xf32>", "xf64>") if f64 else text


def drop_functions(text, names):
    """The module text without the top-level functions called `names`."""
    out, skipping = [], False
    for line in text.splitlines(keepends=True):
        if any(line.startswith((f"  func.func @{n}(",
                                f"  func.func private @{n}("))
               for n in names):
            skipping = True
        if not skipping:
            out.append(line)
        elif line == "  }\n":
            skipping = False
    return "".join(out)


def segment_args(text):
    """(name or None, shape) of @segment's arguments; name for parameters."""
    sig = re.search(r"func\.func @segment\((.*?)\) ->", text, re.S).group(1)
    args = []
    for m in re.finditer(r"%arg\d+: (tensor<[^>]*>|i64)( \{[^}]*\})?", sig):
        name = re.search(r'txl\.param = "([^"]+)"', m.group(2) or "")
        shape = tuple(int(d) for d in re.findall(r"(\d+)x", m.group(1)))
        args.append((name.group(1) if name else None, shape,
                     "txl.buffer" in (m.group(2) or "")))
    return args


def init_params(args, rng, dtype):
    params = {}
    for name, shape, _ in args:
        if name is None:
            continue
        if name == "pos_emb.inv_freq":
            d = 2 * shape[0]
            params[name] = 1.0 / 10000 ** (np.arange(0.0, d, 2.0) / d)
        elif "layer_norm.weight" in name:
            params[name] = 1.0 + 0.1 * rng.randn(*shape)
        else:
            params[name] = 0.5 * rng.randn(*shape)
        params[name] = params[name].astype(dtype)
    return params


def reference(params, data, target, mems, pre_lnorm, dropout, dropatt, seed,
              offset, column, training):
    """Official MemTransformerLM._forward (attn_type 0, div_val 1, tied) in
    float64, train mode when `training`; stream ids as SegmentBuilder.cpp,
    the batch's columns counted from global column `column` (pos_emb's
    mask shared by every column, as the official [klen, 1, d_model])."""
    p = params
    rate = dropout if training else 0.0
    att_rate = dropatt if training else 0.0
    d_model = p["word_emb.emb_layers.0.weight"].shape[1]
    n_head, d_head = p["r_w_bias"].shape
    hd = n_head * d_head
    qlen, klen = data.shape[0], data.shape[0] + mems[0].shape[0]

    def dr(x, stream, r=None, batch_dim=1):
        return drop(x, seed, offset, stream, rate if r is None else r,
                    batch_dim, column)

    core = p["word_emb.emb_layers.0.weight"][data] * f32(math.sqrt(d_model))
    core = dr(core, 0)
    pos = dr(pos_emb(p["pos_emb.inv_freq"], klen, -1), 1, batch_dim=None)
    hids = [core]
    for l, mem in enumerate(mems[:-1]):
        L = f"layers.{l}."
        base = 4 * (l + 1)
        h = core
        cat = np.concatenate([mem, h], axis=0)
        x = layer_norm(cat, p[L + "dec_attn.layer_norm.weight"],
                       p[L + "dec_attn.layer_norm.bias"], f32(1e-5)) if pre_lnorm else cat
        w = x @ p[L + "dec_attn.qkv_net.weight"].T
        r = (pos @ p[L + "dec_attn.r_net.weight"].T).reshape(klen, n_head, d_head)
        q = w[-qlen:, :, :hd].reshape(qlen, -1, n_head, d_head)
        k = w[:, :, hd:2 * hd].reshape(klen, -1, n_head, d_head)
        v = w[:, :, 2 * hd:].reshape(klen, -1, n_head, d_head)
        ac = np.einsum("ibnd,jbnd->ijbn", q + p["r_w_bias"], k)
        bd = rel_shift(np.einsum("ibnd,jnd->ijbn", q + p["r_r_bias"], r))
        prob = masked_softmax(ac + bd, MEM_LEN, False, f32(1.0 / math.sqrt(d_head)))
        prob = dr(prob, base + 3, att_rate, batch_dim=2)
        vec = np.einsum("ijbn,jbnd->ibnd", prob, v).reshape(qlen, -1, hd)
        attn_out = dr(vec @ p[L + "dec_attn.o_net.weight"].T, base + 0)
        ln = (L + "dec_attn.layer_norm.weight", L + "dec_attn.layer_norm.bias")
        h = h + attn_out if pre_lnorm else layer_norm(h + attn_out, p[ln[0]], p[ln[1]], f32(1e-5))
        ln = (L + "pos_ff.layer_norm.weight", L + "pos_ff.layer_norm.bias")
        x = layer_norm(h, p[ln[0]], p[ln[1]], f32(1e-5)) if pre_lnorm else h
        inner = np.maximum(x @ p[L + "pos_ff.CoreNet.0.weight"].T + p[L + "pos_ff.CoreNet.0.bias"], 0)
        inner = dr(inner, base + 1)
        out = dr(inner @ p[L + "pos_ff.CoreNet.3.weight"].T + p[L + "pos_ff.CoreNet.3.bias"], base + 2)
        h = h + out if pre_lnorm else layer_norm(h + out, p[ln[0]], p[ln[1]], f32(1e-5))
        core = h
        hids.append(core)
    logits = dr(core, 2) @ p["word_emb.emb_layers.0.weight"].T + p["crit.out_layers.0.bias"]
    nll = -np.take_along_axis(log_softmax(logits), target[..., None], axis=-1)[..., 0]
    new_mems = [np.concatenate([m, hh], axis=0)[-MEM_LEN:] for m, hh in zip(mems, hids)]
    return [nll] + new_mems


class Model:
    """A compiled model segment and its inputs."""

    def __init__(self, text, so, rng, dtype, params=None):
        self.args = segment_args(text)
        self.dtype = dtype
        self.fwd = txlrun.Segment(so)
        self.so = so
        self.params = params or init_params(self.args, rng, dtype)
        self.n_mems = sum(1 for n, s, _ in self.args if n is None and len(s) == 1)
        self.data = rng.randint(0, N_TOKEN, size=(QLEN, BSZ)).astype(np.int64)
        self.target = rng.randint(0, N_TOKEN, size=(QLEN, BSZ)).astype(np.int64)
        self.mems = [rng.randn(MLEN, BSZ, 8).astype(dtype) for _ in range(self.n_mems)]

    def inputs(self, seed, offset, training, column=0, columns=None):
        """The segment's arguments; `columns`: a slice of the batch's."""
        cut = (lambda a, d: np.ascontiguousarray(np.take(
            a, range(columns.start, columns.stop), axis=d))) if columns else (lambda a, d: a)
        values = [self.params[n] for n, _, _ in self.args if n is not None]
        return values + [cut(self.data, 1), cut(self.target, 1)] + [
            cut(m, 1) for m in self.mems] + [
            MEM_LEN, -1, 0, seed, offset, column, int(training)]

    def shapes(self, batch=BSZ):
        klen = min(MEM_LEN, MLEN + QLEN)
        return [(QLEN, batch)] + [(klen, batch, 8)] * self.n_mems

    def run(self, seed, offset, training, column=0, columns=None):
        shapes = self.shapes(len(columns) if columns else BSZ)
        return self.fwd(self.inputs(seed, offset, training, column, columns), shapes,
                        [self.dtype] * len(shapes))


def max_rel_diff(got, want):
    return max(float(np.max(np.abs(g - w) / np.maximum(1.0, np.abs(w))))
               for g, w in zip(got, want))


def check_model(report, work, rng):
    seed, offset, column = 20240611, 7, 3
    for pre_lnorm in (False, True):
        dropout, dropatt = 0.3, 0.2
        tag = "pre_lnorm" if pre_lnorm else "post_lnorm"
        # 4 heads: the fused dropatt's counters run over n_head innermost, so
        # its blocks of 4 words are whole (one Philox call per block); 2
        # heads: one call per element.
        text = emit_model(work, "m_" + tag, pre_lnorm, dropout, dropatt, f64=True,
                          n_head=4 if pre_lnorm else 2)
        for fuse in (True, False):
            pipeline = f"txl-cpu-pipeline=fuse-attention={'true' if fuse else 'false'}"
            if fuse:
                pipeline += " generate-backward=true"
            name = f"{tag}_{'fused' if fuse else 'decomposed'}"
            so = compile_text(text, work, name, pipeline)
            model = Model(text, so, np.random.RandomState(1), np.float64)
            for training in (1, 0):
                got = model.run(seed, offset, training, column)
                want = reference(model.params, model.data, model.target, model.mems,
                                 pre_lnorm, dropout, dropatt, seed, offset, column,
                                 training)
                err = max_rel_diff(got, want)
                report.check(f"{name} training={training} matches the numpy MemTransformerLM",
                             err < 1e-10, f"max rel diff {err:.1e}")
            # The batch run one column per call, each from its global
            # column, is the whole batch's run (threads, chunks and ranks
            # split it so); from column 0 each, it draws other masks.
            whole = model.run(seed, offset, 1)
            for firsts, same in (((0, 1), True), ((0, 0), False)):
                parts = [model.run(seed, offset, 1, first, range(b, b + 1))
                         for b, first in zip(range(BSZ), firsts)]
                err = max_rel_diff([np.concatenate(o, axis=1) for o in zip(*parts)], whole)
                what = ("from their global columns equal" if same
                        else "all from column 0 differ from")
                report.check(f"{name} columns run apart {what} the whole batch",
                             (err < 1e-12) == same, f"max rel diff {err:.1e}")
            if fuse:
                check_gradient(report, name, model, seed, offset, rng)

    # Eval mode is today's segment, bit for bit, at float32.
    outs = []
    for name, rates in (("eval_dropout", (0.3, 0.2)), ("eval_plain", (0.0, 0.0))):
        text = emit_model(work, name, False, *rates, f64=False)
        model = Model(text, compile_text(text, work, name), np.random.RandomState(2),
                      np.float32)
        outs.append(model.run(seed=99, offset=5, training=0))
        if name == "eval_dropout":
            same = all(np.array_equal(a, b) for a, b in zip(
                model.run(seed, offset, 1), model.run(seed, offset, 1)))
            report.check("model: same seed and offset give identical outputs", same)
            report.check("model: another offset gives another NLL",
                         not np.array_equal(model.run(seed, offset, 1)[0],
                                            model.run(seed, offset + 1, 1)[0]))
    report.check("training=0 is bit-identical to the model without dropout",
                 all(np.array_equal(a, b) for a, b in zip(*outs)))


def check_gradient(report, name, model, seed, offset, rng, h=1e-5):
    grad = txlrun.Segment(model.so, entry="txl_segment_grad")
    trained = [(n, s) for n, s, buf in model.args if n is not None and not buf]
    shapes = model.shapes() + [s for _, s in trained]
    outs = grad(model.inputs(seed, offset, 1) + [np.float32(1.0)], shapes,
                [np.float64] * len(shapes))
    grads = dict(zip([n for n, _ in trained], outs[len(model.shapes()):]))

    def loss():
        return model.run(seed, offset, 1)[0].mean()

    worst, bad = 0.0, None
    for n, _ in trained:
        flat = model.params[n].reshape(-1)
        for e in rng.choice(flat.size, size=min(flat.size, 4), replace=False):
            old = flat[e]
            flat[e] = old + h
            up = loss()
            flat[e] = old - h
            down = loss()
            flat[e] = old
            fd = (up - down) / (2 * h)
            g = grads[n].reshape(-1)[e]
            if abs(fd - g) > 1e-8 + 1e-5 * abs(fd):
                bad = bad or f"d/d{n}[{e}] analytic {g:.10g} vs FD {fd:.10g}"
            worst = max(worst, abs(fd - g) / (abs(fd) + 1e-12))
    report.check(f"{name} gradient with training=1 matches finite differences",
                 bad is None, bad or f"worst relative error {worst:.1e}")


def main():
    report = Report()
    rng = np.random.RandomState(0)
    with tempfile.TemporaryDirectory() as work:
        check_ops(report, work, rng)
        check_model(report, work, rng)
    sys.exit(1 if report.failed else 0)


if __name__ == "__main__":
    main()
