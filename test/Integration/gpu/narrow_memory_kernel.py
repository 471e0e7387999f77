#!/usr/bin/env python3
"""Runs Inputs/narrow-memory.mlir's kernels (compiled to an OpenCL image)
through the runtime's device layer and checks txl-emulate-mma's bf16 and
f16 memory (i16 bits, converted on the bits): every one of the 65,536 bit
patterns widened to f32 exactly as numpy does (NaNs stay NaN), and f32
values rounded to nearest even, as cvt.rn.bf16.f32 and cvt.rn.f16.f32,
bit for bit: each f16 bit pattern's value and the midpoints between
neighbours (the ties), values past f16's largest (65504, 65519.99,
65520: infinity), subnormals and below, infinities, NaN, and 10^6 random
magnitudes from 10^-9 to 10^5.

usage: narrow_memory_kernel.py --device-lib LIB KERNELS.img
Prints one line per kernel and exits 1 if any differs."""

import argparse
import sys

import numpy as np

from rel_attention_kernel import Device

WORKGROUP = 64


def bf16_bits(x):
    """bf16 bits of float32 `x`, round to nearest even; NaN a quiet NaN."""
    u = x.view(np.uint32).astype(np.uint64)
    r = ((u + 0x7FFF + ((u >> 16) & 1)) >> 16).astype(np.uint16)
    return np.where(np.isnan(x), ((u >> 16) & 0x8000 | 0x7FC0).astype(np.uint16), r)


def f16_bits(x):
    """f16 bits of float32 `x` (numpy's conversion: round to nearest even);
    NaN the quiet NaN 0x7e00 of its sign."""
    with np.errstate(over="ignore"):
        h = x.astype(np.float16).view(np.uint16)
    sign = (x.view(np.uint32) >> 16).astype(np.uint16) & 0x8000
    return np.where(np.isnan(x), sign | 0x7E00, h)


def inputs_to_round(rng):
    """float32 values whose rounding to bf16 and f16 the kernels check."""
    every = np.arange(1 << 16, dtype=np.uint32).astype(np.uint16)
    halves = every.view(np.float16).astype(np.float32)
    finite = np.sort(np.unique(halves[np.isfinite(halves)]))
    ties = ((finite[:-1].astype(np.float64) + finite[1:]) / 2).astype(np.float32)
    special = np.array([65504, 65519.99, 65520, 65536, 1e30, 2.0**-14,
                        2.0**-24, 2.0**-25, 2.0**-25 * 1.0001, 2.0**-26, 1e-30,
                        0.0, np.inf, np.nan], np.float32)
    magnitudes = np.exp(rng.uniform(np.log(1e-9), np.log(1e5), 10**6)).astype(np.float32)
    values = np.concatenate([finite, ties, special, magnitudes])
    values = np.concatenate([values, -values])
    # bf16: the same, and f32 bit patterns around bf16's ties.
    u = rng.integers(0, 1 << 32, 10**5, dtype=np.uint64).astype(np.uint32)
    values = np.concatenate([values, u.view(np.float32),
                             (u & 0xFFFF0000 | 0x8000).view(np.float32)])
    pad = -len(values) % (8 * WORKGROUP)
    return np.concatenate([values, np.zeros(pad, np.float32)])


def run(dev, name, x, out, per_item=1):
    bufs = [dev.memref(x), dev.memref(out)]
    dev.launch(dev.kernel(name), (len(x) // per_item // WORKGROUP, 1, 1),
               (WORKGROUP, 1, 1), [a for _, desc in bufs for a in desc])
    dev.read(out, bufs[1][0])
    dev.free()
    return out


def report(name, got, want, what):
    bad = int(np.sum(got != want))
    print(f"{'ok  ' if not bad else 'FAIL'} {name}: {bad} of {want.size} {what} differ"
          + ("" if not bad else
             f" (first at {int(np.argmax(got != want))}: "
             f"{got[np.argmax(got != want)]!r} vs {want[np.argmax(got != want)]!r})"))
    return bad == 0


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--device-lib", required=True)
    parser.add_argument("image")
    args = parser.parse_args()
    dev = Device(args.device_lib, open(args.image, "rb").read())
    rng = np.random.default_rng(2019)
    ok = True
    every = np.arange(1 << 16, dtype=np.uint32).astype(np.uint16)
    for elem, dtype in (("bf16", None), ("f16", np.float16)):
        if dtype is None:
            want = (every.astype(np.uint32) << 16).view(np.float32)
        else:
            want = every.view(np.float16).astype(np.float32)
        # NaN payloads need not survive: compare NaN-ness, then the bits.
        for name, per_item in ((f"widen_{elem}", 1),) + (
                (("copy8_f16", 8),) if elem == "f16" else ()):
            got = run(dev, name, every, np.zeros(every.size, np.float32), per_item)
            nan = np.isnan(want)
            ok &= report(name, np.where(nan, np.isnan(got), got.view(np.uint32)),
                         np.where(nan, True, want.view(np.uint32)), "bit patterns")
    x = inputs_to_round(rng)
    for name, bits, per_item in (("round_bf16", bf16_bits, 1),
                                 ("round_f16", f16_bits, 1),
                                 ("round8_f16", f16_bits, 8)):
        got = run(dev, name, x, np.zeros(x.size, np.uint16), per_item)
        ok &= report(name, got, bits(x), "roundings")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
