#!/usr/bin/env python3
"""Compile time and memory of txlc against model depth (issue #20, item 4).

usage: bench/compile_depth.py [TXLC] [--layers 48 96] [--bound SECONDS]

Compiles models/ptb_small.toml with n_layer set to each depth into a full
executable (forward, backward, training functions) and prints the wall
time and txlc's peak resident memory. Both must grow about linearly in
n_layer; a depth whose compile takes longer than --bound (default 300 s,
the limit the issue names) is reported as over the bound and the script
exits 1. A benchmark, not a test: run it by hand and quote the figures.
"""

import argparse
import os
import re
import resource
import subprocess
import sys
import tempfile
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("txlc", nargs="?",
                        default=os.path.join(REPO, "build", "bin", "txlc"))
    parser.add_argument("--layers", type=int, nargs="+", default=[48, 96])
    parser.add_argument("--bound", type=float, default=300.0)
    args = parser.parse_args()
    base = open(os.path.join(REPO, "models", "ptb_small.toml")).read()
    over = False
    print("%8s %10s %12s" % ("n_layer", "seconds", "peak MB"))
    with tempfile.TemporaryDirectory() as tmp:
        for layers in args.layers:
            model = os.path.join(tmp, "deep%d.toml" % layers)
            with open(model, "w") as f:
                f.write(re.sub(r"(?m)^n_layer = .*$", "n_layer = %d" % layers,
                               base))
            code = ("import resource, subprocess, sys; "
                    "subprocess.run(sys.argv[1:], check=True); "
                    "print(resource.getrusage("
                    "resource.RUSAGE_CHILDREN).ru_maxrss)")
            start = time.time()
            out = subprocess.run([sys.executable, "-c", code, args.txlc, model,
                                  "-o", os.path.join(tmp, "exe%d" % layers)],
                                 capture_output=True, text=True, check=True)
            seconds = time.time() - start
            peak = int(out.stdout.strip().splitlines()[-1]) / 1024
            flag = "" if seconds <= args.bound else "  over the %g s bound" % args.bound
            over |= bool(flag)
            print("%8d %10.1f %12.0f%s" % (layers, seconds, peak, flag))
    return 1 if over else 0


if __name__ == "__main__":
    sys.exit(main())
