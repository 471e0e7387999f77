#!/usr/bin/env python3
"""Predicted GPU times of txlc's executables on an H100 or H200 (issue 51,
item 8): a model calibrated on the one GPU run there has been, not a
measurement. It runs on any machine; nothing here needs a GPU.

What it counts. The runtime's device layer counts what each segment and
each optimizer step asks of the device (TXL_PROFILE=counts, docs/gpu.md):
kernel launches, library calls (matrix products) with their exact FLOPs
and operand bytes, the launches' work-items, host synchronisations and
copies. This script compiles ptb_small for `--target=opencl`, runs `eval`
and a few `train` updates on the OpenCL device here (the same compiled
code and runtime as on CUDA, so the same counts), and takes the steady
segments' counts. The attention kernels' FLOPs, which no product counts,
come from the model's shapes: 6 d_head FLOPs per visible (query, key) pair
per head (AC, BD and P·V), the backward 2.5 times the forward.

How it turns counts into time (per segment or update):

  calls  = launches + products + device copies
  host   = calls x t_issue
  device = calls x t_kernel + FLOPs / R_products
           + product bytes / BW + work-items x bytes_per_item / BW
           + attention FLOPs / R_attention
  time   = max(host, device) + syncs x t_sync

t_issue is what the host spends to enqueue one launch or product (the
runtime's mgpu ABI, the driver, cuBLAS), t_kernel a small kernel's time on
the device when the queue is full; a device-to-device copy (the key/value
cache's windows moving back to their buffers' fronts) is taken to cost
what a launch does. Both are calibrated on the H200 run of
2026-11-26 (bench/results/2026-11-26_h200/), whose build made the same
kinds of calls:

- its ptb_small eval (no run-ahead: that build synchronised every
  segment's uploads) took T_eval per segment, of which the output layer's
  column-block kernels, timed one by one by TXL_PROFILE, took the profile's
  device time; the rest is its small launches and products, issued by the
  host one after the other: t_issue = (T_eval - big kernels) / calls;
- its training update (no synchronisation between the segment's launches:
  the host runs ahead while the long kernels run) took T_train, device
  bound: t_kernel = (T_train - big kernels) / calls.

Rates not calibrated there (no product of a known shape was timed alone)
are ranges: products at 50-80 % of the f32 peak (the f32 executables:
cuBLAS without TF32), generic kernels moving 8-16 bytes per work-item, the
f32 attention forward from the H200's measured 4.7 TFLOP/s (the kernel
before session 84) to 3.6 times that (the SASS instructions a key tile
took then over those it takes now, if it stays issue-bound), its backward
at 4.7, a synchronisation 10-50 us. The low and high predictions take the fast and
slow end of every range. The bf16 executables make the same calls with
other product and attention rates that no GPU run has timed: not
predicted here.

enwik8_base's eval at the paper's setting (80/2100, batch 4) is predicted
from a counts log of it given with --paper-log (its 28th segment on: a full
memory; the log takes about 7 minutes to make here, on the OpenCL device),
its attention forward in the range above.

    bench/gpu/cost_model.py                       # compiles, runs, predicts
    bench/gpu/cost_model.py --counts-dir DIR --reuse   # DIR's logs as they are
    bench/gpu/cost_model.py --paper-log bench/results/2026-12-07_enwik8_paper_counts_session83.log
"""

import argparse
import json
import os
import re
import shutil
import statistics
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
SHARED = os.environ.get("TXL_SHARED",
                        os.path.normpath(os.path.join(ROOT, "..", "shared")))
H200_RUN = os.path.join(ROOT, "bench", "results", "2026-11-26_h200")
OCL_VENDORS = "/opt/txlc/intel-opencl/vendors"

# Vendor figures: f32 on the CUDA cores (the f32 executables' products:
# cuBLAS without TF32), HBM bandwidth; SXM parts.
DEVICES = {
    "H100": dict(name="NVIDIA H100 SXM (80 GB HBM3)", f32=67e12, bw=3.35e12),
    "H200": dict(name="NVIDIA H200 SXM (141 GB HBM3e)", f32=67e12, bw=4.8e12),
}

# The H200 run's measured f32 attention rate (bench/gpu/README.md: the
# rel_attention kernel alone, qlen 512, klen 1024, 4.7 TFLOP/s of useful
# work).
ATTENTION_F32 = 4.7e12
# The f32 forward kernel since session 84 issues 1,807 SASS instructions a
# key tile at sm_90a where the one that H200 run timed issued about 6,528
# (test/Integration/gpu/sass-budgets-attention-f32.test): if it stays
# issue-bound, as the old one was (7 % of the f32 peak), its rate scales by
# that ratio. Not measured: the forward's rate is a range from the measured
# one (the fast end of nothing gained) to that scaled one; the backward
# kernels are unchanged (the measured rate).
ATTENTION_F32_FORWARD_SCALE = 6528 / 1807
# An update's attention FLOPs over its forward's (the backward 2.5 times
# the forward).
TRAINING_ATTENTION_FACTOR = 3.5

COUNT_FIELDS = ["launches", "library calls", "device copies", "syncs",
                "work-items", "product FLOPs", "product bytes", "uploads",
                "downloads"]


def parse_counts(text, what):
    """{n: {field: value}} of the `counts: <what> <n>: ...` lines."""
    out = {}
    for line in text.splitlines():
        m = re.match(r"^counts: " + what + r" (\d+): (.*)$", line)
        if not m:
            continue
        row = {}
        for field in COUNT_FIELDS:
            f = re.search(r"(\d+) " + re.escape(field) + r"\b", m.group(2))
            if not f:
                sys.exit(f"cost_model: no '{field}' in: {line}")
            row[field] = int(f.group(1))
        out[int(m.group(1))] = row
    return out


def steady(rows, first, last=None):
    """The median of each field over rows first..last (inclusive)."""
    keys = [n for n in sorted(rows) if n >= first and (last is None or n <= last)]
    if not keys:
        sys.exit(f"cost_model: no counted rows from {first} on")
    return {f: statistics.median(rows[n][f] for n in keys) for f in COUNT_FIELDS}


def read_toml(path):
    import tomllib
    with open(path, "rb") as f:
        return tomllib.load(f)


def attention_flops(model, qlen, mlen, batch, training, same_length=False):
    """6 d_head FLOPs per visible (query, key) pair, head and layer (AC, BD,
    P·V; the decoder mask: query i sees keys j <= i + mlen, and with
    same_length only the last mlen + 1 of them); the backward 2.5 times the
    forward."""
    m = model["model"]
    klen = qlen + mlen
    if same_length:
        pairs = qlen * (mlen + 1)
    else:
        pairs = sum(min(klen, i + mlen + 1) for i in range(qlen))
    fwd = 6 * m["d_head"] * pairs * m["n_head"] * batch * m["n_layer"]
    return fwd * (TRAINING_ATTENTION_FACTOR if training else 1.0)


def attention_seconds(att_flops, training, fast):
    """Seconds of the attention kernels for `att_flops` (attention_flops's):
    the forward (the whole of an eval's; 1 / TRAINING_ATTENTION_FACTOR of
    an update's) at the
    f32 rate measured on the H200, or with `fast` that rate times
    ATTENTION_F32_FORWARD_SCALE; the backward at the measured rate."""
    fwd = att_flops / TRAINING_ATTENTION_FACTOR if training else att_flops
    scale = ATTENTION_F32_FORWARD_SCALE if fast else 1.0
    return fwd / (ATTENTION_F32 * scale) + (att_flops - fwd) / ATTENTION_F32


def profile_rows(log):
    """(seconds, launches, ms per launch, kernel) of the TXL_PROFILE table
    in the H200 run's profile step."""
    text = open(log).read()
    start = text.index("TXL_PROFILE:")
    rows = []
    for line in text[start:].splitlines()[2:]:
        parts = line.split()
        if len(parts) != 5 or not re.match(r"^[0-9.]+$", parts[0]):
            break
        rows.append((float(parts[0]), int(parts[2]), float(parts[3]), parts[4]))
    return rows


TRAIN_KERNEL = re.compile(r"^(segment_grad|decoder_layer_grad|decoder_layer_fwd|"
                          r"rel_attention_grad|rel_attention_lse|embedding_grad|"
                          r"optimizer|grad_squared|learning_rate)")


def calibrate():
    """t_issue and t_kernel (seconds) from the H200 run, with the figures
    they come from."""
    rows = profile_rows(os.path.join(H200_RUN, "device_check_2.log"))
    # The profile step: 100 training updates, then the test split's 129
    # forward segments (82,420 tokens / 640 a segment).
    updates, segments = 100, 129
    big = 0.03  # ms per launch: above it a kernel's time is its work
    gemm = [r for r in rows if r[3] == "gemm"][0]
    # Eval products a segment at that build (bench/gpu/README.md: 32 before
    # txl-linear-nll-to-gpu); the rest of the profile's products are the
    # updates'.
    eval_products = 32
    train_products = (gemm[1] - segments * eval_products) / updates
    ev = [r for r in rows if r[3] != "gemm" and not TRAIN_KERNEL.match(r[3])]
    tr = [r for r in rows if TRAIN_KERNEL.match(r[3])]
    ev_big = sum(r[0] for r in ev if r[2] > big) / segments
    ev_small = sum(r[1] for r in ev if r[2] <= big) / segments
    tr_big = sum(r[0] for r in tr if r[2] > big) / updates
    tr_small = sum(r[1] for r in tr if r[2] <= big) / updates
    bench_ptb = json.load(open(os.path.join(H200_RUN, "bench_ptb.json")))["ptb"]
    ev_rates = [r[1] for r in bench_ptb if r[0] == "txlc f32"]
    log1 = open(os.path.join(H200_RUN, "device_check_1.log")).read()
    train_part = log1[log1.index("=== train ptb_small f32"):]
    ms = [float(x) for x in re.findall(r"ms/batch\s+([0-9.]+)", train_part)]
    # The log intervals with a validation in them run longer; the median
    # is an interval's update.
    t_train = statistics.median(ms) / 1e3
    cal = {}
    for label, rate in (("fast", max(ev_rates)), ("slow", min(ev_rates))):
        t_eval = 640 / rate
        t_issue = (t_eval - ev_big) / (ev_small + eval_products)
        t_kernel = (t_train - tr_big) / (tr_small + train_products)
        cal[label] = dict(t_issue=t_issue, t_kernel=t_kernel, t_eval=t_eval)
    cal["facts"] = dict(t_train=t_train, ev_big=ev_big,
                        ev_calls=ev_small + eval_products, tr_big=tr_big,
                        tr_calls=tr_small + train_products)
    return cal


def predict(counts, dev, att_flops, training, cal, end, graphs=False):
    """(seconds, what bounds it) for one segment or update at the `end` of
    every range ("low": the fast end); `graphs`: with the host's issue cost
    taken away (a CUDA graph per segment, issue 51 item 5, not built)."""
    fast = end == "low"
    c = cal["fast" if fast else "slow"]
    calls = counts["launches"] + counts["library calls"] + counts["device copies"]
    host = calls * c["t_issue"]
    r_products = dev["f32"] * (0.8 if fast else 0.5)
    bytes_per_item = 8 if fast else 16
    device = (calls * c["t_kernel"] + counts["product FLOPs"] / r_products
              + counts["product bytes"] / dev["bw"]
              + counts["work-items"] * bytes_per_item / dev["bw"]
              + attention_seconds(att_flops, training, fast))
    t_sync = 10e-6 if fast else 50e-6
    if graphs:
        host = 0.0
    total = max(host, device) + counts["syncs"] * t_sync
    return total, "host (launch issue)" if host >= device else "device"


def run(cmd, env=None):
    out = subprocess.run(cmd, capture_output=True, text=True, env=env)
    if out.returncode != 0:
        sys.exit(f"cost_model: {' '.join(cmd)} failed:\n{out.stderr[-2000:]}")
    return out.stderr


def gather(a):
    """The counts logs of the cases below, in a.counts_dir: made afresh by
    this build's txlc, or with a.reuse those already there."""
    os.makedirs(a.counts_dir, exist_ok=True)
    exe = os.path.join(a.counts_dir, "ptb_small_ocl")
    if not a.reuse:
        for name in ["ptb_small_ocl"] + [n + ".log" for n in CASES]:
            path = os.path.join(a.counts_dir, name)
            if os.path.exists(path):
                os.remove(path)
    env = dict(os.environ, TXL_PROFILE="counts")
    env.setdefault("OCL_ICD_VENDORS", OCL_VENDORS)
    logs = {}
    for name, args in CASES.items():
        path = os.path.join(a.counts_dir, name + ".log")
        if not os.path.exists(path):
            if not os.path.exists(exe):
                run([a.txlc, os.path.join(ROOT, "models", "ptb_small.toml"),
                     "--target=opencl", "-o", exe])
            # A fresh work directory: `train` resumes from a checkpoint in
            # an old one.
            work = os.path.join(a.counts_dir, "work_" + name)
            shutil.rmtree(work, ignore_errors=True)
            text = run([exe] + [x.format(shared=SHARED, work=work) for x in args],
                       env)
            with open(path, "w") as f:
                f.write(text)
        logs[name] = open(path).read()
    return logs


# The runs counted (ptb_small on the OpenCL device, as on a GPU).
CASES = {
    "eval": ["eval", "--data", "{shared}/data/ptb", "--split", "valid",
             "--checkpoint", "{shared}/reference/ptb_small/model.safetensors"],
    "train": ["train", "--data", "{shared}/data/ptb", "--work-dir", "{work}",
              "--max-step", "4", "--log-interval", "2", "--eval-interval",
              "1000000", "--checkpoint-interval", "1000000", "--no-progress",
              "--max-eval-steps", "1"],
}


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--counts-dir", default=os.path.join(
        ROOT, "..", "bench-scratch", "cost_model"))
    ap.add_argument("--reuse", action="store_true",
                    help="take the counts logs already in --counts-dir "
                         "instead of compiling and running again")
    ap.add_argument("--txlc", default=os.path.join(ROOT, "build", "bin", "txlc"))
    ap.add_argument("--json", help="write the predictions here")
    ap.add_argument("--paper-log", help="a TXL_PROFILE=counts log of "
                    "enwik8_base's eval at the paper's setting (tgt_len 80, "
                    "mem_len 2100, clamp_len 820, same_length, batch 4) on "
                    "the OpenCL device, steady from its 28th segment (a full "
                    "memory): predicted too (about 7 minutes here to make; "
                    "not made by this script)")
    a = ap.parse_args()

    cal = calibrate()
    f = cal["facts"]
    print("# calibration: the H200 run of 2026-11-26 "
          f"({os.path.relpath(H200_RUN, ROOT)})")
    print(f"#   eval: {cal['slow']['t_eval'] * 1e3:.2f}-{cal['fast']['t_eval'] * 1e3:.2f} ms "
          f"a segment, {f['ev_big'] * 1e3:.2f} ms of it in kernels over 30 us, "
          f"{f['ev_calls']:.0f} other calls: t_issue = "
          f"{cal['fast']['t_issue'] * 1e6:.1f}-{cal['slow']['t_issue'] * 1e6:.1f} us")
    print(f"#   train: {f['t_train'] * 1e3:.2f} ms an update, {f['tr_big'] * 1e3:.2f} ms "
          f"in kernels over 30 us, {f['tr_calls']:.0f} other calls: t_kernel = "
          f"{cal['fast']['t_kernel'] * 1e6:.1f} us")

    logs = gather(a)
    model = read_toml(os.path.join(ROOT, "models", "ptb_small.toml"))
    ev = parse_counts(logs["eval"], "segment")
    tr_seg = parse_counts(logs["train"], "segment")
    tr_upd = parse_counts(logs["train"], "update")
    # Steady rows: eval from its third segment (the first uploads the
    # parameters, the second is the first with a memory) up to the last but
    # one; train's updates 2-4 and their segments.
    ev_counts = steady(ev, 3, max(ev) - 1)
    seg = steady(tr_seg, 2, 4)
    upd = steady(tr_upd, 2, 4)
    train_counts = {k: seg[k] + upd[k] for k in COUNT_FIELDS}
    cases = [
        ("ptb_small eval, a segment (batch 10, 64 tokens)", ev_counts, 640,
         attention_flops(model, 64, 64, 10, False), False),
        ("ptb_small train, an update (batch 16, 64 tokens)", train_counts, 1024,
         attention_flops(model, 64, 64, 16, True), True),
    ]
    if a.paper_log:
        # The steady segments: a full memory (27 segments fill it), before
        # the last (the split's shorter end).
        paper = parse_counts(open(a.paper_log).read(), "segment")
        enwik8 = read_toml(os.path.join(ROOT, "models", "enwik8_base.toml"))
        cases.append((
            "enwik8_base eval at 80/2100, a segment (batch 4, 80 tokens)",
            steady(paper, 28, max(paper) - 1), 320,
            attention_flops(enwik8, 80, 2100, 4, False, same_length=True),
            False))
    print("# counted per steady segment / update (OpenCL here, TXL_PROFILE=counts):")
    for label, c, _, att, _ in cases:
        print(f"#   {label}: {c['launches']:.0f} launches, {c['library calls']:.0f} "
              f"products, {c['device copies']:.0f} device copies "
              f"({c['product FLOPs'] / 1e9:.2f} GFLOP, "
              f"{c['product bytes'] / 1e6:.1f} MB), {c['work-items'] / 1e6:.2f} M "
              f"work-items, {c['syncs']:.0f} syncs; attention {att / 1e9:.2f} GFLOP "
              f"(from the shapes)")
    print("PREDICTIONS, not measurements (f32):")
    table = []
    for key, dev in DEVICES.items():
        for label, c, tokens, att, training in cases:
            lo, why = predict(c, dev, att, training, cal, "low")
            hi, _ = predict(c, dev, att, training, cal, "high")
            glo, _ = predict(c, dev, att, training, cal, "low", graphs=True)
            ghi, _ = predict(c, dev, att, training, cal, "high", graphs=True)
            print(f"  {key} {label}: {lo * 1e3:.3f}-{hi * 1e3:.3f} ms "
                  f"({tokens / hi:,.0f}-{tokens / lo:,.0f} tok/s); bound: {why}; "
                  f"without the host's issue cost (CUDA graphs): "
                  f"{glo * 1e3:.3f}-{ghi * 1e3:.3f} ms")
            table.append(dict(device=key, case=label, ms_low=lo * 1e3,
                              ms_high=hi * 1e3, bound=why,
                              graphs_ms_low=glo * 1e3, graphs_ms_high=ghi * 1e3))
    # Against what the H200 run measured (the same split and batch).
    bench_ptb = json.load(open(os.path.join(H200_RUN, "bench_ptb.json")))["ptb"]
    eager = [r[1] for r in bench_ptb if r[0] == "pytorch eager"]
    old = [r[1] for r in bench_ptb if r[0] == "txlc f32"]
    ev_h200 = [t for t in table
               if t["device"] == "H200" and "ptb_small eval" in t["case"]][0]
    lo_rate, hi_rate = 640e3 / ev_h200["ms_high"], 640e3 / ev_h200["ms_low"]
    print(f"  H200 ptb_small eval: {lo_rate / max(eager):.1f}-{hi_rate / min(eager):.1f}x "
          f"PyTorch eager as measured there ({min(eager):,.0f}-{max(eager):,.0f} "
          f"tok/s; issue 51's goal 2x), {lo_rate / max(old):.1f}-"
          f"{hi_rate / min(old):.1f}x that run's txlc f32 ({min(old):,.0f}-"
          f"{max(old):,.0f} tok/s); ptb_small train {f['t_train'] * 1e3:.2f} ms "
          f"an update there")
    paper = [t for t in table if t["device"] == "H200" and "80/2100" in t["case"]]
    if paper:
        bench = json.load(open(os.path.join(H200_RUN, "bench_enwik8.json")))
        rows = [r for r in bench["enwik8"] if r[0] == "paper eval 80/2100"]
        eager = [r[2] for r in rows if r[1] == "pytorch eager"]
        old = [r[2] for r in rows if r[1] == "txlc f32"]
        lo_rate, hi_rate = 320e3 / paper[0]["ms_high"], 320e3 / paper[0]["ms_low"]
        print(f"  H200 enwik8_base eval at 80/2100: {lo_rate / max(eager):.1f}-"
              f"{hi_rate / min(eager):.1f}x PyTorch eager as measured there "
              f"({min(eager):,.0f}-{max(eager):,.0f} tok/s; issue 51's goal 3x), "
              f"{lo_rate / max(old):.1f}-{hi_rate / min(old):.1f}x that run's "
              f"txlc f32 ({min(old):,.0f}-{max(old):,.0f} tok/s, no key/value "
              f"cache on the GPU then); its attention from the f32 kernel's "
              f"{ATTENTION_F32 / 1e12:.1f} TFLOP/s measured at 512/1024 to "
              f"{ATTENTION_F32 * ATTENTION_F32_FORWARD_SCALE / 1e12:.1f} (that "
              f"rate times {ATTENTION_F32_FORWARD_SCALE:.2f}, the SASS "
              f"instructions a key tile took then over those it takes now)")
    if a.json:
        with open(a.json, "w") as out:
            json.dump(dict(calibration=cal, predictions=table), out, indent=1)


if __name__ == "__main__":
    main()
