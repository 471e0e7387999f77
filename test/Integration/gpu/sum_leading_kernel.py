#!/usr/bin/env python3
"""Runs the split column sums of txl-sum-leading-to-gpu through the
runtime's device layer on an OpenCL device (this machine's CPU in CI), as
the host code launches them: sum_rows_part_c<C> over a grid of
ceil(R / 16) parts x ceil(C / 256) column blocks, then sum_rows_parts_c<C>
over the column blocks. The result must equal, bit for bit, the float32
sums in that fixed order (each part's 16 rows in order, then the parts in
order), emulated here, and float64's sum within 1e-5 relative.

usage: sum_leading_kernel.py --device-lib LIB KERNELS.img

Prints one line per case and exits 1 if any case fails.
"""

import argparse
import sys

import numpy as np

from rel_attention_kernel import Device

ROWS_PER_PART = 16
THREADS = 256


def fixed_order(x):
    """The kernels' order: per part of 16 rows a sequential float32 sum,
    then the parts' sums added in order."""
    rows, columns = x.shape
    parts = []
    for begin in range(0, rows, ROWS_PER_PART):
        acc = np.zeros(columns, np.float32)
        for r in range(begin, min(rows, begin + ROWS_PER_PART)):
            acc = acc + x[r]
        parts.append(acc)
    total = np.zeros(columns, np.float32)
    for p in parts:
        total = total + p
    return total


def run_case(dev, columns, rows, rng):
    # Rows of widely spread magnitudes: another order rounds differently.
    x = (rng.standard_normal((rows, columns)) *
         np.exp(rng.uniform(-6, 6, (rows, 1)))).astype(np.float32)
    n_parts = -(-rows // ROWS_PER_PART)
    blocks = -(-columns // THREADS)
    parts = np.full((max(n_parts, 1), columns), np.nan, np.float32)
    out = np.full(columns, np.nan, np.float32)
    _, x_desc = dev.memref(x)
    _, parts_desc = dev.memref(parts[:n_parts], parts)
    out_buf, out_desc = dev.memref(out)
    suffix = f"_c{columns}"
    dev.launch(dev.kernel("sum_rows_part" + suffix), (n_parts, blocks, 1),
               (THREADS, 1, 1), x_desc + parts_desc)
    dev.launch(dev.kernel("sum_rows_parts" + suffix), (1, blocks, 1),
               (THREADS, 1, 1), parts_desc + out_desc)
    got = np.empty_like(out)
    dev.read(got, out_buf)
    dev.free()

    want = fixed_order(x)
    exact = x.astype(np.float64).sum(axis=0)
    label = f"sum_rows c={columns} rows={rows}"
    problems = []
    differ = int(np.sum(got.view(np.uint32) != want.view(np.uint32)))
    if differ:
        problems.append(f"{differ} columns not bit-equal to the fixed order")
    scale = np.abs(x.astype(np.float64)).sum(axis=0)
    if not np.all(np.abs(got - exact) <= 1e-5 * np.maximum(scale, 1e-30)):
        problems.append("off float64's sum")
    print(("ok   " if not problems else "FAIL ") + label +
          ("" if not problems else ": " + "; ".join(problems)))
    return not problems


# (columns, rows): R = 0 (no part), one row, one partial part, ptb_small's
# 1024 training rows, and an odd count.
CASES = [(33, 0), (33, 1), (512, 7), (512, 1024), (10000, 1024), (128, 333)]


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("image", help="KERNELS.img")
    parser.add_argument("--device-lib", required=True, help="libtxl_device.so")
    args = parser.parse_args()
    rng = np.random.default_rng(0)
    dev = Device(args.device_lib, open(args.image, "rb").read())
    results = [run_case(dev, c, r, rng) for c, r in CASES]
    dev.lib.txl_device_close()
    return 0 if all(results) else 1


if __name__ == "__main__":
    sys.exit(main())
