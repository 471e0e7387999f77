#!/usr/bin/env python3
"""The key/value cache's eval speed-up at the enwik8 paper setting (issue #22).

Compiles models/enwik8_base.toml (CPU target), writes a random-weight
checkpoint with the executable's `init`, and a synthetic enwik8 data
directory in the prepared layout (prep_enwik8.py's: every byte as its decimal
number, space-separated; the 204 byte values of the model's vocabulary, random
order). Then runs, interleaved, the paper's eval.py setting

    EXE eval --split valid --tgt-len 80 --mem-len 2100 --clamp-len 820
             --same-length true --batch-size 4

with the cache (the default) and with --no-kv-cache, and prints tokens/s of
each run (eval's own timer: the segment loop, as eval.py), the ratio of the
medians, and the largest per-token NLL difference between the two paths
(--dump-nll). The valid split holds `--segments` (default 84) segments per
column; the first 2100 / 80 = 27 fill the memory (klen grows to 2180), and
the cache's window regions (2 * mem_len rows each, RowWindows) take new
pages until the window first slides, at segment (2 * 2100 - 80) / 80 + 1 =
53: the kernel zeroes each page on its first touch (`clear_page_erms`, 11 %
of a 40-segment run's profile on the model 167 Xeon), once per run. A
second split of `--ramp-segments` (default 56) gives the steady state, the
rate of the segments after both, as (tokens_84 - tokens_56) / (time_84 -
time_56), which is what a real split (enwik8 test: 15,625 segments per
column) runs at. (Before session 58 the defaults were 60 and 28, whose
"steady" segments included the first touches.) No torch needed.

With `--also-blas`, a second executable compiled with `--cpu-attention=blas`
(the attention as BLAS products over whole score matrices instead of the
tiled kernel) runs in the same interleaved loop, and both summaries print:
the tiled kernel's gain is the ratio of the two, on the same machine in the
same run.
"""

import argparse
import json
import os
import random
import statistics
import subprocess
import sys

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SETTING = ["--split", "valid", "--tgt-len", "80", "--mem-len", "2100",
           "--clamp-len", "820", "--same-length", "true", "--batch-size", "4"]


def write_split(path, count, rng, symbols):
    """`count` bytes drawn from `symbols`, written as prep_enwik8.py does."""
    data = [rng.choice(symbols) for _ in range(count)]
    with open(path, "w") as f:
        f.write(" ".join(str(c) for c in data))


def make_data(a, segments):
    data = os.path.join(a.workdir, f"data_S{segments}")
    if not os.path.exists(os.path.join(data, "test.txt")):
        os.makedirs(data, exist_ok=True)
        rng = random.Random(5678)
        # 204 byte values (the model's n_token), newline excluded.
        symbols = [c for c in range(256) if c != 10][:204]
        # The vocabulary is built from all three splits; train holds every
        # symbol once so that it has exactly 204.
        with open(os.path.join(data, "train.txt"), "w") as f:
            f.write(" ".join(str(c) for c in symbols))
        write_split(os.path.join(data, "valid.txt"),
                    4 * 80 * segments + 1, rng, symbols)
        write_split(os.path.join(data, "test.txt"), 1000, rng, symbols)
    return data


def compile_model(a, name, options):
    exe = os.path.join(a.workdir, name)
    if a.recompile or not os.path.exists(exe):
        cmd = [a.txlc, os.path.join(ROOT, "models", "enwik8_base.toml"),
               "-o", exe] + options
        print("  compile: " + " ".join(cmd), flush=True)
        subprocess.run(cmd, check=True)
    return exe


def setup(a):
    os.makedirs(a.workdir, exist_ok=True)
    exe = compile_model(a, "enwik8_base", [])
    weights = os.path.join(a.workdir, "weights.safetensors")
    if not os.path.exists(weights):
        subprocess.run([exe, "init", "--seed", "1111", "-o", weights],
                       check=True)
    return exe, weights, make_data(a, a.segments), make_data(a, a.ramp_segments)


def run(a, exe, weights, data, kv, label):
    nll = os.path.join(a.workdir, f"nll_{label}.npy")
    cmd = [exe, "eval", "--data", data, "--dataset", "enwik8",
           "--checkpoint", weights, "--threads", str(a.threads), "--json",
           "--dump-nll", nll] + SETTING + ([] if kv else ["--no-kv-cache"])
    res = subprocess.run(cmd, check=True, capture_output=True, text=True)
    result = json.loads(res.stdout.strip().splitlines()[-1])
    result["nll_file"] = nll
    result["cmd"] = " ".join(cmd)
    return result


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--txlc", default=os.path.join(ROOT, "build", "bin", "txlc"))
    ap.add_argument("--workdir",
                    default=os.path.join(os.path.dirname(ROOT), "bench-scratch",
                                         "kv_cache"))
    ap.add_argument("--segments", type=int, default=84,
                    help="segments per batch column in the valid split")
    ap.add_argument("--ramp-segments", type=int, default=56,
                    help="segments per column of the shorter split (the "
                         "steady state is the difference)")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--recompile", action="store_true")
    ap.add_argument("--also-blas", action="store_true",
                    help="also run an executable compiled with "
                         "--cpu-attention=blas, interleaved")
    ap.add_argument("--json", help="write the runs and the summary here")
    a = ap.parse_args()

    exe, weights, data, ramp = setup(a)
    variants = [("", exe)]
    if a.also_blas:
        variants.append(("blas_", compile_model(
            a, "enwik8_base_blas", ["--cpu-attention=blas"])))
    runs = {prefix + label: [] for prefix, _ in variants
            for label in ("kv", "no_kv")}
    for r in range(a.repeat):
        for prefix, path in variants:
            for kv in (True, False):
                label = prefix + ("kv" if kv else "no_kv")
                res = run(a, path, weights, data, kv, label)
                short = run(a, path, weights, ramp, kv, label + "_ramp")
                res["steady_tokens_per_s"] = (
                    (res["tokens"] - short["tokens"]) /
                    (res["seconds"] - short["seconds"]))
                runs[label].append(res)
                print(f"  run {r} {label:10s}: {res['tokens_per_s']:8.1f} "
                      f"tok/s, steady {res['steady_tokens_per_s']:8.1f} tok/s "
                      f"({res['tokens']} tokens in {res['seconds']:.2f} s, "
                      f"{short['tokens']} in {short['seconds']:.2f} s; "
                      f"{res['kv_cache_segments']} of {res['segments']} "
                      f"segments through the cache) loss {res['loss']:.6f}",
                      flush=True)
    print("  command: " + runs["kv"][0]["cmd"])
    summaries = {}
    worst = 0.0
    for prefix, _ in variants:
        kv_runs, plain_runs = runs[prefix + "kv"], runs[prefix + "no_kv"]
        kv = statistics.median(x["tokens_per_s"] for x in kv_runs)
        plain = statistics.median(x["tokens_per_s"] for x in plain_runs)
        kv_steady = statistics.median(x["steady_tokens_per_s"]
                                      for x in kv_runs)
        plain_steady = statistics.median(x["steady_tokens_per_s"]
                                         for x in plain_runs)
        a_nll = np.load(kv_runs[0]["nll_file"]).astype(np.float64)
        b_nll = np.load(plain_runs[0]["nll_file"]).astype(np.float64)
        diff = float(np.abs(a_nll - b_nll).max())
        worst = max(worst, diff)
        summaries[prefix + "summary"] = {
            "kv_tokens_per_s": kv, "no_kv_tokens_per_s": plain,
            "speedup": kv / plain, "max_nll_diff": diff,
            "kv_steady_tokens_per_s": kv_steady,
            "no_kv_steady_tokens_per_s": plain_steady,
            "steady_speedup": kv_steady / plain_steady,
            "segments": kv_runs[0]["segments"],
            "kv_cache_segments": kv_runs[0]["kv_cache_segments"]}
        attention = "blas" if prefix else "tiled"
        print(f"{attention} attention: key/value cache {kv:.1f} tok/s, "
              f"--no-kv-cache {plain:.1f} tok/s (medians of {a.repeat}): "
              f"{kv / plain:.2f}x; steady state {kv_steady:.1f} vs "
              f"{plain_steady:.1f} tok/s: {kv_steady / plain_steady:.2f}x; "
              f"max |NLL diff| {diff:.2e}")
    if a.also_blas:
        t, b = summaries["summary"], summaries["blas_summary"]
        print(f"tiled / blas attention: cache {t['kv_tokens_per_s'] / b['kv_tokens_per_s']:.2f}x"
              f" (steady {t['kv_steady_tokens_per_s'] / b['kv_steady_tokens_per_s']:.2f}x), "
              f"--no-kv-cache {t['no_kv_tokens_per_s'] / b['no_kv_tokens_per_s']:.2f}x"
              f" (steady {t['no_kv_steady_tokens_per_s'] / b['no_kv_steady_tokens_per_s']:.2f}x)")
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"runs": runs, **summaries}, f, indent=1)
    if worst > 1e-5:
        sys.exit(f"the two paths' NLLs differ by {worst:.2e} (> 1e-5)")


if __name__ == "__main__":
    main()
