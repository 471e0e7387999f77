"""Kill-and-resume training reproduces the uninterrupted run bit for bit.

usage: train_resume.py EXECUTABLE DATA_DIR WORK_ROOT [KILLS]

Runs `EXECUTABLE train` once to the end (run A), then again (run B) killing
it with SIGKILL after random delays — with a checkpoint after every update
some kills land inside a checkpoint write — and resuming with --resume each
time until it finishes. Every logged train and validation loss of B, the
final checkpoint's tensors and the best checkpoint must equal A's exactly.
"""

import json
import os
import random
import signal
import struct
import subprocess
import sys
import time


def fail(message):
    print("FAIL:", message)
    sys.exit(1)


def tensors(path):
    """name -> (dtype, shape, raw bytes); metadata without the run's own."""
    with open(path, "rb") as f:
        (n,) = struct.unpack("<Q", f.read(8))
        header = json.loads(f.read(n))
        data = f.read()
    meta = header.pop("__metadata__", {})
    out = {k: (v["dtype"], v["shape"], data[v["data_offsets"][0]:v["data_offsets"][1]])
           for k, v in header.items()}
    return out, meta


def losses(work):
    records = [json.loads(line) for line in open(os.path.join(work, "metrics.jsonl"))]
    return [(r["kind"], r["step"], r["loss"]) for r in records]


def main():
    exe, data, root = sys.argv[1:4]
    kills = int(sys.argv[4]) if len(sys.argv) > 4 else 4
    common = [exe, "train", "--data", data, "--threads", "1",
              "--checkpoint-interval", "1", "--no-plot"]
    work_a = os.path.join(root, "a")
    t0 = time.time()
    subprocess.run(common + ["--work-dir", work_a], check=True,
                   stdout=subprocess.DEVNULL)
    full = time.time() - t0
    t0 = time.time()
    subprocess.run(common + ["--work-dir", os.path.join(root, "one"),
                             "--max-step", "1"],
                   check=True, stdout=subprocess.DEVNULL)
    startup = time.time() - t0
    work_b = os.path.join(root, "b")
    # Run B from scratch again, killed `kills` times at random moments of
    # its training (between the start-up and the end of a full run).
    rng = random.Random()
    resumed = interrupted = 0
    first = True
    for _ in range(kills):
        args = common + ["--work-dir", work_b]
        if not first:
            args.append("--resume")
        proc = subprocess.Popen(args, stdout=subprocess.DEVNULL)
        time.sleep(rng.uniform(startup, startup + 0.5 * max(0.0, full - startup)))
        if proc.poll() is None:
            interrupted += 1
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        if os.path.exists(os.path.join(work_b, "last.safetensors")):
            first = False
            resumed += 1
    if interrupted == 0:
        fail("no kill interrupted a run (runs too short?)")
    args = common + ["--work-dir", work_b] + ([] if first else ["--resume"])
    subprocess.run(args, check=True, stdout=subprocess.DEVNULL)
    # No temporary checkpoint left behind by a completed run... except the
    # ones a kill abandoned: each must be a hidden .tmp file, never `last`.
    for name in os.listdir(work_b):
        if name.endswith(".safetensors"):
            tensors(os.path.join(work_b, name))  # parses: never torn
    la, lb = losses(work_a), losses(work_b)
    if la != lb:
        for x, y in zip(la, lb):
            if x != y:
                fail(f"resumed run differs: {x} vs {y}")
        fail(f"resumed run has {len(lb)} records, uninterrupted {len(la)}")
    for name in ("last.safetensors", "best.safetensors"):
        ta, ma = tensors(os.path.join(work_a, name))
        tb, mb = tensors(os.path.join(work_b, name))
        if ta != tb:
            bad = [k for k in ta if ta.get(k) != tb.get(k)]
            fail(f"{name}: tensors differ: {bad[:5]}")
        if ma.get("step") != mb.get("step"):
            fail(f"{name}: step {ma.get('step')} vs {mb.get('step')}")
    steps = [s for k, s, _ in la if k == "train"]
    print(f"resume ok: {len(la)} records up to step {steps[-1]} equal after "
          f"{interrupted} kill(s) mid-run, {resumed} resume(s)")


if __name__ == "__main__":
    main()
