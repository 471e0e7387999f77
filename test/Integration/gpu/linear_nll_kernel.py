#!/usr/bin/env python3
"""Runs the output layer's kernels of txl-linear-nll-to-gpu through the
runtime's device layer on an OpenCL device (this machine's CPU in CI), as
the host code launches them, and compares them with float64:

- linear_nll_rows_w<W>_v<V>[_nobias][_lse] (one workgroup of W subgroups
  per row of the [rows, V] logits, grid = rows, the bias added on the
  fly): nll[r] = lse[r] − (x[r, t_r] + bias[t_r]) with lse[r] =
  logsumexp(x[r] + bias) (the target's term 0 for a target outside
  [0, V), as the CPU kernel); the _lse form also writes lse;
- linear_nll_dlogits_v<V>[_nobias] (grid rows × ⌈V / 256⌉, 256 work-items):
  dl = exp(x + bias − lse) · g − g · onehot(t).

Logits are spread over several scales per row, some rows shifted by
±80 (exp overflows or underflows without the row's max subtracted) and
some rows of one constant (every column the max).

usage: linear_nll_kernel.py --device-lib LIB KERNELS.img KERNEL...

Prints one line per case and exits 1 if any case fails.
"""

import argparse
import re
import sys

import numpy as np

from rel_attention_kernel import Device

SUBGROUP = 32
GRAD_THREADS = 256


def make_inputs(rows, columns, rng):
    logits = (rng.standard_normal((rows, columns)) *
              np.exp(rng.uniform(-2, 2, (rows, 1)))).astype(np.float32)
    logits[::5] += 80.0
    logits[1::5] -= 80.0
    logits[2::7] = 3.0
    bias = rng.standard_normal(columns).astype(np.float32)
    target = rng.integers(0, columns, rows).astype(np.int64)
    target[3::11] = -1
    target[4::11] = columns
    target[5::11] = 1 << 40
    target[6::11] = columns - 1
    target[7::11] = 0
    return logits, bias, target


def reference(logits, bias, target, with_bias):
    """float64 lse [rows], the target's logit [rows] (0 outside), x."""
    rows, columns = logits.shape
    x = logits.astype(np.float64)
    if with_bias:
        x = x + bias.astype(np.float64)
    top = x.max(axis=1, keepdims=True)
    lse = (top + np.log(np.exp(x - top).sum(axis=1, keepdims=True)))[:, 0]
    inside = (target >= 0) & (target < columns)
    picked = np.where(inside, x[np.arange(rows), np.clip(target, 0, columns - 1)], 0.0)
    return lse, picked, x


def report(label, got, want, bound):
    err = np.abs(got.astype(np.float64) - want)
    bad = ~(err <= bound)
    if bad.any():
        i = np.unravel_index(int(np.argmax(bad)), bad.shape)
        print(f"FAIL {label}: {int(bad.sum())} elements off, at {i}: "
              f"got {got[i]!r}, want {want[i]!r}")
        return False
    print(f"ok   {label}: max abs err {float(err.max()):.3g}")
    return True


def run_rows(dev, name, rows, rng):
    m = re.fullmatch(r"linear_nll_rows_w(\d+)_v(\d+)(_nobias)?(_lse)?", name)
    subgroups, columns = int(m[1]), int(m[2])
    with_bias, with_lse = not m[3], bool(m[4])
    logits, bias, target = make_inputs(rows, columns, rng)
    lse, picked, _ = reference(logits, bias, target, with_bias)

    nll = np.full(rows, np.nan, np.float32)
    args = dev.memref(logits)[1]
    if with_bias:
        args += dev.memref(bias)[1]
    args += dev.memref(target)[1]
    nll_buf, nll_desc = dev.memref(nll)
    args += nll_desc
    if with_lse:
        lse_buf, lse_desc = dev.memref(nll.copy())
        args += lse_desc
    dev.launch(dev.kernel(name), (rows, 1, 1), (subgroups * SUBGROUP, 1, 1), args)
    got = np.empty_like(nll)
    dev.read(got, nll_buf)
    got_lse = np.empty_like(nll)
    if with_lse:
        dev.read(got_lse, lse_buf)
    dev.free()

    # float32 logits of up to ~100 in magnitude: the lse's rounding is a
    # few ulps of it.
    label = f"{name} rows={rows}"
    ok = report(label, got, lse - picked,
                1e-5 * np.maximum(1.0, np.abs(lse) + np.abs(picked)))
    if with_lse:
        ok &= report(label + " lse", got_lse, lse,
                     1e-5 * np.maximum(1.0, np.abs(lse)))
    return ok


def run_dlogits(dev, name, rows, rng):
    m = re.fullmatch(r"linear_nll_dlogits_v(\d+)(_nobias)?", name)
    columns, with_bias = int(m[1]), not m[2]
    logits, bias, target = make_inputs(rows, columns, rng)
    lse, _, x = reference(logits, bias, target, with_bias)
    lse32 = lse.astype(np.float32)
    g = (rng.standard_normal(rows) * np.exp(rng.uniform(-3, 3, rows))).astype(np.float32)
    want = np.exp(x - lse32.astype(np.float64)[:, None]) * g[:, None]
    inside = (target >= 0) & (target < columns)
    want[np.nonzero(inside)[0], target[inside]] -= g[inside]

    dl = np.full((rows, columns), np.nan, np.float32)
    args = dev.memref(logits)[1]
    if with_bias:
        args += dev.memref(bias)[1]
    args += dev.memref(lse32)[1] + dev.memref(g)[1] + dev.memref(target)[1]
    dl_buf, dl_desc = dev.memref(dl)
    dev.launch(dev.kernel(name), (rows, -(-columns // GRAD_THREADS), 1),
               (GRAD_THREADS, 1, 1), args + dl_desc)
    got = np.empty_like(dl)
    dev.read(got, dl_buf)
    dev.free()
    # exp of a float32 argument: a few ulps of each probability, times g.
    return report(f"{name} rows={rows}", got, want,
                  1e-6 * np.abs(g)[:, None] + 1e-5 * np.abs(want))


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("image", help="KERNELS.img")
    parser.add_argument("kernels", nargs="+", help="kernel names")
    parser.add_argument("--device-lib", required=True, help="libtxl_device.so")
    args = parser.parse_args()
    rng = np.random.default_rng(0)
    dev = Device(args.device_lib, open(args.image, "rb").read())
    results = [(run_dlogits if "dlogits" in name else run_rows)(dev, name, rows, rng)
               for name in args.kernels for rows in (1, 37, 640)]
    dev.lib.txl_device_close()
    return 0 if all(results) else 1


if __name__ == "__main__":
    sys.exit(main())
