#!/usr/bin/env python3
"""ThreadSanitizer on the threads of compiled models (scripts/test.sh
--sanitize=thread; docs/sanitizers.md).

usage: tsan_executables.py TXLC TSAN_RUNTIME_DIR

Compiles the reference case rel_basic (3 batch columns) and the tiny
training model with TXLC against the ThreadSanitizer runtime in
TSAN_RUNTIME_DIR (its txl_runtime.link adds -fsanitize=thread to the link),
then runs what uses threads: run-segments and eval with batch-parallel
slices (--threads 2 and 3), and train with two chunks over two threads.
Every run must exit 0 with no ThreadSanitizer report. Prints one line per
run and "tsan: N runs, N reports".
"""

import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
SHARED = os.path.join(os.path.dirname(REPO), "shared")


def main():
    txlc, runtime = sys.argv[1:3]
    env = dict(os.environ)
    env["TSAN_OPTIONS"] = ("halt_on_error=1:second_deadlock_stack=1:"
                           "suppressions=" + os.path.join(HERE, "tsan.supp"))
    ref = os.path.join(SHARED, "reference", "rel_basic")
    tiny = os.path.join(REPO, "test", "Integration", "Inputs",
                        "train_tiny_varlen_chunks.toml")
    reports = 0
    runs = 0
    failed = 0
    with tempfile.TemporaryDirectory() as tmp:
        model = os.path.join(tmp, "rel_basic")
        trainer = os.path.join(tmp, "tiny")
        for toml, exe in ((os.path.join(ref, "model.toml"), model),
                          (tiny, trainer)):
            subprocess.run([txlc, toml, "-o", exe, "--runtime-dir", runtime],
                           check=True)
            # The control that the runs below are checked at all: the
            # executable carries ThreadSanitizer's runtime.
            symbols = subprocess.run(["nm", exe], capture_output=True,
                                     text=True, check=True).stdout
            if "__tsan_init" not in symbols:
                print("FAIL: %s is not linked with ThreadSanitizer" % exe)
                return 1
        commands = []
        for threads in ("2", "3"):
            commands.append(("run-segments --threads " + threads,
                             [model, "run-segments", "--checkpoint",
                              os.path.join(ref, "weights.safetensors"),
                              "--inputs", os.path.join(ref, "data.npy"),
                              "--targets", os.path.join(ref, "target.npy"),
                              "--threads", threads, "--grad-segment", "1",
                              "--dump-grads", os.path.join(tmp, "g.st")]))
        commands.append(("train --threads 2",
                         [trainer, "train", "--data",
                          os.path.join(SHARED, "data", "ptb"), "--work-dir",
                          os.path.join(tmp, "run"), "--threads", "2",
                          "--max-step", "6"]))
        commands.append(("eval --threads 2",
                         [trainer, "eval", "--data",
                          os.path.join(SHARED, "data", "ptb"), "--checkpoint",
                          os.path.join(tmp, "run", "last.safetensors"),
                          "--split", "valid", "--threads", "2"]))
        for name, command in commands:
            run = subprocess.run(command, env=env, capture_output=True,
                                 text=True)
            runs += 1
            found = "ThreadSanitizer" in run.stderr
            reports += found
            status = "ok" if run.returncode == 0 and not found else "FAIL"
            print("%-28s %s (status %d)" % (name, status, run.returncode))
            if status != "ok":
                failed += 1
                print(run.stderr[-6000:])
    print("tsan: %d runs, %d reports" % (runs, reports))
    return 0 if failed == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
