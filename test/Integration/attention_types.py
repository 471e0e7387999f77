"""attn_type 1, 2 and 3 with memory: txlc's executables against a NumPy
forward written from the official MemTransformerLM and the memory semantics
docs/attention-types.md states.

The official reference cases of attn_type 2 and 3 have no memory (the
official code adds positions to the memory in place, so its memory cannot
serve as a reference), and attn_type 1's has no clamp_len and never a klen
past the r_emb table. This test covers what they do not:
  - attn_type 1 (Shaw et al.) with clamp_len < max_klen, and with a run-time
    mem_len that makes klen longer than the table (the official code then
    repeats the table's first row in front);
  - attn_type 2 (Vaswani et al.) with memory: layer 0's memory gets the
    sinusoids of positions klen-1 ... qlen on use, the memory kept is the
    layers' inputs as computed (no in-place accumulation);
  - attn_type 3 (Al-Rfou et al.) with memory: layer l's memory gets rows
    max(0, max_klen - klen + p) of r_emb[l] on use, its queries the rows
    after, and the memory kept for layer l < n_layer is its input with its
    rows added (what the official in-place `core_out +=` leaves in hids).
For each: per-token NLL within 1e-5 and every memory tensor within 1e-5
abs + rel, over three segments from an empty memory.

  attention_types.py TXLC OUT_DIR
"""
import os
import subprocess
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(__file__))
from compare import load_safetensors  # noqa: E402
from make_untied_r import save_safetensors  # noqa: E402

N_TOKEN, N_LAYER, D_MODEL, N_HEAD, D_HEAD, D_INNER = 40, 2, 16, 2, 8, 24
TGT_LEN, BSZ, SEGMENTS = 5, 2, 3


def model_file(attn_type, mem_len, clamp_len):
    return f"""[model]
n_token = {N_TOKEN}
n_layer = {N_LAYER}
d_model = {D_MODEL}
n_head = {N_HEAD}
d_head = {D_HEAD}
d_inner = {D_INNER}
attn_type = {attn_type}
clamp_len = {clamp_len}

[segment]
tgt_len = {TGT_LEN}
mem_len = {mem_len}
"""


def weights(attn_type, max_klen, rng):
    hd = N_HEAD * D_HEAD
    n = lambda *s: (0.3 * rng.standard_normal(s)).astype(np.float32)  # noqa
    w = {"word_emb.emb_layers.0.weight": n(N_TOKEN, D_MODEL),
         "crit.out_layers.0.bias": n(N_TOKEN)}
    if attn_type == 1:
        w.update({"r_emb": n(N_LAYER, max_klen, N_HEAD, D_HEAD),
                  "r_w_bias": n(N_LAYER, N_HEAD, D_HEAD),
                  "r_bias": n(N_LAYER, max_klen, N_HEAD)})
    elif attn_type == 2:
        w["pos_emb.inv_freq"] = (
            1 / 10000 ** (np.arange(0.0, D_MODEL, 2.0) / D_MODEL)
        ).astype(np.float32)
    else:
        w["r_emb"] = n(N_LAYER, max_klen, N_HEAD, D_HEAD)
    for l in range(N_LAYER):
        p = f"layers.{l}."
        if attn_type == 1:
            w[p + "dec_attn.qkv_net.weight"] = n(3 * hd, D_MODEL)
        else:
            w[p + "dec_attn.q_net.weight"] = n(hd, D_MODEL)
            w[p + "dec_attn.kv_net.weight"] = n(2 * hd, D_MODEL)
        w[p + "dec_attn.o_net.weight"] = n(D_MODEL, hd)
        for ln in ("dec_attn", "pos_ff"):
            w[p + ln + ".layer_norm.weight"] = 1 + n(D_MODEL)
            w[p + ln + ".layer_norm.bias"] = n(D_MODEL)
        w[p + "pos_ff.CoreNet.0.weight"] = n(D_INNER, D_MODEL)
        w[p + "pos_ff.CoreNet.0.bias"] = n(D_INNER)
        w[p + "pos_ff.CoreNet.3.weight"] = n(D_MODEL, D_INNER)
        w[p + "pos_ff.CoreNet.3.bias"] = n(D_MODEL)
    return w


def layer_norm(x, w, b):
    mu = x.mean(-1, keepdims=True)
    var = ((x - mu) ** 2).mean(-1, keepdims=True)
    return (x - mu) / np.sqrt(var + 1e-5) * w + b


def softmax_masked(score, mlen):
    qlen, klen = score.shape[:2]
    mask = np.arange(klen)[None, :] > np.arange(qlen)[:, None] + mlen
    score = np.where(mask[:, :, None, None], -np.inf, score)
    score = score - score.max(1, keepdims=True)
    e = np.exp(score)
    return e / e.sum(1, keepdims=True)


def rel_shift(x):
    # The official _rel_shift: a zero column in front, a reshape, a slice.
    q, k = x.shape[:2]
    padded = np.concatenate([np.zeros((q, 1) + x.shape[2:], x.dtype), x], 1)
    return padded.reshape((k + 1, q) + x.shape[2:])[1:].reshape(x.shape)


def heads(x):
    return x.reshape(x.shape[0], x.shape[1], N_HEAD, D_HEAD)


def finish(w, p, h, prob, v):
    vec = np.einsum("ijbn,jbnd->ibnd", prob, v).reshape(h.shape[0], BSZ, -1)
    h = layer_norm(h + vec @ w[p + "dec_attn.o_net.weight"].T,
                   w[p + "dec_attn.layer_norm.weight"],
                   w[p + "dec_attn.layer_norm.bias"])
    inner = np.maximum(h @ w[p + "pos_ff.CoreNet.0.weight"].T
                       + w[p + "pos_ff.CoreNet.0.bias"], 0)
    core = inner @ w[p + "pos_ff.CoreNet.3.weight"].T + w[p + "pos_ff.CoreNet.3.bias"]
    return layer_norm(h + core, w[p + "pos_ff.layer_norm.weight"],
                      w[p + "pos_ff.layer_norm.bias"])


def absolute_layer(w, l, h, mem):
    p = f"layers.{l}."
    c = np.concatenate([mem, h], 0)
    q = heads(h @ w[p + "dec_attn.q_net.weight"].T)
    k, v = np.split(c @ w[p + "dec_attn.kv_net.weight"].T, 2, -1)
    score = np.einsum("ibnd,jbnd->ijbn", q, heads(k)) / np.sqrt(D_HEAD)
    return finish(w, p, h, softmax_masked(score, mem.shape[0]), heads(v))


def learnable_layer(w, l, h, mem, clamp_len):
    p = f"layers.{l}."
    c = np.concatenate([mem, h], 0)
    qlen, klen = h.shape[0], c.shape[0]
    qkv = c @ w[p + "dec_attn.qkv_net.weight"].T
    q, k, v = [heads(t) for t in np.split(qkv, 3, -1)]
    q = q[-qlen:]
    r_emb, r_bias = w["r_emb"][l], w["r_bias"][l]
    if clamp_len > 0:
        r_emb, r_bias = r_emb[-clamp_len:], r_bias[-clamp_len:]
    if klen > r_emb.shape[0]:
        pad = klen - r_emb.shape[0]
        r_emb = np.concatenate([np.repeat(r_emb[:1], pad, 0), r_emb], 0)
        r_bias = np.concatenate([np.repeat(r_bias[:1], pad, 0), r_bias], 0)
    else:
        r_emb, r_bias = r_emb[-klen:], r_bias[-klen:]
    ac = np.einsum("ibnd,jbnd->ijbn", q + w["r_w_bias"][l], k)
    b_ = np.einsum("ibnd,jnd->ijbn", q, r_emb)
    bd = rel_shift(b_ + r_bias[None, :, None])
    score = (ac + bd) / np.sqrt(D_HEAD)
    return finish(w, p, h, softmax_masked(score, klen - qlen), v)


def sinusoid(w, klen, clamp_len):
    pos = np.arange(klen - 1, -1, -1.0)
    if clamp_len > 0:
        pos = np.minimum(pos, clamp_len)
    x = pos[:, None] * w["pos_emb.inv_freq"][None, :]
    return np.concatenate([np.sin(x), np.cos(x)], -1)


def forward(w, attn_type, data, target, mem_len, clamp_len, max_klen):
    mems = [np.zeros((0, BSZ, D_MODEL))] * (N_LAYER + 1)
    nlls, kept = [], []
    for s in range(data.shape[0]):
        qlen, mlen = data.shape[1], mems[0].shape[0]
        klen = mlen + qlen
        h = w["word_emb.emb_layers.0.weight"][data[s]] * np.sqrt(D_MODEL)
        if attn_type == 2:
            pos = sinusoid(w, klen, clamp_len)
            h = h + pos[mlen:, None]
        hids = [h]
        for l in range(N_LAYER):
            mem = mems[l]
            if attn_type == 1:
                h = learnable_layer(w, l, h, mem, clamp_len)
            else:
                if attn_type == 2 and l == 0:
                    mem = mem + pos[:mlen, None]
                if attn_type == 3:
                    rows = w["r_emb"][l].reshape(max_klen, D_MODEL)
                    idx = np.maximum(0, max_klen - klen + np.arange(klen))
                    mem = mem + rows[idx[:mlen]][:, None]
                    h = h + rows[idx[mlen:]][:, None]
                    hids[l] = h
                h = absolute_layer(w, l, h, mem)
            hids.append(h)
        logits = h @ w["word_emb.emb_layers.0.weight"].T + w["crit.out_layers.0.bias"]
        logits = logits - logits.max(-1, keepdims=True)
        logp = logits - np.log(np.exp(logits).sum(-1, keepdims=True))
        nlls.append(-np.take_along_axis(logp, target[s][..., None], -1)[..., 0])
        mems = [np.concatenate([m, x], 0)[-mem_len:] for m, x in zip(mems, hids)]
        kept.append(mems)
    return np.stack(nlls), kept


def run_case(txlc, out, name, attn_type, model_mem_len, run_mem_len, clamp_len):
    rng = np.random.default_rng(attn_type)
    max_klen = TGT_LEN + model_mem_len
    d = os.path.join(out, name)
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, "model.toml"), "w") as f:
        f.write(model_file(attn_type, model_mem_len, clamp_len))
    w = weights(attn_type, max_klen, rng)
    save_safetensors(os.path.join(d, "weights.safetensors"), w)
    data = rng.integers(0, N_TOKEN, (SEGMENTS, TGT_LEN, BSZ))
    target = rng.integers(0, N_TOKEN, (SEGMENTS, TGT_LEN, BSZ))
    np.save(os.path.join(d, "data.npy"), data)
    np.save(os.path.join(d, "target.npy"), target)
    exe = os.path.join(d, "model")
    subprocess.run([txlc, os.path.join(d, "model.toml"), "-o", exe], check=True)
    subprocess.run([exe, "run-segments", "--checkpoint",
                    os.path.join(d, "weights.safetensors"), "--inputs",
                    os.path.join(d, "data.npy"), "--targets",
                    os.path.join(d, "target.npy"), "--mem-len",
                    str(run_mem_len), "--dump-nll", os.path.join(d, "nll.npy"),
                    "--dump-mems", os.path.join(d, "mems.safetensors")],
                   check=True, stdout=subprocess.DEVNULL)
    w64 = {k: v.astype(np.float64) for k, v in w.items()}
    nll, kept = forward(w64, attn_type, data, target, run_mem_len, clamp_len,
                        max_klen)
    ours = np.load(os.path.join(d, "nll.npy"))
    nll_err = np.abs(ours - nll).max()
    mems = load_safetensors(os.path.join(d, "mems.safetensors"))
    mem_err = max(
        (np.abs(mems[f"seg{s}.layer{l}"] - kept[s][l])
         / (1e-5 + 1e-5 * np.abs(kept[s][l]))).max()
        for s in range(SEGMENTS) for l in range(N_LAYER + 1))
    ok = nll_err <= 1e-5 and mem_err <= 1
    print(f"{name}: nll max |diff| {nll_err:.2e}, memory within tolerance: "
          f"{mem_err <= 1}: {'ok' if ok else 'FAILED'}")
    return ok


def main():
    txlc, out = sys.argv[1], sys.argv[2]
    cases = [
        # name, attn_type, model mem_len (sizes max_klen), run mem_len, clamp
        ("shaw_clamp", 1, 5, 5, 3),
        ("shaw_past_table", 1, 3, 7, -1),
        ("vaswani_memory", 2, 5, 5, -1),
        ("vaswani_memory_clamp", 2, 7, 7, 4),
        ("alrfou_memory", 3, 5, 5, -1),
        ("alrfou_past_table", 3, 2, 6, -1),
    ]
    results = [run_case(txlc, out, *case) for case in cases]
    sys.exit(0 if all(results) else 1)


if __name__ == "__main__":
    main()
