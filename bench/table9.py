#!/usr/bin/env python3
"""The Transformer-XL paper's Table 9 on this CPU: evaluation speed of
Transformer-XL with memory against the vanilla model of Al-Rfou et al.
(2018) with its sliding window, at attention lengths 3,800 / 2,800 / 1,800
/ 800 (the paper: 1,874x / 1,409x / 773x / 363x faster on one GPU).

A benchmark, not a test; no torch needed. Both models are enwik8-base sized
(12 layers, d_model 512, 8 heads x 64, d_inner 2048, n_token 204), with
random weights (`<model> init`) and random tokens; both sides are txlc
executables run with run-segments, batch --batch columns, --threads:

- Transformer-XL (attn_type 0): segments of tgt_len 128 over a memory of
  the attention length A (mem_len = A, as the paper's enwik8 evaluation:
  tgt_len 128, mem_len 3,800). Timed per segment after the memory is full;
  tokens/s = 128 x batch / segment time.
- Vanilla (attn_type 3, Al-Rfou et al.'s learned absolute positions): every
  token is predicted from a window of the A tokens before it, run from
  scratch, only the last position used (what `eval --sliding-window` does
  per call). One call of run-segments on [A, batch] windows predicts
  `batch` tokens; timed per call over --vanilla-calls calls (a short slice
  of text: the sliding window's cost per token is the same everywhere
  after the first A tokens); tokens/s = batch / call time.

Per segment/call times come from the arrival of run-segments' `| segment s
|` lines (stdbuf -oL), as bench.py times enwik8.

  python3 bench/table9.py [--txlc build/bin/txlc] [--workdir DIR]
                          [--lengths 3800,2800,1800,800] [--threads 2]
                          [--batch 1] [--vanilla-calls 2] [--json FILE]
"""
import argparse
import json
import os
import subprocess
import sys
import time

import numpy as np

DIMS = """n_token = 204
n_layer = 12
d_model = 512
n_head = 8
d_head = 64
d_inner = 2048
dropout = 0.0
dropatt = 0.0
"""


def model_file(attn_type, tgt_len, mem_len):
    return (f"# Table 9 bench: enwik8-base sized, attn_type {attn_type}\n"
            f"[model]\n{DIMS}attn_type = {attn_type}\n\n"
            f"[segment]\ntgt_len = {tgt_len}\nmem_len = {mem_len}\n")


def build(a, name, text):
    d = os.path.join(a.workdir, name)
    os.makedirs(d, exist_ok=True)
    toml, exe = os.path.join(d, "model.toml"), os.path.join(d, "model")
    ckpt = os.path.join(d, "weights.safetensors")
    if not (os.path.exists(exe) and open(toml).read() == text):
        with open(toml, "w") as f:
            f.write(text)
        subprocess.run([a.txlc, toml, "-o", exe], check=True)
        subprocess.run([exe, "init", "--seed", "1", "-o", ckpt], check=True,
                       stdout=subprocess.DEVNULL)
    return d, exe, ckpt


def segment_times(exe, ckpt, d, segments, length, batch, mem_len, threads):
    """Seconds of each of `segments` run-segments segments [length, batch]
    of random tokens."""
    rng = np.random.default_rng(7)
    tokens = rng.integers(0, 204, (segments, length, batch), dtype=np.int64)
    np.save(os.path.join(d, "data.npy"), tokens)
    np.save(os.path.join(d, "target.npy"), np.roll(tokens, -1, 1))
    cmd = ["stdbuf", "-oL", exe, "run-segments", "--checkpoint", ckpt,
           "--inputs", os.path.join(d, "data.npy"), "--targets",
           os.path.join(d, "target.npy"), "--mem-len", str(mem_len),
           "--threads", str(threads)]
    start = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, text=True)
    stamps = []
    for line in proc.stdout:
        if line.startswith("| segment "):
            stamps.append(time.perf_counter())
    if proc.wait() != 0:
        sys.exit(f"failed: {' '.join(cmd)}")
    ends = [start] + stamps
    # The first interval includes loading; callers skip it.
    return [b - e for e, b in zip(ends, ends[1:])]


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--txlc", default="build/bin/txlc")
    ap.add_argument("--workdir", default="/work/bench-scratch/table9")
    ap.add_argument("--lengths", default="3800,2800,1800,800")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--batch", type=int, default=1)
    ap.add_argument("--vanilla-calls", type=int, default=2)
    ap.add_argument("--json")
    a = ap.parse_args()
    rows = []
    print(f"# Table 9 on this CPU: enwik8-base sized models, batch {a.batch}, "
          f"{a.threads} thread(s), random weights and tokens")
    print("| attn len | Transformer-XL tok/s | vanilla tok/s | ratio | paper |")
    print("|---|---|---|---|---|")
    paper = {3800: 1874, 2800: 1409, 1800: 773, 800: 363}
    for A in map(int, a.lengths.split(",")):
        d, exe, ckpt = build(a, f"txl_{A}", model_file(0, 128, A))
        fill = -(-A // 128)  # segments until the memory is full
        t = segment_times(exe, ckpt, d, fill + 3, 128, a.batch, A, a.threads)
        txl = 128 * a.batch / np.median(t[fill:])
        d, exe, ckpt = build(a, f"vanilla_{A}", model_file(3, A, 0))
        t = segment_times(exe, ckpt, d, 1 + a.vanilla_calls, A, a.batch, 0,
                          a.threads)
        vanilla = a.batch / np.median(t[1:])
        rows.append({"attn_len": A, "txl_tok_s": txl, "vanilla_tok_s": vanilla,
                     "ratio": txl / vanilla, "paper_ratio": paper.get(A)})
        print(f"| {A:,} | {txl:,.1f} | {vanilla:.3f} | {txl / vanilla:,.0f}x "
              f"| {paper.get(A, '-'):,}x |", flush=True)
    if a.json:
        with open(a.json, "w") as f:
            json.dump(rows, f, indent=1)


if __name__ == "__main__":
    main()
