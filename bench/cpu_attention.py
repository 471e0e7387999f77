#!/usr/bin/env python3
"""The CPU target's attention lowerings side by side (issue #49, item 2):
models/enwik8_base.toml compiled three times, `--cpu-attention=auto` (the
tiled kernel where the products' scores would exceed 32 MiB), `tiled` (the
default: the kernel for every call) and `blas` (BLAS products over whole
score matrices), each `eval` run interleaved on the
synthetic enwik8 split of bench/kv_cache.py (random weights from `init`),
in two settings:

  cache: the paper's eval.py setting (tgt_len 80, mem_len 2100, clamp_len
         820, same_length, batch 4) with the key/value cache: qlen 80 over
         2180 keys; the scores of one call (2 columns per thread) are 11 MiB;
  long:  tgt_len 1024, mem_len 1024, batch 2 (--no-kv-cache: the whole
         window is recomputed): qlen 1024 over 2048 keys, 64 MiB of scores
         per call.

Prints tokens/s per run, the medians and each lowering's ratio to blas,
and the CPU and BLAS kernel line of the executables. A benchmark, not a
test.

  python3 bench/cpu_attention.py [--repeat 3] [--segments 30]
"""

import argparse
import json
import os
import statistics
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import kv_cache  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SETTINGS = {
    "cache": ["--tgt-len", "80", "--mem-len", "2100", "--clamp-len", "820",
              "--same-length", "true", "--batch-size", "4"],
    "long": ["--tgt-len", "1024", "--mem-len", "1024", "--batch-size", "2",
             "--no-kv-cache"],
}
LOWERINGS = ["auto", "tiled", "blas"]


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--txlc", default=os.path.join(ROOT, "build", "bin", "txlc"))
    ap.add_argument("--workdir",
                    default=os.path.join(os.path.dirname(ROOT), "bench-scratch",
                                         "cpu_attention"))
    ap.add_argument("--segments", type=int, default=30,
                    help="segments of 80 per batch column in the split")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--recompile", action="store_true")
    a = ap.parse_args()
    a.ramp_segments = a.segments
    os.makedirs(a.workdir, exist_ok=True)
    exes = {name: kv_cache.compile_model(a, "enwik8_base_" + name,
                                         ["--cpu-attention=" + name])
            for name in LOWERINGS}
    weights = os.path.join(a.workdir, "weights.safetensors")
    if not os.path.exists(weights):
        subprocess.run([exes["auto"], "init", "--seed", "1111", "-o", weights],
                       check=True)
    data = kv_cache.make_data(a, a.segments)
    print(subprocess.run([exes["auto"], "--version"], capture_output=True,
                         text=True).stdout.strip().splitlines()[-1])
    runs = {(s, n): [] for s in SETTINGS for n in LOWERINGS}
    for r in range(a.repeat):
        for setting, args in SETTINGS.items():
            for name in LOWERINGS:
                cmd = [exes[name], "eval", "--data", data, "--dataset",
                       "enwik8", "--split", "valid", "--checkpoint", weights,
                       "--threads", str(a.threads), "--json"] + args
                res = subprocess.run(cmd, check=True, capture_output=True,
                                     text=True)
                out = json.loads(res.stdout.strip().splitlines()[-1])
                runs[setting, name].append(out["tokens_per_s"])
                print(f"  run {r} {setting:5s} {name:5s}: "
                      f"{out['tokens_per_s']:8.1f} tok/s (loss "
                      f"{out['loss']:.6f})", flush=True)
    for setting in SETTINGS:
        base = statistics.median(runs[setting, "blas"])
        line = ", ".join(
            f"{n} {statistics.median(runs[setting, n]):.1f} "
            f"({statistics.median(runs[setting, n]) / base:.2f}x)"
            for n in LOWERINGS)
        print(f"{setting}: {line} tok/s, medians of {a.repeat}")


if __name__ == "__main__":
    main()
