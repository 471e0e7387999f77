"""Checks a `<model> train` work directory against the official train log.

usage: train_check.py WORK_DIR OFFICIAL_TRAIN_LOG STEP EVAL_OUTPUT

- the log line of update STEP has the official format and its loss is within
  5% of the official run's loss at STEP (same configuration, another random
  initialisation);
- metrics.jsonl has a train record per log line, a valid record and a test
  record; last.safetensors says step STEP; best.safetensors exists;
- `eval` of best.safetensors with train.py's validation settings reproduces
  the validation loss the run logged (EVAL_OUTPUT `-`: not checked, for runs
  that validate on part of the split).
"""

import json
import math
import re
import struct
import sys

TRAIN_LINE = re.compile(
    r"^\| epoch +(\d+) step +(\d+) \| +(\d+) batches \| lr (\S+) \| "
    r"ms/batch +([\d.]+) \| loss +([\d.]+) \| ppl +([\d.]+)$")


def fail(message):
    print("FAIL:", message)
    sys.exit(1)


def official_loss(path, step):
    for line in open(path):
        m = TRAIN_LINE.match(line.strip())
        if m and int(m.group(2)) == step:
            return float(m.group(6))
    fail(f"{path}: no log line for step {step}")


def safetensors_metadata(path):
    with open(path, "rb") as f:
        (n,) = struct.unpack("<Q", f.read(8))
        return json.loads(f.read(n)).get("__metadata__", {})


def main():
    work, official_log, step, eval_output = sys.argv[1:5]
    step = int(step)
    ours = None
    for line in open(f"{work}/log.txt"):
        m = TRAIN_LINE.match(line.strip())
        if m and int(m.group(2)) == step:
            ours = m
    if not ours:
        fail(f"no official-format log line for step {step} in {work}/log.txt")
    records = [json.loads(line) for line in open(f"{work}/metrics.jsonl")]
    train = {r["step"]: r for r in records if r["kind"] == "train"}
    valid = [r for r in records if r["kind"] == "valid"]
    test = [r for r in records if r["kind"] == "test"]
    if step not in train or not valid or not test:
        fail(f"metrics.jsonl lacks train/valid/test records: {records}")
    loss = train[step]["loss"]
    if abs(float(ours.group(6)) - loss) > 0.005:
        fail(f"log line loss {ours.group(6)} differs from metrics {loss}")
    reference = official_loss(official_log, step)
    rel = abs(loss - reference) / reference
    print(f"step {step}: loss {loss:.4f}, official {reference:.2f}, "
          f"relative difference {rel:.4f}")
    if rel > 0.05:
        fail(f"train loss {loss:.4f} at step {step} is not within 5% of the "
             f"official {reference}")
    meta = safetensors_metadata(f"{work}/last.safetensors")
    if int(meta.get("step", -1)) != step:
        fail(f"last.safetensors is at step {meta.get('step')}, not {step}")
    best = safetensors_metadata(f"{work}/best.safetensors")
    if eval_output == "-":
        print("train run ok (no eval of best.safetensors)")
        return
    # eval --json of best.safetensors against the logged validation.
    logged = min(v["loss"] for v in valid)
    evaluated = None
    for line in open(eval_output):
        if line.startswith("{"):
            evaluated = json.loads(line)["loss"]
    if evaluated is None or abs(evaluated - logged) > 1e-6 * logged:
        fail(f"eval of best.safetensors gives {evaluated}, training logged "
             f"{logged} (best step {best.get('step')})")
    print("train run ok")


main()
