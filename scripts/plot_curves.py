#!/usr/bin/env python3
"""Draws a `train` run's loss curves from its metrics.jsonl with gnuplot.

Usage: scripts/plot_curves.py WORK_DIR [-o PNG] [--gnuplot PROGRAM]

WORK_DIR is a `<model> train --work-dir`: its metrics.jsonl holds one JSON
object per log line ("kind": "train", the mean loss of the interval in nats
per token), per validation ("kind": "valid") and for the test at the end.
Writes WORK_DIR/curves.png (or PNG): the train and validation losses against
the update, 960 x 540, through gnuplot's pngcairo terminal (Debian's
gnuplot-nox, which scripts/install-deps.sh installs). The training loop
itself draws nothing (issue 50): run this while a run trains, or after.

Errors (exit status 1, one line naming the file): no metrics.jsonl; a line
that is not a JSON object (file:line); no train or valid record with a loss;
no gnuplot, or gnuplot failing.
"""

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile


def fail(message):
    print(f"plot_curves: {message}", file=sys.stderr)
    sys.exit(1)


def quoted(path):
    """`path` as a gnuplot single-quoted string (a quote doubled)."""
    return "'" + path.replace("'", "''") + "'"


def read_curves(path):
    """{kind: [(step, loss)]} of the train and valid records of `path`."""
    curves = {"train": [], "valid": []}
    try:
        lines = open(path, encoding="utf-8").read().splitlines()
    except OSError as error:
        fail(f"{path}: {error.strerror}")
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except json.JSONDecodeError as error:
            fail(f"{path}:{number}: not JSON ({error.msg})")
        if not isinstance(record, dict):
            fail(f"{path}:{number}: not a JSON object")
        kind, step, loss = (record.get(k) for k in ("kind", "step", "loss"))
        if kind in curves and isinstance(step, int) and \
                isinstance(loss, (int, float)):
            curves[kind].append((step, float(loss)))
    if not curves["train"] and not curves["valid"]:
        fail(f"{path}: no train or valid record with a loss")
    return curves


def main():
    parser = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0],
        formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("work_dir")
    parser.add_argument("-o", "--output",
                        help="the PNG to write (default WORK_DIR/curves.png)")
    parser.add_argument("--gnuplot", default="gnuplot",
                        help="the gnuplot program (default: gnuplot on PATH)")
    args = parser.parse_args()
    metrics = os.path.join(args.work_dir, "metrics.jsonl")
    output = args.output or os.path.join(args.work_dir, "curves.png")
    curves = read_curves(metrics)
    gnuplot = shutil.which(args.gnuplot)
    if not gnuplot:
        fail(f"no gnuplot: '{args.gnuplot}' is not a program on PATH "
             "(Debian: apt-get install gnuplot-nox)")
    with tempfile.TemporaryDirectory(prefix="plot_curves.") as scratch:
        plots = []
        for kind, style in (("train", "lines"), ("valid", "linespoints")):
            if not curves[kind]:
                continue
            data = os.path.join(scratch, kind + ".dat")
            with open(data, "w") as f:
                f.writelines(f"{step} {loss!r}\n" for step, loss in curves[kind])
            plots.append(f"{quoted(data)} using 1:2 with {style} "
                         f"title '{kind}'")
        script = "\n".join([
            "set terminal pngcairo size 960,540",
            f"set output {quoted(output)}",
            "set xlabel 'step'",
            "set ylabel 'loss (nats per token)'",
            "set grid",
            "set key top right",
            "plot " + ", ".join(plots),
        ]) + "\n"
        result = subprocess.run([gnuplot], input=script, text=True,
                                capture_output=True)
        if result.returncode != 0:
            fail(f"gnuplot failed on {metrics} (exit status "
                 f"{result.returncode}): {result.stderr.strip()}")
    print(f"plot_curves: {output} ({len(curves['train'])} train, "
          f"{len(curves['valid'])} valid points)")


if __name__ == "__main__":
    main()
