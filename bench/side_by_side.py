#!/usr/bin/env python3
"""ptb_small eval and train step of two executables, interleaved (issue #17:
a compiler change must not make the executable slower; goal within 3 %).

  python3 bench/side_by_side.py OLD_EXE NEW_EXE [--repeat 5] [--steps 40]
      [--threads 2] [--quiet-wait 60] [--old-env K=V ...] [--new-env K=V ...]

(--old-env / --new-env: variables set for one side's runs, so that one
executable can be compared with itself, e.g. TXL_X86_64_V4=0 against 1.)

eval: `EXE eval --split valid` of ../shared/reference/ptb_small on PTB valid
(the official eval.py settings), tokens/s as the executable reports it.
train: `EXE train --max-step STEPS --log-interval 10` from the model file's
[train] (dropout on, Adam, clipping), no evaluation and no checkpoint
inside the timed steps; ms/batch of the best 10-step window after the
first (which includes warm-up). Runs alternate old/new; each waits for a
quiet machine (other processes <= 0.25 CPUs) as bench.py does. A benchmark,
not a test.
"""

import argparse
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(__file__))
from compile_time import wait_quiet  # noqa: E402

REF = "../shared/reference/ptb_small/model.safetensors"
DATA = "../shared/data/ptb"


def eval_tok_s(exe, threads, env=None):
    out = subprocess.run([exe, "eval", "--data", DATA, "--split", "valid",
                          "--checkpoint", REF, "--threads", str(threads), "--json"],
                         check=True, capture_output=True, text=True,
                         env=env).stdout
    return json.loads(out.strip().splitlines()[-1])


def train_ms(exe, threads, steps, env=None):
    work = tempfile.mkdtemp()
    try:
        out = subprocess.run([exe, "train", "--data", DATA, "--work-dir", work,
                              "--max-step", str(steps), "--log-interval", "10",
                              "--eval-interval", str(10 * steps),
                              "--checkpoint-interval", str(10 ** 9),
                              "--threads", str(threads)],
                             check=True, capture_output=True, text=True,
                             env=env).stdout
    finally:
        shutil.rmtree(work, ignore_errors=True)
    ms = [float(m) for m in re.findall(r"ms/batch\s+([0-9.]+)", out)]
    return min(ms[1:]) if len(ms) > 1 else ms[0]


def main():
    p = argparse.ArgumentParser()
    p.add_argument("old")
    p.add_argument("new")
    p.add_argument("--repeat", type=int, default=5)
    p.add_argument("--steps", type=int, default=40)
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--quiet-wait", type=float, default=60)
    p.add_argument("--old-env", nargs="*", default=[])
    p.add_argument("--new-env", nargs="*", default=[])
    a = p.parse_args()
    envs = {side: dict(os.environ, **dict(kv.split("=", 1) for kv in extra))
            for side, extra in (("old", a.old_env), ("new", a.new_env))}
    res = {"old": {"eval": [], "train": []}, "new": {"eval": [], "train": []}}
    for _ in range(a.repeat):
        for side in ("old", "new"):
            wait_quiet(a.quiet_wait)
            e = eval_tok_s(getattr(a, side), a.threads, envs[side])
            res[side]["eval"].append(e["tokens_per_s"] if "tokens_per_s" in e else e)
            wait_quiet(a.quiet_wait)
            res[side]["train"].append(train_ms(getattr(a, side), a.threads,
                                               a.steps, envs[side]))
            print(side, res[side]["eval"][-1], res[side]["train"][-1], flush=True)
    for kind, better in (("eval", max), ("train", min)):
        o, n = res["old"][kind], res["new"][kind]
        unit = "tok/s" if kind == "eval" else "ms/batch"
        ratio = better(n) / better(o) if kind == "eval" else better(o) / better(n)
        print(f"{kind}: old best {better(o):.1f} (median {statistics.median(o):.1f}) {unit}, "
              f"new best {better(n):.1f} (median {statistics.median(n):.1f}) {unit}; "
              f"new/old speed {ratio:.3f}")


if __name__ == "__main__":
    main()
