"""[train] objective = "alrfou" against a NumPy implementation of its
definition (docs/alrfou.md), written here and not taken from the compiler.

A 3-layer attn_type-3 model trains on ptb-char windows with SGD (momentum
0, so each update's momentum buffer in the checkpoint is that update's
gradient, exactly). `train --stop-after` stops after the updates that are
checked; for update u the test takes the parameters of the checkpoint of
update u - 1 (`init` for u = 1), draws the windows of update u with numpy's
RandomState(seed) as the definition states, and computes in float64:
  - the loss: Σ over contributing layers l of mean NLL of its next-character
    head + 0.5 · mean NLL of its two-ahead head, layer l < n contributing to
    updates 1 .. ⌊l · max_step / (2n)⌋;
  - its three parts (the last layer's next-character NLL, the intermediate
    layers', the two-ahead heads');
  - central differences of the loss for a sample of every tensor's elements.
The loss and parts must agree within 1e-5 (metrics.jsonl), each tensor's
sampled gradient within 1e-3 relative (the momentum buffer; a floor of 1e-6
per element for the near-zero ones), and the heads
of a dropped layer must get exactly zero gradient. Updates 1, 3 and 5 of a
12-update run have 3, 2 and 1 contributing layers; update 1 is also checked
with each auxiliary loss switched off.

  alrfou_objective.py TXLC PTB_DIR OUT_DIR [TXLC_OPTION...]

(TXLC_OPTION, e.g. --target=opencl: the executables' target.)
"""
import json
import os
import shutil
import subprocess
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(__file__))
import attention_types as at  # noqa: E402
from compare import load_safetensors  # noqa: E402
from sliding_window import encode_splits  # noqa: E402

N_LAYER, D_MODEL, N_HEAD, D_HEAD, D_INNER = 3, 16, 2, 8, 24
TGT_LEN, BSZ, MAX_STEP, SEED, LR = 6, 2, 12, 7, 0.05
# attention_types' layers read these module constants.
at.D_MODEL, at.N_HEAD, at.D_HEAD, at.BSZ = D_MODEL, N_HEAD, D_HEAD, BSZ


def model_file(n_token, ptb, switches):
    lines = "".join(f"{k} = {str(v).lower()}\n" for k, v in switches.items())
    return f"""[model]
n_token = {n_token}
n_layer = {N_LAYER}
d_model = {D_MODEL}
n_head = {N_HEAD}
d_head = {D_HEAD}
d_inner = {D_INNER}
attn_type = 3
dropout = 0.0
dropatt = 0.0
tie_weight = true

[segment]
tgt_len = {TGT_LEN}
mem_len = 0

[train]
objective = "alrfou"
{lines}optim = "sgd"
mom = 0.0
lr = {LR}
scheduler = "constant"
clip = 0.0
batch_size = {BSZ}
max_step = {MAX_STEP}
seed = {SEED}
log_interval = 1
eval_interval = 1000

[data]
dataset = "ptb-char"
path = "{ptb}"
"""


def windows(stream, update):
    """The windows of update `update`: one randint per column, per update."""
    rs = np.random.RandomState(SEED)
    for _ in range(update):
        starts = [rs.randint(0, len(stream) - TGT_LEN - 1) for _ in range(BSZ)]
    data = np.stack([stream[s:s + TGT_LEN] for s in starts], 1)
    target = np.stack([stream[s + 1:s + TGT_LEN + 2] for s in starts], 1)
    return data, target


def weights_of(update, switches):
    """Loss weights [2n] and position weights [L] of the definition."""
    wl = np.zeros(2 * N_LAYER)
    for l in range(1, N_LAYER + 1):
        last = l == N_LAYER
        if last or (switches["intermediate_layers"]
                    and update <= l * MAX_STEP // (2 * N_LAYER)):
            wl[l - 1] = 1.0
            if switches["multiple_targets"]:
                wl[N_LAYER + l - 1] = 0.5
    if switches["multiple_positions"]:
        wp = np.ones(TGT_LEN)
    else:
        wp = np.zeros(TGT_LEN)
        wp[-1] = TGT_LEN
    return wl, wp


def nll(logits, target):
    logits = logits - logits.max(-1, keepdims=True)
    logp = logits - np.log(np.exp(logits).sum(-1, keepdims=True))
    return -np.take_along_axis(logp, target[..., None], -1)[..., 0]


def objective(w, data, target, wl, wp):
    """(loss, [main, intermediate layers, multiple targets])."""
    emb = w["word_emb.emb_layers.0.weight"]
    h = emb[data] * np.sqrt(D_MODEL)
    empty = np.zeros((0, BSZ, D_MODEL))
    outs = []
    for l in range(N_LAYER):
        rows = w["r_emb"][l].reshape(TGT_LEN, D_MODEL)
        h = at.absolute_layer(w, l, h + rows[:, None], empty)
        outs.append(h)
    nexts, next2s = [], []
    for l, h in enumerate(outs):
        if l == N_LAYER - 1:
            nexts.append(nll(h @ emb.T + w["crit.out_layers.0.bias"],
                             target[:-1]))
        else:
            p = f"aux_heads.{l}.next."
            nexts.append(nll(h @ w[p + "weight"].T + w[p + "bias"],
                             target[:-1]))
        p = f"aux_heads.{l}.next2."
        next2s.append(nll(h @ w[p + "weight"].T + w[p + "bias"], target[1:]))

    def mean(terms, first):
        total = sum(wl[first + k] * t for k, t in enumerate(terms))
        return float((wp[:, None] * total).mean())

    parts = [mean(nexts[-1:], N_LAYER - 1), mean(nexts[:-1], 0),
             mean(next2s, N_LAYER)]
    return sum(parts), parts


def check_update(name, params, ckpt, metrics, stream, update, switches, rng):
    wl, wp = weights_of(update, switches)
    data, target = windows(stream, update)
    w = {k: v.astype(np.float64) for k, v in params.items()
         if not k.startswith("optim.")}
    loss, parts = objective(w, data, target, wl, wp)
    line = metrics[update]
    ours_parts = [line["loss_main"], line["loss_intermediate_layers"],
                  line["loss_multiple_targets"]]
    ok = abs(line["last_loss"] - loss) <= 1e-5 and all(
        abs(a - b) <= 1e-5 for a, b in zip(ours_parts, parts))
    layers = int(sum(wl[:N_LAYER]))
    ok &= line["contributing_layers"] == layers
    if layers < N_LAYER and switches["intermediate_layers"]:
        # Negative control: had no layer been dropped, the loss would differ.
        undropped, _ = weights_of(0, switches)
        ok &= abs(objective(w, data, target, undropped, wp)[0] - loss) > 1e-3

    worst, zeros_ok = 0.0, True
    for key in sorted(w):
        if "optim.momentum_buffer." + key not in ckpt:
            continue  # a tied alias
        g = ckpt["optim.momentum_buffer." + key].astype(np.float64)
        flat = w[key].reshape(-1)
        sample = set(rng.choice(flat.size, min(10, flat.size), replace=False))
        sample.add(int(np.abs(g).argmax()))
        sample = sorted(sample)
        fd = []
        for i in sample:
            keep = flat[i]
            eps = 1e-5 * max(1.0, abs(keep))
            flat[i] = keep + eps
            up = objective(w, data, target, wl, wp)[0]
            flat[i] = keep - eps
            down = objective(w, data, target, wl, wp)[0]
            flat[i] = keep
            fd.append((up - down) / (2 * eps))
        fd = np.array(fd)
        ours = g.reshape(-1)[sample]
        if not np.any(fd):
            # A dropped head: no gradient at all, in every element.
            zeros_ok &= not np.any(g)
            continue
        # Relative, with a floor of 1e-6 per element: below it a gradient
        # is f32 cancellation noise (layer 0's query gradient is ~1e-7 at
        # initialisation, computed within ~2e-10).
        err = np.linalg.norm(ours - fd) / (
            np.linalg.norm(fd) + 1e-6 * np.sqrt(len(sample)))
        worst = max(worst, err)
    ok &= worst <= 1e-3 and zeros_ok
    print(f"{name} update {update}: {layers} layers, loss {loss:.6f} "
          f"(ours {line['last_loss']:.6f}), parts within 1e-5, worst "
          f"gradient error {worst:.1e}, dropped heads zero: {zeros_ok}: "
          f"{'ok' if ok else 'FAILED'}")
    return ok


def run(exe, work, *args):
    subprocess.run([exe, "train", "--work-dir", work,
                    "--no-progress", "--threads", "1", *args], check=True,
                   stdout=subprocess.DEVNULL)


def run_case(txlc, ptb, out, name, switches, updates, stream, n_token,
             txlc_options):
    d = os.path.join(out, name)
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, "model.toml"), "w") as f:
        f.write(model_file(n_token, ptb, switches))
    exe = os.path.join(d, "model")
    subprocess.run([txlc, os.path.join(d, "model.toml"), "-o", exe,
                    *txlc_options], check=True)
    subprocess.run([exe, "init", "--seed", str(SEED), "-o",
                    os.path.join(d, "step0.safetensors")], check=True,
                   stdout=subprocess.DEVNULL)
    work = os.path.join(d, "work")
    shutil.rmtree(work, ignore_errors=True)
    for step in range(1, max(updates) + 1):
        run(exe, work, *(["--resume"] if step > 1 else []),
            "--stop-after", str(step))
        shutil.copy(os.path.join(work, "last.safetensors"),
                    os.path.join(d, f"step{step}.safetensors"))
    with open(os.path.join(work, "metrics.jsonl")) as f:
        metrics = {j["step"]: j for j in map(json.loads, f)
                   if j["kind"] == "train"}
    rng = np.random.default_rng(0)
    ok = True
    for u in updates:
        params = load_safetensors(os.path.join(d, f"step{u - 1}.safetensors"))
        ckpt = load_safetensors(os.path.join(d, f"step{u}.safetensors"))
        ok &= check_update(name, params, ckpt, metrics, stream, u, switches,
                           rng)
    return ok


def main():
    txlc, ptb, out = sys.argv[1:4]
    txlc_options = sys.argv[4:]
    n_token, splits = encode_splits(ptb)
    stream = splits["train"]
    on = {"multiple_positions": True, "intermediate_layers": True,
          "multiple_targets": True}
    cases = [("all", on, [1, 3, 5])]
    for key in on:
        cases.append((f"no_{key}", {**on, key: False}, [1]))
    results = [run_case(txlc, ptb, out, name, sw, updates, stream, n_token,
                        txlc_options)
               for name, sw, updates in cases]
    sys.exit(0 if all(results) else 1)


if __name__ == "__main__":
    main()
