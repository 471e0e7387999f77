#!/usr/bin/env python3
"""Runs the embedding gradient kernels of txl-embedding-grad-to-gpu
(embedding_grad_sort, then embedding_grad_rows, as the host code launches
them) through the runtime's device layer on an OpenCL device (this
machine's CPU in CI), and compares them with the scatter-add done
sequentially in position order in float32 (numpy's unbuffered np.add.at,
the CPU lowering's order):

- `order` and `sorted` are the stable sort of the positions by token;
- the table equals the sequential scatter-add bit for bit, onto zeros or
  onto a given init.

usage: embedding_grad_kernel.py --device-lib LIB KERNELS.img

Prints one line per case and exits 1 if any case fails.
"""

import argparse
import ctypes
import sys

import numpy as np

from rel_attention_kernel import Device

THREADS = 256
ROWS_PER_WORKGROUP = 8


def run_case(dev, case, rng):
    positions, n_token, width, vocab, with_init = case
    # Tokens drawn from the first `vocab` ids (few distinct ids: long runs
    # of equal tokens), and d_result rows of widely spread magnitudes, so
    # that another summation order changes the rounding.
    tokens = rng.integers(0, vocab, positions).astype(np.int64)
    dy = (rng.standard_normal((positions, width)) *
          np.exp(rng.uniform(-8, 8, (positions, 1)))).astype(np.float32)
    init = rng.standard_normal((n_token, width)).astype(np.float32)
    table = init.copy() if with_init else np.zeros((n_token, width), np.float32)
    want = table.copy()
    np.add.at(want, tokens, dy)
    want_order = np.argsort(tokens, kind="stable")

    order = np.full(positions, -1, np.int64)
    sorted_ids = np.full(positions, -1, np.int64)
    _, tokens_desc = dev.memref(tokens)
    order_buf, order_desc = dev.memref(order)
    sorted_buf, sorted_desc = dev.memref(sorted_ids)
    _, dy_desc = dev.memref(dy)
    table_buf, table_desc = dev.memref(table)
    dev.launch(dev.kernel("embedding_grad_sort"),
               (-(-positions // THREADS), 1, 1), (THREADS, 1, 1),
               tokens_desc + order_desc + sorted_desc)
    dev.launch(dev.kernel("embedding_grad_rows"),
               (-(-positions // ROWS_PER_WORKGROUP), 1, 1), (THREADS, 1, 1),
               dy_desc + order_desc + sorted_desc + table_desc)
    got = np.empty_like(table)
    dev.read(order, order_buf)
    dev.read(sorted_ids, sorted_buf)
    dev.read(got, table_buf)
    dev.free()

    problems = []
    if not np.array_equal(order, want_order):
        problems.append(f"order wrong at {int(np.sum(order != want_order))} positions")
    if not np.array_equal(sorted_ids, tokens[want_order]):
        problems.append("sorted tokens wrong")
    differ = int(np.sum(got.view(np.uint32) != want.view(np.uint32)))
    if differ:
        problems.append(f"{differ} table elements not bit-equal "
                        f"(max abs diff {float(np.max(np.abs(got - want))):.3g})")
    name = (f"embedding_grad positions={positions} n_token={n_token} "
            f"width={width} vocab={vocab} init={int(with_init)}")
    print(("ok   " if not problems else "FAIL ") + name +
          ("" if not problems else ": " + "; ".join(problems)))
    return not problems


# (positions, n_token, width, distinct ids drawn, init)
CASES = [
    (1, 10, 16, 10, False),          # one position
    (100, 50, 16, 50, False),        # one tile, rows narrower than a subgroup
    (256, 50, 48, 3, True),          # exactly one tile; long runs
    (1024, 10000, 128, 10000, True), # ptb_small-like: 64 x 16 positions
    (1283, 300, 200, 7, False),      # several tiles, the last cut; 7 ids
    (2000, 1000, 33, 1, True),       # every position the same token
]


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("image", help="KERNELS.img")
    parser.add_argument("--device-lib", required=True, help="libtxl_device.so")
    args = parser.parse_args()
    rng = np.random.default_rng(0)
    dev = Device(args.device_lib, open(args.image, "rb").read())
    results = [run_case(dev, case, rng) for case in CASES]
    dev.lib.txl_device_close()
    return 0 if all(results) else 1


if __name__ == "__main__":
    sys.exit(main())
