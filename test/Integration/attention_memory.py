"""Peak memory of long attention on the CPU target: a one-layer model
(test/Integration/Inputs/long_attention.toml) runs two segments of qlen
positions with a memory of qlen (the second attends over klen = 2 qlen
keys), for qlen 1024 and 2048, one batch column, one thread. Prints each
run's peak RSS (the child's ru_maxrss) and the growth from the first to the
second; exits 1 when the growth reaches --limit-mib.

The attention's qlen x klen scores at 2048 / 4096 are 64 MiB per head; an
executable that writes them (txlc --cpu-attention=blas) grows by several of
those, the tiled kernel by its O((qlen + klen) d_head) packed operands and
the model's O(qlen d_model) activations only.

usage: attention_memory.py EXE CHECKPOINT WORKDIR [--limit-mib 64]
"""

import argparse
import os
import subprocess
import sys

import numpy as np


def peak_rss_kib(cmd):
    """Runs cmd; returns its peak resident set size in KiB."""
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE)
    _, status, usage = os.wait4(proc.pid, 0)
    err = proc.stderr.read().decode()
    proc.stderr.close()
    if os.waitstatus_to_exitcode(status) != 0:
        sys.exit("FAIL: %s exited with %d:\n%s" %
                 (" ".join(cmd), os.waitstatus_to_exitcode(status), err))
    return usage.ru_maxrss


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("exe")
    ap.add_argument("checkpoint")
    ap.add_argument("workdir")
    ap.add_argument("--limit-mib", type=float, default=64.0)
    args = ap.parse_args()
    rng = np.random.RandomState(0)
    peaks = {}
    for qlen in (1024, 2048):
        tokens = os.path.join(args.workdir, "tokens%d.npy" % qlen)
        np.save(tokens, rng.randint(0, 50, size=(2, qlen, 1)).astype(np.int64))
        peaks[qlen] = peak_rss_kib(
            [args.exe, "run-segments", "--checkpoint", args.checkpoint,
             "--inputs", tokens, "--targets", tokens, "--mem-len", str(qlen),
             "--threads", "1"])
        print("qlen %d klen %d: peak RSS %.1f MiB" %
              (qlen, 2 * qlen, peaks[qlen] / 1024.0))
    growth = (peaks[2048] - peaks[1024]) / 1024.0
    verdict = "ok" if growth < args.limit_mib else "FAIL"
    print("%s: growth %.1f MiB (limit %.0f MiB)" % (verdict, growth,
                                                  args.limit_mib))
    return 0 if verdict == "ok" else 1


if __name__ == "__main__":
    sys.exit(main())
