"""Checks of data-parallel training (train-data-parallel.test).

usage:
  train_data_parallel.py compare A B [--bit | --tensor-tol T]
      A's and B's runs (work directories) agree: every logged train, valid
      and test loss within 1e-6 relative, every tensor of last.safetensors
      (parameters, optimizer states, memory) within 1e-5 relative in norm
      (||a - b|| <= 1e-5 ||a||: Adam's m / sqrt(v) turns a rounding
      difference in a near-zero gradient into a step-sized one, so single
      elements may differ more); --tensor-tol T: within T instead (runs
      whose gradients add in another order, whose rounding 20 Adam updates
      amplify); with --bit, equal bit for bit, losses included.
  train_data_parallel.py kill-resume MPIRUN EXE WORK -- TRAIN_ARGS...
      A 2-rank run killed with SIGKILL (both ranks) once its metrics show a
      random update, then resumed under mpirun with --resume to the end.
  train_data_parallel.py kill-rank MPIRUN EXE WORK -- TRAIN_ARGS...
      A 2-rank run whose rank 1 is killed with SIGKILL after its first
      checkpoint: mpirun must end within 10 s with a non-zero status and a
      message naming rank 1, and last.safetensors must still parse.

MPIRUN is the mpirun command line (lit's %mpirun), one argument.
"""

import json
import os
import random
import shlex
import signal
import subprocess
import sys
import time

import numpy as np


sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from train_resume import fail, tensors as raw_tensors  # noqa: E402


def tensors(path):
    """name -> float32 array, and the metadata."""
    raw, meta = raw_tensors(path)
    return {name: np.frombuffer(data, dtype=np.float32).reshape(shape)
            for name, (_, shape, data) in raw.items()}, meta


def records(work):
    with open(os.path.join(work, "metrics.jsonl")) as f:
        return [json.loads(line) for line in f]


def compare(a, b, bit, tensor_tol=1e-5):
    ra, rb = records(a), records(b)
    if [(r["kind"], r["step"]) for r in ra] != [(r["kind"], r["step"]) for r in rb]:
        fail(f"{a} and {b} logged different records")
    worst = 0.0
    for x, y in zip(ra, rb):
        if "loss" not in x:
            continue
        diff = abs(x["loss"] - y["loss"]) / abs(x["loss"])
        worst = max(worst, diff)
        if diff > 1e-6 or (bit and x["loss"] != y["loss"]):
            fail(f"{x['kind']} loss at step {x['step']}: {x['loss']!r} vs "
                 f"{y['loss']!r}")
    ta, _ = tensors(os.path.join(a, "last.safetensors"))
    tb, _ = tensors(os.path.join(b, "last.safetensors"))
    if sorted(ta) != sorted(tb):
        fail(f"the checkpoints hold different tensors: "
             f"{sorted(set(ta) ^ set(tb))[:5]}")
    equal, worst_tensor = 0, 0.0
    for name in sorted(ta):
        x, y = ta[name].astype(np.float64), tb[name].astype(np.float64)
        rel = float(np.linalg.norm(x - y)) / (float(np.linalg.norm(x)) or 1.0)
        worst_tensor = max(worst_tensor, rel)
        if rel > tensor_tol or (bit and not np.array_equal(ta[name], tb[name])):
            fail(f"tensor {name}: ||diff|| {rel:.2e} of its norm")
        equal += int(np.array_equal(ta[name], tb[name]))
    kinds = sorted({r["kind"] for r in ra if "loss" in r})
    print(f"{'bit-equal' if bit else 'match'}: {len(ra)} records "
          f"({', '.join(kinds)}), {len(ta)} tensors ({equal} bit-equal), "
          f"max relative loss difference {worst:.1e}, tensor {worst_tensor:.1e}")


def rank_pids(mpirun_pid):
    """rank -> pid of the processes mpirun started on this machine."""
    out = {}
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            with open(f"/proc/{pid}/stat") as f:
                ppid = int(f.read().rsplit(")", 1)[1].split()[1])
            if ppid != mpirun_pid:
                continue
            with open(f"/proc/{pid}/environ", "rb") as f:
                env = f.read().split(b"\0")
        except OSError:
            continue
        for entry in env:
            if entry.startswith(b"OMPI_COMM_WORLD_RANK="):
                out[int(entry.split(b"=", 1)[1])] = int(pid)
    return out


def logged_steps(work):
    try:
        with open(os.path.join(work, "metrics.jsonl")) as f:
            lines = f.read().split("\n")[:-1]
    except FileNotFoundError:
        return 0
    steps = [json.loads(line)["step"] for line in lines
             if '"kind":"train"' in line]
    return steps[-1] if steps else 0


def start(mpirun, exe, work, args, resume=False, stderr=subprocess.DEVNULL):
    command = shlex.split(mpirun) + ["-np", "2", exe, "train", "--work-dir",
                                     work] + args + (["--resume"] if resume else [])
    return subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=stderr)


def wait_for_step(proc, work, step, what):
    deadline = time.time() + 600
    while logged_steps(work) < step:
        if proc.poll() is not None:
            fail(f"{what}: mpirun ended (status {proc.returncode}) before "
                 f"update {step}")
        if time.time() > deadline:
            fail(f"{what}: no update {step} in 600 s")
        time.sleep(0.01)


def kill_resume(mpirun, exe, work, args):
    max_step = int(args[args.index("--max-step") + 1])
    target = random.Random().randint(2, max_step - 2)
    proc = start(mpirun, exe, work, args)
    wait_for_step(proc, work, target, "the run to kill")
    time.sleep(random.Random().uniform(0.0, 0.3))
    pids = rank_pids(proc.pid)
    if sorted(pids) != [0, 1]:
        fail(f"found ranks {sorted(pids)} under mpirun, expected 0 and 1")
    for pid in pids.values():
        os.kill(pid, signal.SIGKILL)
    proc.wait()
    killed_at = logged_steps(work)
    if killed_at >= max_step:
        fail("the run finished before the kill")
    proc = start(mpirun, exe, work, args, resume=True)
    if proc.wait() != 0:
        fail(f"the resumed run exited with status {proc.returncode}")
    print(f"killed both ranks after update {killed_at} of {max_step}, "
          f"resumed to the end")


def kill_rank(mpirun, exe, work, args):
    err_path = os.path.join(work + ".stderr")
    with open(err_path, "wb") as err:
        proc = start(mpirun, exe, work, args, stderr=err)
        wait_for_step(proc, work, 2, "the run")
        while not os.path.exists(os.path.join(work, "last.safetensors")):
            if proc.poll() is not None:
                fail("mpirun ended before the first checkpoint")
            time.sleep(0.01)
        pids = rank_pids(proc.pid)
        if 1 not in pids:
            fail(f"no rank 1 under mpirun (ranks {sorted(pids)})")
        os.kill(pids[1], signal.SIGKILL)
        killed = time.time()
        try:
            status = proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            fail("the other rank was still running 10 s after rank 1 died")
        seconds = time.time() - killed
    if status == 0:
        fail("mpirun exited with status 0 after a rank was killed")
    with open(err_path, errors="replace") as f:
        message = f.read()
    if "rank 1" not in message:
        fail(f"no message names rank 1: {message!r}")
    survivors = [pid for pid in pids.values() if os.path.exists(f"/proc/{pid}")
                 and open(f"/proc/{pid}/stat").read().split()[2] != "Z"]
    if survivors:
        fail(f"ranks still alive: {survivors}")
    last, meta = tensors(os.path.join(work, "last.safetensors"))
    line = next(l for l in message.splitlines() if "rank 1" in l)
    print(f"rank 1 killed: mpirun ended {seconds:.1f} s later with status "
          f"{status}; '{line.strip()}'; last.safetensors holds {len(last)} "
          f"tensors at step {meta['step']}")


def main():
    if sys.argv[1] == "compare":
        rest = sys.argv[4:]
        tol = float(rest[rest.index("--tensor-tol") + 1]) if "--tensor-tol" in rest else 1e-5
        compare(sys.argv[2], sys.argv[3], "--bit" in rest, tol)
        return
    mpirun, exe, work = sys.argv[2:5]
    args = sys.argv[sys.argv.index("--") + 1:]
    {"kill-resume": kill_resume, "kill-rank": kill_rank}[sys.argv[1]](
        mpirun, exe, work, args)


if __name__ == "__main__":
    main()
