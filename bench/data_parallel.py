#!/usr/bin/env python3
"""Step time of data-parallel training (issue #23) against one process.

Compiles models/ptb_small.toml (CPU target) and trains it on PTB for
`--steps` updates three ways, interleaved `--repeat` times:

    1 process, --threads 1
    1 process, --threads 2         (the slices 2 ranks of 1 thread reproduce)
    mpirun -np 2, --threads 1 each

and prints the median `ms_per_batch` of updates 2..steps of each (the
first update includes warm-up) from metrics.jsonl, and the ratios. On a
2-core machine 2 ranks cannot beat one process of 2 threads: they do the
same work plus the gradient allreduce and the column copies.
"""

import argparse
import json
import os
import shutil
import statistics
import subprocess
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def ms_per_batch(work):
    with open(os.path.join(work, "metrics.jsonl")) as f:
        rows = [json.loads(line) for line in f]
    return [r["ms_per_batch"] for r in rows if r["kind"] == "train"][1:]


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--steps", type=int, default=30)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--data", default=os.path.join(ROOT, "..", "shared", "data", "ptb"))
    args = parser.parse_args()
    tmp = tempfile.mkdtemp(prefix="txl-dp-bench-")
    exe = os.path.join(tmp, "ptb_small")
    subprocess.run([os.path.join(ROOT, "build", "bin", "txlc"),
                    os.path.join(ROOT, "models", "ptb_small.toml"), "-o", exe],
                   check=True)
    common = ["train", "--data", args.data, "--max-step", str(args.steps),
              "--log-interval", "1", "--eval-interval", str(10 * args.steps),
              "--max-eval-steps", "1"]
    env = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1",
               OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
    ways = {
        "1 process, 1 thread": [exe] + common + ["--threads", "1"],
        "1 process, 2 threads": [exe] + common + ["--threads", "2"],
        "2 ranks, 1 thread each": ["mpirun", "-np", "2", "--bind-to", "none",
                                   exe] + common + ["--threads", "1"],
    }
    times = {name: [] for name in ways}
    for r in range(args.repeat):
        for name, command in ways.items():
            work = os.path.join(tmp, f"run{r}")
            shutil.rmtree(work, ignore_errors=True)
            subprocess.run(command + ["--work-dir", work], check=True, env=env,
                           stdout=subprocess.DEVNULL)
            times[name].extend(ms_per_batch(work))
    base = statistics.median(times["1 process, 2 threads"])
    print(f"ptb_small, batch 16, tgt_len 64, {args.steps} updates x "
          f"{args.repeat}: median ms per update")
    for name, values in times.items():
        median = statistics.median(values)
        print(f"  {name:24s} {median:8.1f} ms   {median / base:5.2f}x of "
              f"1 process, 2 threads")
    shutil.rmtree(tmp)


if __name__ == "__main__":
    main()
