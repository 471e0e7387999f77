#!/usr/bin/env python3
"""train --max-step drives the learning-rate schedule (issue 48, item 2).

usage: max_step_schedule.py EXE DEV_PERF_EXE DATA_DIR WORK_DIR

EXE is train_tiny.toml's executable: cosine schedule, lr 0.002, eta_min 0,
warmup_step 10, max_step 120 in the model file. The run trains with
--max-step 20, stopping after update 10 (--stop-after) and resumed without
--max-step: the checkpoint's max_step (20) continues it. The lr logged
after updates 10, 15 and 20 (metrics.jsonl) must be CosineAnnealingLR's
closed form with T_max = 20, train.py's args.max_step; the figures for the
model file's T_max = 120, which the schedule followed before, are printed
beside them and differ. A resume with another --max-step is refused, the
work directory unchanged. DEV_PERF_EXE (train_tiny_varlen_chunks.toml:
dev_perf, whose lr follows validations, not max_step) is resumed with a
larger --max-step, which lengthens the run.
"""

import json
import math
import os
import subprocess
import sys

LR, ETA_MIN = 0.002, 0.0


def cosine(step, t_max):
    return ETA_MIN + (LR - ETA_MIN) * (1 + math.cos(math.pi * step / t_max)) / 2


def main():
    exe, dev_perf_exe, data_dir, work = sys.argv[1:5]
    common = [exe, "train", "--data", data_dir, "--threads", "1",
              "--no-progress", "--work-dir", work, "--max-eval-steps", "2"]
    quiet = {"stdout": subprocess.DEVNULL, "check": True}
    subprocess.run(common + ["--max-step", "20", "--stop-after", "10"], **quiet)
    subprocess.run(common + ["--resume"], **quiet)
    lrs = {}
    with open(os.path.join(work, "metrics.jsonl")) as f:
        for line in f:
            record = json.loads(line)
            if record.get("kind") == "train":
                lrs[record["step"]] = record["lr"]
    failed = False
    for step in (10, 15, 20):
        lr = lrs.get(step)
        want = cosine(step, 20)
        ok = lr is not None and abs(lr - want) <= 1e-12 + 1e-9 * abs(want)
        failed |= not ok
        print("%s step %d: lr %s, T_max 20: %.9g, T_max 120: %.9g"
              % ("ok  " if ok else "FAIL", step, lr, want, cosine(step, 120)))
    last = os.path.join(work, "last.safetensors")
    before = open(last, "rb").read()
    run = subprocess.run(common + ["--resume", "--max-step", "30"],
                         capture_output=True, text=True)
    errors = [l for l in run.stderr.splitlines() if "error:" in l]
    print("resume --max-step 30: status %d: %s"
          % (run.returncode, " / ".join(errors)))
    if open(last, "rb").read() != before:
        print("FAIL last.safetensors changed")
        failed = True
    work = work + "_dev_perf"
    common = [dev_perf_exe] + common[1:]
    common[common.index("--work-dir") + 1] = work
    subprocess.run(common + ["--max-step", "5"], **quiet)
    run = subprocess.run(common + ["--resume", "--max-step", "10"],
                         capture_output=True, text=True)
    steps = [json.loads(line).get("step") for line in
             open(os.path.join(work, "metrics.jsonl"))]
    print("dev_perf resume --max-step 10: status %d, last step %s"
          % (run.returncode, max(s for s in steps if s is not None)))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
