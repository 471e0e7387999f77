#!/usr/bin/env python3
"""Compares a txlc executable's outputs with the official implementation's.

  compare.py nll   OURS.npy REF.npy [--atol 1e-5]
  compare.py mems  OURS.safetensors REF.safetensors [--atol 1e-5 --rtol 1e-5]
  compare.py eval  OURS.json EVAL.json LABEL [--rtol 1e-4]
  compare.py ppl   OURS.json THEIRS.json [--rtol 1e-4]
      two executables' `eval --json` outputs (the last line of each)
  compare.py grads OURS.safetensors REF.safetensors --rtol RTOL
      per tensor ||g - g_ref||_2 <= rtol * ||g_ref||_2, same tensor names;
      prints the worst ratio and its tensor, passing or not, so the margin
      under RTOL shows in the test log

Exits 1 with a message naming the tensor and the worst element when a value
is out of tolerance, and when a reference file is missing (never skips).
"""
import argparse
import json
import struct
import sys

import numpy as np


def load_safetensors(path):
    with open(path, "rb") as f:
        blob = f.read()
    (n,) = struct.unpack("<Q", blob[:8])
    header = json.loads(blob[8:8 + n])
    dtypes = {"F32": np.float32, "I64": np.int64}
    out = {}
    for name, info in header.items():
        if name == "__metadata__":
            continue
        begin, end = info["data_offsets"]
        data = np.frombuffer(blob[8 + n + begin:8 + n + end], dtype=dtypes[info["dtype"]])
        out[name] = data.reshape(info["shape"])
    return out


def fail(msg):
    print("FAIL: " + msg)
    sys.exit(1)


def check(name, ours, ref, atol, rtol):
    if ours.shape != ref.shape:
        fail(f"{name}: shape {list(ours.shape)} != reference {list(ref.shape)}")
    err = np.abs(ours.astype(np.float64) - ref.astype(np.float64))
    bound = atol + rtol * np.abs(ref.astype(np.float64))
    if not np.all(np.isfinite(ours)) or np.any(err > bound):
        i = np.unravel_index(np.argmax(err - bound), err.shape)
        fail(f"{name}: element {tuple(int(x) for x in i)} = {ours[i]} vs reference {ref[i]} "
             f"(|diff| {err[i]:.3g} > {bound[i]:.3g})")
    return float(err.max()) if err.size else 0.0


def main():
    p = argparse.ArgumentParser()
    p.add_argument("kind", choices=["nll", "mems", "eval", "ppl", "grads"])
    p.add_argument("ours")
    p.add_argument("ref")
    p.add_argument("label", nargs="?")
    p.add_argument("--atol", type=float, default=1e-5)
    p.add_argument("--rtol", type=float, default=0.0)
    p.add_argument("--segment-mean-atol", type=float, default=None,
                   help="nll: also each segment's mean NLL (its loss) within this")
    a = p.parse_args()
    if a.kind == "nll":
        ours, ref = np.load(a.ours), np.load(a.ref)
        worst = check("nll", ours, ref, a.atol, a.rtol)
        print(f"nll ok, max |diff| {worst:.3g}")
        if a.segment_mean_atol is not None:
            means = lambda x: x.astype(np.float64).reshape(x.shape[0], -1).mean(1)  # noqa: E731
            worst = check("segment mean nll", means(ours), means(ref),
                          a.segment_mean_atol, 0.0)
            print(f"segment mean nll ok, max |diff| {worst:.3g}")
    elif a.kind == "mems":
        ours, ref = load_safetensors(a.ours), load_safetensors(a.ref)
        if sorted(ours) != sorted(ref):
            fail(f"memory tensors differ: ours {sorted(ours)} vs reference {sorted(ref)}")
        worst = max(check(k, ours[k], ref[k], a.atol, a.rtol) for k in sorted(ref))
        print(f"mems ok ({len(ref)} tensors), max |diff| {worst:.3g}")
    elif a.kind == "grads":
        ours, ref = load_safetensors(a.ours), load_safetensors(a.ref)
        if sorted(ours) != sorted(ref):
            fail(f"gradient tensors differ: only ours {sorted(set(ours) - set(ref))}, "
                 f"only reference {sorted(set(ref) - set(ours))}")
        rels = {}
        for k in sorted(ref):
            if ours[k].shape != ref[k].shape:
                fail(f"{k}: shape {list(ours[k].shape)} != reference {list(ref[k].shape)}")
            o, r = ours[k].astype(np.float64), ref[k].astype(np.float64)
            if not np.all(np.isfinite(o)):
                fail(f"{k}: non-finite gradient")
            rels[k] = np.linalg.norm(o - r) / np.linalg.norm(r)
        if not rels:
            fail("no gradient tensors")
        # A NaN ratio (an all-zero reference) ranks as the worst and fails.
        worst_name = max(rels, key=lambda k: rels[k] if rels[k] <= np.inf else np.inf)
        worst = rels[worst_name]
        print(f"grads: worst ||g - g_ref|| / ||g_ref|| = {worst:.3g} ({worst_name}), "
              f"rtol {a.rtol:g}")
        over = [k for k in rels if not rels[k] <= a.rtol]
        if over:
            fail(f"{worst_name}: ||g - g_ref|| / ||g_ref|| = {worst:.3g} > {a.rtol} "
                 f"({len(over)} of {len(rels)} tensors over)")
        print(f"grads ok ({len(ref)} tensors), worst relative norm error {worst:.3g} ({worst_name})")
    elif a.kind == "ppl":
        ours, theirs = (json.loads(open(f).read().strip().splitlines()[-1])
                        for f in (a.ours, a.ref))
        rel = abs(ours["ppl"] - theirs["ppl"]) / theirs["ppl"]
        if not rel <= a.rtol:
            fail(f"ppl {ours['ppl']} vs {theirs['ppl']} (rel {rel:.3g} > {a.rtol})")
        print(f"ppl ok: {ours['ppl']:.4f} vs {theirs['ppl']:.4f}, rel {rel:.2g}")
    else:
        ours = json.loads(open(a.ours).read().strip().splitlines()[-1])
        runs = {r["label"]: r for r in json.load(open(a.ref))["runs"]}
        ref = runs[a.label]
        rel = abs(ours["ppl"] - ref["ppl"]) / ref["ppl"]
        if rel > a.rtol:
            fail(f"{a.label}: ppl {ours['ppl']} vs official {ref['ppl']} (rel {rel:.3g} > {a.rtol})")
        print(f"{a.label}: ppl {ours['ppl']:.4f} vs official {ref['ppl']:.4f}, rel {rel:.2g}")


if __name__ == "__main__":
    main()
