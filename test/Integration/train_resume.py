"""Kill-and-resume training reproduces the uninterrupted run bit for bit.

usage: train_resume.py EXECUTABLE DATA_DIR WORK_ROOT [KILLS] [-- TRAIN_ARG...]

Runs `EXECUTABLE train` once to the end (run A), then again (run B) killing
it with SIGKILL at random points of its progress — with a checkpoint after
every update some kills land inside a checkpoint write — and resuming with --resume each
time until it finishes. Every logged train and validation loss of B, the
final checkpoint's tensors and the best checkpoint must equal A's exactly.
TRAIN_ARGs after `--` are added to every `train` (e.g. --max-eval-steps).
"""

import json
import os
import random
import shutil
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


def train_records(work):
    """The train records of WORK's metrics.jsonl so far (complete lines)."""
    try:
        with open(os.path.join(work, "metrics.jsonl")) as f:
            lines = f.read().split("\n")[:-1]
    except FileNotFoundError:
        return []
    return [line for line in lines if '"kind":"train"' in line]


def losses(work):
    records = [json.loads(line) for line in open(os.path.join(work, "metrics.jsonl"))]
    return [(r["kind"], r["step"], r["loss"]) for r in records]


def main():
    argv, extra = sys.argv, []
    if "--" in argv:
        argv, extra = argv[:argv.index("--")], argv[argv.index("--") + 1:]
    exe, data, root = argv[1:4]
    kills = int(argv[4]) if len(argv) > 4 else 4
    common = [exe, "train", "--data", data, "--threads", "1",
              "--checkpoint-interval", "1", *extra]
    work_a = os.path.join(root, "a")
    subprocess.run(common + ["--work-dir", work_a], check=True,
                   stdout=subprocess.DEVNULL)
    total = len(train_records(work_a))
    if total < kills + 2:
        fail(f"run A logged {total} updates, too few to kill {kills} times")
    # Run B from scratch again, killed `kills` times: each time once its
    # metrics.jsonl shows a randomly chosen number of logged updates (more
    # than it resumed with, fewer than the whole run's), then after a random
    # 0-20 ms more, so that kills land anywhere: inside an update, a
    # checkpoint write, an evaluation. Progress rather than wall-clock time
    # decides, so a busy or fast machine kills mid-run all the same. Should
    # the first run finish inside those 20 ms, B starts over.
    rng = random.Random()
    work_b = os.path.join(root, "b")
    for attempt in range(5):
        shutil.rmtree(work_b, ignore_errors=True)
        resumed = interrupted = 0
        first = True
        for _ in range(kills):
            start = len(train_records(work_b)) if not first else 0
            if start + 1 >= total:
                break
            target = rng.randint(start + 1, total - 1)
            args = common + ["--work-dir", work_b]
            if not first:
                args.append("--resume")
            proc = subprocess.Popen(args, stdout=subprocess.DEVNULL)
            while proc.poll() is None and len(train_records(work_b)) < target:
                time.sleep(0.001)
            time.sleep(rng.uniform(0.0, 0.02))
            if proc.poll() is None:
                interrupted += 1
            elif proc.returncode != 0:
                fail(f"{' '.join(args)} exited with {proc.returncode}")
            proc.send_signal(signal.SIGKILL)
            proc.wait()
            if os.path.exists(os.path.join(work_b, "last.safetensors")):
                first = False
                resumed += 1
        if interrupted:
            break
    else:
        fail("no kill interrupted a run in 5 tries")
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
