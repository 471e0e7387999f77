#!/usr/bin/env python3
"""Training speed: `<model> train` against PyTorch eager (not a test).

A train step is what the official train.py does per batch: forward of one
segment with the memory carried, the mean NLL, backward, clip_grad_norm_
(0.25) and Adam. Dropout is on (train mode) with the model file's rate.

  ptb     models/ptb_small.toml on PTB train: batch 16, tgt_len = mem_len = 64.
  enwik8  the enwik8-base sizes (bench.py's ENWIK8_TOML: 12 layers, d_model
          512, 8 x 64 heads, d_inner 2048, n_token 204) at batch 4,
          tgt_len = mem_len = 512, on a synthetic 203-word corpus (the speed
          does not depend on the text).

txlc: the model compiled with `txlc --mcpu=<--mcpu, default native>`, run as
`EXE train --max-step N --log-interval K --eval-interval 10^9
--checkpoint-interval 10^9` from a fresh work directory (no checkpoint is
written inside the timed intervals: PyTorch's side writes none, and by
default `last.safetensors` with the Adam states is written every log
interval, 15 MB for ptb_small and 470 MB for enwik8-base, with an fsync); ms/batch of the log intervals after the first (the
first holds the start-up), i.e. means over K steps (K = 10 for ptb, 2 for
enwik8). PyTorch: reference_txl.py in train mode with the official
initialisation, timed per step after `--warmup` steps. Same --threads for
both (OpenBLAS threads / torch.set_num_threads). txlc and PyTorch runs
alternate, each after waiting for a quiet machine.

Reported: txlc's best K-step mean against (a) PyTorch's best single step
(the headline, which favours PyTorch: one fast step is not a sustained
rate) and (b) PyTorch's best mean over K consecutive steps (like for like),
and the medians over all K-step means of both.

    bench/bench_train.py ptb    [--threads 2] [--steps 40] [--repeat 2]
    bench/bench_train.py enwik8 [--threads 2] [--steps 4]
"""

import argparse
import json
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
SHARED = os.path.normpath(os.path.join(ROOT, "..", "shared"))
sys.path.insert(0, HERE)

import bench  # noqa: E402  (process helpers, ENWIK8_TOML)

TRAIN_SECTION = """
[train]
batch_size = {batch}
optim = "adam"
lr = 0.00025
scheduler = "cosine"
warmup_step = 0
max_step = 100000
clip = 0.25
seed = 1111

[data]
dataset = "ptb"
"""


def synthetic_corpus(directory, tokens, n_words=203, seed=0):
    """train/valid/test.txt of random words w0..w{n_words-1}, 50 per line:
    with <eos> a 204-symbol vocabulary like enwik8's."""
    os.makedirs(directory, exist_ok=True)
    rng = random.Random(seed)
    words = [f"w{i}" for i in range(n_words)]
    for name, count in [("train", tokens), ("valid", 20000), ("test", 20000)]:
        lines = []
        # Every word once first, so that every split's vocabulary is full.
        stream = words + [rng.choice(words) for _ in range(count)]
        for i in range(0, len(stream), 50):
            lines.append(" ".join(stream[i:i + 50]))
        with open(os.path.join(directory, f"{name}.txt"), "w") as f:
            f.write("\n".join(lines) + "\n")


def txlc_run(exe, data, steps, interval, threads, work):
    cmd = [exe, "train", "--data", data, "--work-dir", work,
           "--max-step", str(steps), "--log-interval", str(interval),
           "--eval-interval", str(10 ** 9), "--threads", str(threads),
           "--checkpoint-interval", str(10 ** 9),
           "--no-progress", "--max-eval-steps", "1"]
    others = bench.quiet_point()
    run = bench.run_child(cmd)
    records = [json.loads(line)
               for line in open(os.path.join(work, "metrics.jsonl"))]
    ms = [r["ms_per_batch"] for r in records if r["kind"] == "train"][1:]
    return dict(ms=min(ms), ms_all=ms, others=max(others, run["others"]))


def official_model(toml):
    """reference_txl.py's model of `toml` with the official weights_init
    (init "normal", seed 1111)."""
    import torch
    import reference_txl as ref

    torch.manual_seed(1111)
    _, kwargs = ref.read_model_file(toml)
    model = ref.MemTransformerLM(**kwargs)
    with torch.no_grad():
        for name, p in model.named_parameters():
            if "layer_norm.weight" in name:
                p.normal_(1.0, 0.02)
            elif name.endswith(".bias") and "r_" not in name:
                p.zero_()
            elif "projs" in name:
                p.normal_(0.0, 0.01)
            else:
                p.normal_(0.0, 0.02)
    return model


def torch_run(toml, stream_data, batch, tgt_len, steps, warmup, threads,
              compile=False):
    """Per-step ms of PyTorch train steps (in this process), eager or with
    the model under torch.compile (the optimizer and clipping stay eager)."""
    import torch

    torch.set_num_threads(threads)
    model = official_model(toml)
    model.train()
    opt = torch.optim.Adam(model.parameters(), lr=0.00025)
    step_model = torch.compile(model) if compile else model
    n = stream_data.numel() // batch
    grid = stream_data[:n * batch].view(batch, -1).t().contiguous()
    others = bench.quiet_point()
    busy0 = bench.cpu_busy_seconds()
    mems, times = tuple(), []
    for i in range(warmup + steps):
        s = (i * tgt_len) % (n - tgt_len - 1)
        data, target = grid[s:s + tgt_len], grid[s + 1:s + 1 + tgt_len]
        t0 = time.perf_counter()
        ret = step_model(data, target, *mems)
        loss, mems = ret[0].float().mean(), tuple(ret[1:])
        opt.zero_grad()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 0.25)
        opt.step()
        if i >= warmup:
            times.append((time.perf_counter() - t0) * 1000)
    return dict(ms=min(times), ms_all=times, others=others)


def ptb_train_stream(data):
    """PTB train (data/train.txt) as one token tensor, `<eos>` after each
    line, ids by sorted word (they differ from the official corpus's, which
    does not change the speed)."""
    import torch
    words = []
    for line in open(os.path.join(data, "train.txt")):
        words += line.split() + ["<eos>"]
    vocab = {w: i for i, w in enumerate(sorted(set(words)))}
    return torch.tensor([vocab[w] for w in words], dtype=torch.long)


def window_means(times, k):
    """Means of consecutive, non-overlapping windows of k steps (as txlc's
    log intervals)."""
    return [sum(times[i:i + k]) / k for i in range(0, len(times) - k + 1, k)]


def main():
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("which", choices=["ptb", "enwik8"])
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--steps", type=int, default=None)
    p.add_argument("--repeat", type=int, default=2)
    p.add_argument("--txlc", default=os.path.join(ROOT, "build", "bin", "txlc"))
    p.add_argument("--mcpu", default="native",
                   help="txlc --mcpu (PyTorch picks its AVX-512 kernels at run "
                        "time)")
    p.add_argument("--workdir", default=os.path.join(ROOT, "..", "bench-scratch", "train"))
    p.add_argument("--quiet-wait", type=float, default=300)
    args = p.parse_args()
    bench.QUIET["timeout"] = args.quiet_wait
    import torch
    os.makedirs(args.workdir, exist_ok=True)
    if args.which == "ptb":
        toml = os.path.join(ROOT, "models", "ptb_small.toml")
        data = os.path.join(SHARED, "data", "ptb")
        batch, tgt_len, steps, interval = 16, 64, args.steps or 40, 10
    else:
        toml = os.path.join(args.workdir, "enwik8_base.toml")
        with open(toml, "w") as f:
            f.write(bench.ENWIK8_TOML.replace("dropout = 0.0", "dropout = 0.1")
                    + TRAIN_SECTION.format(batch=4))
        data = os.path.join(args.workdir, "synthetic")
        batch, tgt_len, steps, interval = 4, 512, args.steps or 4, 2
        synthetic_corpus(data, batch * tgt_len * (2 * steps + 8))
    exe = os.path.join(args.workdir, args.which + "_train")
    subprocess.run([args.txlc, toml, "--mcpu=" + args.mcpu, "-o", exe],
                   check=True)
    # The same token stream for PyTorch: PTB train as the official corpus
    # reads it (ids differ, which does not change the speed).
    stream = ptb_train_stream(data)
    rows = []
    for r in range(args.repeat):
        work = tempfile.mkdtemp(dir=args.workdir)
        try:
            t = txlc_run(exe, data, steps + interval, interval, args.threads,
                         work)
        finally:
            # Its checkpoints: 470 MB each for enwik8-base.
            shutil.rmtree(work, ignore_errors=True)
        q = torch_run(toml, stream, batch, tgt_len, steps, 2, args.threads)
        q["windows"] = window_means(q["ms_all"], interval)
        rows.append((t, q))
        print(f"run {r}: txlc {t['ms']:.1f} ms/step (others {t['others']:.2f} "
              f"CPUs), PyTorch {q['ms']:.1f} ms/step, best {interval}-step "
              f"mean {min(q['windows']):.1f} (others {q['others']:.2f})",
              flush=True)
    best_t = min(t["ms"] for t, _ in rows)
    best_q = min(q["ms"] for _, q in rows)
    best_qw = min(min(q["windows"]) for _, q in rows)
    med_t = statistics.median(m for t, _ in rows for m in t["ms_all"])
    med_q = statistics.median(m for _, q in rows for m in q["windows"])
    tokens = batch * tgt_len
    print(f"{args.which}: batch {batch}, {tgt_len}/{tgt_len}, {args.threads} "
          f"threads: txlc {best_t:.1f} ms/step = {tokens / best_t * 1000:.0f} "
          f"tok/s; PyTorch eager {best_q:.1f} ms/step = "
          f"{tokens / best_q * 1000:.0f} tok/s; txlc/PyTorch "
          f"{best_q / best_t:.2f}x")
    print(f"  like for like ({interval}-step means): PyTorch best "
          f"{best_qw:.1f} ms/step -> {best_qw / best_t:.2f}x; medians txlc "
          f"{med_t:.1f}, PyTorch {med_q:.1f} ms/step -> {med_q / med_t:.2f}x")


if __name__ == "__main__":
    main()
