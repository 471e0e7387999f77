#!/usr/bin/env python3
"""Al-Rfou et al. (2018)'s auxiliary losses on ptb-char: a small T-style
model (attn_type 3, no memory) trained with [train] objective = "alrfou",
with every auxiliary loss and with each switched off, then evaluated the
paper's way (`eval --sliding-window`, every character from the tgt_len
characters before it) on the first --eval-tokens characters of the test
split. A benchmark, not a test (tests/Integration/train-alrfou.test checks
the objective); its numbers go to the issue notes and bench/README.md.

  python3 bench/alrfou_ablation.py [--txlc build/bin/txlc] [--workdir DIR]
      [--ptb ../shared/data/ptb] [--steps 1500] [--eval-tokens 20000]
      [--json FILE]
"""
import argparse
import json
import os
import re
import subprocess
import time

MODEL = """[model]
n_token = 50
n_layer = {n_layer}
d_model = 128
n_head = 2
d_head = 64
d_inner = 512
attn_type = 3
dropout = 0.1
dropatt = 0.1

[segment]
tgt_len = {tgt_len}
mem_len = 0

[train]
objective = "alrfou"
{switches}batch_size = 16
optim = "adam"
lr = 0.001
scheduler = "constant"
clip = 0.25
max_step = {steps}
log_interval = 100
eval_interval = {steps}
max_eval_steps = 50
seed = 1111

[data]
dataset = "ptb-char"
path = "{ptb}"
"""

VARIANTS = [("all losses", ""),
            ("no multiple positions", "multiple_positions = false\n"),
            ("no intermediate layers", "intermediate_layers = false\n"),
            ("no multiple targets", "multiple_targets = false\n")]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--txlc", default="build/bin/txlc")
    ap.add_argument("--workdir", default="/tmp/alrfou_ablation")
    ap.add_argument("--ptb", default=os.path.join("..", "shared", "data", "ptb"))
    ap.add_argument("--steps", type=int, default=1500)
    ap.add_argument("--n-layer", type=int, default=4)
    ap.add_argument("--tgt-len", type=int, default=128)
    ap.add_argument("--eval-tokens", type=int, default=20000)
    ap.add_argument("--json")
    args = ap.parse_args()
    os.makedirs(args.workdir, exist_ok=True)
    rows = []
    for name, switches in VARIANTS:
        tag = name.replace(" ", "_")
        toml = os.path.join(args.workdir, tag + ".toml")
        with open(toml, "w") as f:
            f.write(MODEL.format(n_layer=args.n_layer, tgt_len=args.tgt_len,
                                 switches=switches, steps=args.steps,
                                 ptb=os.path.abspath(args.ptb)))
        exe = os.path.join(args.workdir, tag)
        subprocess.run([args.txlc, toml, "-o", exe], check=True)
        work = os.path.join(args.workdir, tag + "_run")
        start = time.time()
        # A rerun of the ablation replaces its runs (--overwrite).
        subprocess.run([exe, "train", "--work-dir", work,
                        "--no-progress", "--overwrite"], check=True,
                       stdout=subprocess.DEVNULL)
        train_s = time.time() - start
        with open(os.path.join(work, "metrics.jsonl")) as f:
            metrics = [json.loads(line) for line in f]
        train = [m for m in metrics if m["kind"] == "train"]
        out = subprocess.run(
            [exe, "eval", "--checkpoint", os.path.join(work, "best.safetensors"),
             "--split", "test", "--sliding-window", "--max-tokens",
             str(args.eval_tokens)], check=True, capture_output=True,
            text=True).stdout
        bpc = float(re.search(r"test bpc +([0-9.]+)", out).group(1))
        row = {"variant": name, "train_seconds": round(train_s, 1),
               "first_main_loss": train[0]["loss_main"],
               "last_main_loss": train[-1]["loss_main"],
               "test_bpc_sliding_window": bpc}
        rows.append(row)
        print(f"| {name:<24} | main loss {row['first_main_loss']:.3f} -> "
              f"{row['last_main_loss']:.3f} | test bpc (sliding window, "
              f"first {args.eval_tokens} chars) {bpc:.4f} | train "
              f"{train_s:.0f} s |", flush=True)
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"settings": vars(args), "rows": rows}, f, indent=1)


if __name__ == "__main__":
    main()
