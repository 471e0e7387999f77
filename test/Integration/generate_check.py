"""`generate` and `score` against run-segments (see generate.test).

  generate_check.py MODEL_EXE CHECKPOINT PTB_DIR OUT_DIR MODE TGT_LEN

MODE "memory" (the model's evaluation memory is longer than every sequence
here) or "window" (a model without memory: each step runs the last tgt_len
tokens). For each greedy step k the sequence so far (the prompt and the
k tokens before) is run again from scratch by run-segments, and the NLLs of
every candidate next token there are the whole distribution: the greedy
token must be its argmax (the lowest id among equals) and its
log-probability -NLL within 1e-5. All steps in one run-segments call, one
batch column per candidate token v (its targets all v): memory: the whole
final sequence as one segment, step k's distribution at the position of
its last token (attention is causal: a position sees what it would as the
last of a shorter sequence); window: one batch column per step and
candidate, each the last tgt_len tokens of its step's sequence. `score` is checked
against run-segments over the same text with the evaluation settings:
log-probabilities = -NLL within 1e-5, rank 1 exactly where the token is the
first alternative; every position's distribution (all N_TOKEN
alternatives) sums to 1 within 1e-5. Sampling: the same seed gives the same
text, top-k 1 the greedy text.
"""
import json
import os
import subprocess
import sys

import numpy as np

N_TOKEN = 50
STEPS = 10


def run(exe, *args):
    return subprocess.run([exe, *args], check=True, capture_output=True,
                          text=True).stdout


def distributions(exe, ckpt, out, windows):
    """-log p(v | window) for every window (equal lengths) and every v, from
    one run-segments call: [len(windows), N_TOKEN]."""
    data = np.repeat(np.array(windows, np.int64).T[None, :, :, None],
                     N_TOKEN, 3)
    target = data.copy()
    target[0, -1, :, :] = np.arange(N_TOKEN)
    return run_nll(exe, ckpt, out, data, target)[0, -1, :]


def prefix_distributions(exe, ckpt, out, seq):
    """-log p(v | seq[:p + 1]) for every position p and every v, from one
    run-segments call over seq as one segment: [len(seq), N_TOKEN]."""
    data = np.repeat(np.array(seq, np.int64)[None, :, None, None], N_TOKEN, 3)
    target = np.broadcast_to(np.arange(N_TOKEN), data.shape).copy()
    return run_nll(exe, ckpt, out, data, target)[0, :, 0, :]


def run_nll(exe, ckpt, out, data, target):
    """run-segments (no memory) on [n_seg, tgt_len, windows, N_TOKEN]
    inputs and targets, batched as windows * N_TOKEN columns; the NLLs in
    that shape."""
    shape = data.shape
    np.save(os.path.join(out, "d.npy"), data.reshape(*shape[:2], -1))
    np.save(os.path.join(out, "t.npy"), target.reshape(*shape[:2], -1))
    run(exe, "run-segments", "--checkpoint", ckpt, "--inputs",
        os.path.join(out, "d.npy"), "--targets", os.path.join(out, "t.npy"),
        "--mem-len", "0", "--dump-nll", os.path.join(out, "n.npy"))
    return np.load(os.path.join(out, "n.npy")).reshape(shape)


def main():
    exe, ckpt, ptb, out, mode = sys.argv[1:6]
    tgt_len = int(sys.argv[6])
    common = ["--data", ptb, "--dataset", "ptb-char", "--checkpoint", ckpt]
    prompt = "the company said it"
    greedy = json.loads(run(exe, "generate", *common, "--prompt", prompt,
                            "--max-new-tokens", str(STEPS), "--temperature",
                            "0", "--json"))
    seq = list(greedy["prompt"])
    n_prompt = len(seq)
    seq += greedy["tokens"]
    # Step k's sequence is seq[:n_prompt + k]; its distribution is row k.
    if mode == "memory":
        nll = prefix_distributions(exe, ckpt, out, seq[:-1])[n_prompt - 1:]
    else:
        nll = distributions(exe, ckpt, out,
                            [seq[n_prompt + k - tgt_len:n_prompt + k]
                             for k in range(len(greedy["tokens"]))])
    argmax_ok, lp_err = len(nll) == STEPS, 0.0
    for k, token in enumerate(greedy["tokens"]):
        argmax_ok &= int(np.argmin(nll[k])) == token
        lp_err = max(lp_err, abs(-nll[k][token] - greedy["log_probs"][k]))
    print(f"{mode}: prompt {greedy['prompt_tokens']} tokens, greedy = argmax "
          f"of the recomputed distribution for {STEPS} steps: {argmax_ok}, "
          f"log-prob max |diff| {lp_err:.1e}: "
          f"{'ok' if argmax_ok and lp_err <= 1e-5 else 'FAILED'}")

    # score: the generated text, scored with the evaluation settings.
    text_path = os.path.join(out, "text.txt")
    with open(text_path, "w") as f:
        f.write(prompt + greedy["text"])
    lines = [json.loads(l) for l in run(exe, "score", *common, "--text-file",
                                        text_path, "--top-k", "3").splitlines()]
    ids = seq[:len(lines) + 1]
    usable = (len(ids) - 1) // tgt_len * tgt_len
    data = np.array(ids[:usable], np.int64).reshape(-1, tgt_len, 1)
    target = np.array(ids[1:usable + 1], np.int64).reshape(-1, tgt_len, 1)
    np.save(os.path.join(out, "d.npy"), data)
    np.save(os.path.join(out, "t.npy"), target)
    mem = "64" if mode == "memory" else "0"
    run(exe, "run-segments", "--checkpoint", ckpt, "--inputs",
        os.path.join(out, "d.npy"), "--targets", os.path.join(out, "t.npy"),
        "--mem-len", mem, "--dump-nll", os.path.join(out, "n.npy"))
    nll = np.load(os.path.join(out, "n.npy")).reshape(-1)
    score_err = max(abs(-nll[i] - lines[i]["log_prob"]) for i in range(usable))
    ids_ok = [l["id"] for l in lines] == ids[1:]
    rank_ok = all((l["rank"] == 1) == (l["top"][0][0] == l["token"])
                  for l in lines)
    print(f"{mode}: score of {len(lines)} tokens: ids {ids_ok}, log-prob = "
          f"-NLL max |diff| {score_err:.1e}, rank 1 = top alternative "
          f"{rank_ok}: {'ok' if ids_ok and rank_ok and score_err <= 1e-5 else 'FAILED'}")

    # The whole distribution (--top-k n_token lists every token) sums to 1.
    every = [json.loads(l) for l in run(exe, "score", *common, "--text-file",
                                        text_path, "--top-k",
                                        str(N_TOKEN)).splitlines()]
    sum_err = max(abs(sum(np.exp(lp) for _, lp in l["top"]) - 1.0)
                  for l in every)
    complete = all(len(l["top"]) == N_TOKEN for l in every)
    print(f"{mode}: distribution of every position sums to 1: max |sum - 1| "
          f"{sum_err:.1e}, {N_TOKEN} tokens listed {complete}: "
          f"{'ok' if complete and sum_err <= 1e-5 else 'FAILED'}")

    def sample(*extra):
        return json.loads(run(exe, "generate", *common, "--prompt", prompt,
                              "--max-new-tokens", "20", "--json",
                              *extra))["tokens"]
    a, b = sample("--seed", "5"), sample("--seed", "5")
    c = sample("--seed", "6")
    top1 = sample("--seed", "7", "--top-k", "1")
    greedy20 = sample("--temperature", "0")
    print(f"{mode}: same seed same text {a == b}, another seed differs "
          f"{a != c}, top-k 1 is greedy {top1 == greedy20}")


if __name__ == "__main__":
    main()
