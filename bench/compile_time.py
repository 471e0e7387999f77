#!/usr/bin/env python3
"""Wall time of `txlc MODEL -o EXE` for model files, best of --repeat runs.

Issue #17's compile-time goal (enwik8_base under 15 s, wt103_large under
30 s on this 2-core machine). A benchmark, not a test: nothing asserts.

  python3 bench/compile_time.py [--txlc build/bin/txlc] [--repeat 2] \
      [--jobs J] [--quiet-wait S] [MODEL.toml ...]   (default: models/*.toml)

Each run waits (up to --quiet-wait seconds) until other processes use at
most 0.25 CPUs, as bench.py does, and prints one table row per model:
best and median seconds, and the size of the executable.
"""

import argparse
import glob
import os
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


def main():
    p = argparse.ArgumentParser()
    p.add_argument("models", nargs="*")
    p.add_argument("--txlc", default="build/bin/txlc")
    p.add_argument("--repeat", type=int, default=2)
    p.add_argument("--jobs", type=int, default=0, help="txlc -j (0: default)")
    p.add_argument("--quiet-wait", type=float, default=60)
    a = p.parse_args()
    models = a.models or sorted(glob.glob("models/*.toml"))
    work = tempfile.mkdtemp()
    print(f"| model | best s | median s | executable MB |  ({a.txlc}, -j {a.jobs or 'default'})")
    print("|---|---|---|---|")
    for model in models:
        exe = os.path.join(work, "exe")
        times = []
        for _ in range(a.repeat):
            wait_quiet(a.quiet_wait)
            cmd = [a.txlc, model, "-o", exe]
            if a.jobs:
                cmd.append(f"-j{a.jobs}")
            t = time.perf_counter()
            subprocess.run(cmd, check=True)
            times.append(time.perf_counter() - t)
        size = os.path.getsize(exe) / 1e6
        name = os.path.splitext(os.path.basename(model))[0]
        print(f"| {name} | {min(times):.2f} | {statistics.median(times):.2f} | {size:.1f} |",
              flush=True)


if __name__ == "__main__":
    main()
