"""Compares `train` runs of the same model across targets.

usage:
  train_targets.py equal WORK_A WORK_B
      the two runs logged the same records (and loss scales) and wrote
      bit-equal last.safetensors tensors (and the same step)
  train_targets.py same-params CKPT_A CKPT_B
      the two checkpoints hold bit-equal parameters and optimizer states
      (every tensor but the memory, train.mems.*)
  train_targets.py other-params CKPT_A CKPT_B
      ... and at least one of those tensors differs
  train_targets.py close WORK_A WORK_B STEP RTOL [NORM_RTOL]
      the train losses both runs logged at update STEP (metrics.jsonl's
      last_loss, the loss of that update) agree within RTOL relative, and
      the gradients' norms before clipping (grad_norm) within NORM_RTOL
      (default RTOL)

Prints one line per check; exits 1 with FAIL on a mismatch.
"""

import json
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                ".."))
from train_resume import fail, tensors  # noqa: E402


def records(work):
    with open(os.path.join(work, "metrics.jsonl")) as f:
        return [json.loads(line) for line in f]


def train_record(work, step):
    for r in records(work):
        if r["kind"] == "train" and r["step"] == step:
            return r
    fail(f"{work}: no train record at step {step}")


def main():
    mode = sys.argv[1]
    a, b = sys.argv[2:4]
    if mode == "equal":
        def key(r):
            return (r["kind"], r["step"], r.get("loss"), r.get("loss_scale"))
        ra = [key(r) for r in records(a)]
        rb = [key(r) for r in records(b)]
        if ra != rb:
            fail(f"records differ: {ra[:3]}... vs {rb[:3]}...")
        ta, ma = tensors(os.path.join(a, "last.safetensors"))
        tb, mb = tensors(os.path.join(b, "last.safetensors"))
        if ta.keys() != tb.keys():
            fail("the checkpoints hold different tensors")
        bad = sorted(k for k in ta if ta[k] != tb[k])
        if bad:
            fail(f"{len(bad)} tensors differ, e.g. {bad[:3]}")
        if ma.get("step") != mb.get("step"):
            fail(f"step {ma.get('step')} vs {mb.get('step')}")
        print(f"equal: {len(ra)} records, {len(ta)} tensors bit-equal at "
              f"step {ma.get('step')}")
    elif mode in ("same-params", "other-params"):
        ta, _ = tensors(a)
        tb, _ = tensors(b)
        names = sorted(k for k in ta if not k.startswith("train.mems."))
        if sorted(k for k in tb if not k.startswith("train.mems.")) != names:
            fail("the checkpoints hold different tensors")
        differ = [k for k in names if ta[k] != tb[k]]
        if mode == "same-params" and differ:
            fail(f"{len(differ)} tensors differ, e.g. {differ[:3]}")
        if mode == "other-params" and not differ:
            fail(f"all {len(names)} tensors are equal")
        print(f"{mode}: {len(differ)} of {len(names)} parameter and "
              "optimizer tensors differ")
    elif mode == "close":
        step, rtol = int(sys.argv[4]), float(sys.argv[5])
        norm_rtol = float(sys.argv[6]) if len(sys.argv) > 6 else rtol
        ra, rb = train_record(a, step), train_record(b, step)
        parts = []
        for key, label, tol in (("last_loss", "loss", rtol),
                                ("grad_norm", "grad_norm", norm_rtol)):
            va, vb = ra[key], rb[key]
            rel = abs(va - vb) / abs(vb)
            if not rel <= tol:
                fail(f"step {step}: {label} {va!r} vs {vb!r}, relative "
                     f"{rel:.3g} > {tol}")
            parts.append(f"{label} {va:.6f} vs {vb:.6f}, relative "
                         f"{rel:.2g} <= {tol}")
        print(f"close: step {step} " + "; ".join(parts))
    else:
        fail(f"unknown mode {mode}")


main()
