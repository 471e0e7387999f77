#!/usr/bin/env python3
"""Checks a txl-convert output against the values the fixture wrote.

  check_tensors.py OUT.safetensors EXPECTED.safetensors [--folded NAME=EMBEDDING ...]

Every expected tensor must be in OUT, F32, same shape, bit-for-bit equal,
except the --folded ones: those must be absent and their EMBEDDING tensor in
OUT must equal them. OUT may hold no other tensor. Exits 1 naming the first
difference; prints `ok: N tensors equal, M folded` otherwise.
"""
import argparse
import json
import struct
import sys

import numpy as np


def read(path):
    with open(path, "rb") as f:
        blob = f.read()
    (n,) = struct.unpack("<Q", blob[:8])
    header = json.loads(blob[8:8 + n])
    meta = header.pop("__metadata__", {})
    out = {}
    for name, info in header.items():
        if info["dtype"] != "F32":
            fail(f"{path}: tensor '{name}' is {info['dtype']}, not F32")
        begin, end = info["data_offsets"]
        out[name] = np.frombuffer(blob[8 + n + begin:8 + n + end], dtype="<f4").reshape(
            info["shape"])
    return out, meta


def fail(msg):
    print("FAIL: " + msg)
    sys.exit(1)


def same(a, b):
    return a.shape == b.shape and np.array_equal(a.view(np.uint32), b.view(np.uint32))


def main():
    p = argparse.ArgumentParser()
    p.add_argument("out")
    p.add_argument("expected")
    p.add_argument("--folded", nargs="*", default=[])
    a = p.parse_args()
    out, meta = read(a.out)
    expected, _ = read(a.expected)
    folded = dict(pair.split("=", 1) for pair in a.folded)
    if meta.get("format") != "official-pytorch-state-dict":
        fail(f"{a.out}: __metadata__ format is {meta.get('format')!r}")
    for name, value in expected.items():
        if name in folded:
            if name in out:
                fail(f"tied tensor '{name}' is written, expected it folded into {folded[name]}")
            if folded[name] not in out or not same(out[folded[name]], value):
                fail(f"'{folded[name]}' does not hold the values of '{name}'")
        elif name not in out:
            fail(f"tensor '{name}' is missing")
        elif not same(out[name], value):
            fail(f"tensor '{name}' differs: shape {list(out[name].shape)} vs "
                 f"{list(value.shape)}")
    extra = sorted(set(out) - set(expected))
    if extra:
        fail(f"unexpected tensors: {', '.join(extra)}")
    missing_folds = sorted(set(folded) - set(expected))
    if missing_folds:
        fail(f"--folded names not in the expected file: {', '.join(missing_folds)}")
    print(f"ok: {len(expected) - len(folded)} tensors equal, {len(folded)} folded")


if __name__ == "__main__":
    main()
