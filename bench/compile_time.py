#!/usr/bin/env python3
"""Wall time and peak memory of `txlc MODEL -o EXE`, best of --repeat runs.

Issue #17's compile-time goal (enwik8_base under 15 s, wt103_large under
30 s on this 2-core machine) and issue #48's depth goal (a 200-layer model
of d_model 64 in under 60 s and 2 GB: time and memory linear in n_layer).
A benchmark, not a test: nothing asserts.

  python3 bench/compile_time.py [--txlc build/bin/txlc] [--repeat 2] \
      [--jobs J] [--quiet-wait S] [--n-layer N ...] [--d-model D] \
      [MODEL.toml ...]   (default: models/*.toml)

--n-layer compiles each model once per depth given (its [model] n_layer
replaced; --d-model also replaces d_model, d_embed, and d_inner = 4 *
d_model). Each run waits (up to --quiet-wait seconds) until other
processes use at most 0.25 CPUs, as bench.py does, and prints one table
row per model and depth: best and median seconds, txlc's largest peak
resident memory over the runs, and the size of the executable.
"""

import argparse
import glob
import os
import re
import statistics
import subprocess
import tempfile
import time


def busy_cpus(interval=1.0):
    """CPUs used by everything on the machine over `interval` seconds."""
    def read():
        with open("/proc/stat") as f:
            v = [int(x) for x in f.readline().split()[1:]]
        return sum(v), v[3] + v[4]
    t0, i0 = read()
    time.sleep(interval)
    t1, i1 = read()
    total = t1 - t0
    return os.cpu_count() * (1 - (i1 - i0) / total) if total else 0.0


def wait_quiet(limit):
    end = time.time() + limit
    while time.time() < end and busy_cpus() > 0.25:
        pass


def variant(model, work, n_layer, d_model):
    """`model` with n_layer (and d_model) replaced, written under `work`."""
    text = open(model).read()
    text = re.sub(r"(?m)^n_layer = .*$", f"n_layer = {n_layer}", text)
    if d_model:
        for key, value in (("d_model", d_model), ("d_embed", d_model),
                           ("d_inner", 4 * d_model)):
            text = re.sub(rf"(?m)^{key} = .*$", f"{key} = {value}", text)
    name = os.path.splitext(os.path.basename(model))[0]
    path = os.path.join(work, f"{name}_L{n_layer}"
                        f"{f'_d{d_model}' if d_model else ''}.toml")
    with open(path, "w") as f:
        f.write(text)
    return path


def run(cmd):
    """Runs `cmd`; its wall seconds and peak resident memory (MB)."""
    t = time.perf_counter()
    proc = subprocess.Popen(cmd)
    _, status, usage = os.wait4(proc.pid, 0)
    seconds = time.perf_counter() - t
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"{' '.join(cmd)} failed")
    return seconds, usage.ru_maxrss / 1024


def main():
    p = argparse.ArgumentParser()
    p.add_argument("models", nargs="*")
    p.add_argument("--txlc", default="build/bin/txlc")
    p.add_argument("--repeat", type=int, default=2)
    p.add_argument("--jobs", type=int, default=0, help="txlc -j (0: default)")
    p.add_argument("--quiet-wait", type=float, default=60)
    p.add_argument("--n-layer", type=int, nargs="+", default=[],
                   help="compile each model at these depths")
    p.add_argument("--d-model", type=int, default=0,
                   help="with --n-layer: also this d_model")
    a = p.parse_args()
    models = a.models or sorted(glob.glob("models/*.toml"))
    work = tempfile.mkdtemp()
    if a.n_layer:
        models = [variant(m, work, n, a.d_model)
                  for m in models for n in a.n_layer]
    print(f"| model | best s | median s | peak MB | executable MB |  "
          f"({a.txlc}, -j {a.jobs or 'default'})")
    print("|---|---|---|---|---|")
    for model in models:
        exe = os.path.join(work, "exe")
        times, peak = [], 0.0
        for _ in range(a.repeat):
            wait_quiet(a.quiet_wait)
            cmd = [a.txlc, model, "-o", exe]
            if a.jobs:
                cmd.append(f"-j{a.jobs}")
            seconds, mb = run(cmd)
            times.append(seconds)
            peak = max(peak, mb)
        size = os.path.getsize(exe) / 1e6
        name = os.path.splitext(os.path.basename(model))[0]
        print(f"| {name} | {min(times):.2f} | {statistics.median(times):.2f} "
              f"| {peak:.0f} | {size:.1f} |", flush=True)


if __name__ == "__main__":
    main()
