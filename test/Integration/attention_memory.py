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

With --train MODEL, the same for training: MODEL (the one-layer model
file) with tgt_len = mem_len = qlen and a [train] section of batch 1 is
compiled by the txlc on PATH with --txlc-flags (one string), and `train`
runs 2 updates (the second over klen = 2 qlen keys: forward, the generated
backward, Adam) on a generated corpus of the model's 50 tokens, plus a
validation of one segment. The backward saves what it needs of the
attention (the rows' log-sum-exp with the tiled kernel), not the scores.

usage: attention_memory.py EXE CHECKPOINT WORKDIR [--limit-mib 64]
       attention_memory.py --train MODEL [--txlc-flags F] WORKDIR
                           [--limit-mib 64]
"""

import argparse
import os
import re
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


TRAIN_SECTION = """
[train]
batch_size = 1
optim = "adam"
lr = 0.001
scheduler = "constant"
max_step = 2
clip = 0.25
seed = 1
"""


def train_peaks(model, flags, workdir, rng):
    """Peak RSS in KiB of `train` for qlen 1024 and 2048 (train_peaks'
    model, compiled with `flags`)."""
    data = os.path.join(workdir, "corpus")
    os.makedirs(data, exist_ok=True)
    # 49 words and <eos>: the model's 50 tokens.
    for split, words in (("train", 8000), ("valid", 3000), ("test", 3000)):
        ids = rng.randint(0, 49, size=words)
        ids[:49] = np.arange(49)  # every word in every split
        lines = [" ".join("w%d" % i for i in ids[at:at + 20])
                 for at in range(0, words, 20)]
        with open(os.path.join(data, split + ".txt"), "w") as f:
            f.write("\n".join(lines) + "\n")
    with open(model) as f:
        text = f.read()
    peaks = {}
    for qlen in (1024, 2048):
        toml = os.path.join(workdir, "train%d.toml" % qlen)
        with open(toml, "w") as f:
            f.write(re.sub(r"(?m)^(tgt_len|mem_len) = \d+$",
                           lambda m: "%s = %d" % (m.group(1), qlen), text)
                    + TRAIN_SECTION)
        exe = os.path.join(workdir, "train%d" % qlen)
        subprocess.run(["txlc", toml, "-o", exe] + flags.split(), check=True)
        peaks[qlen] = peak_rss_kib(
            [exe, "train", "--data", data, "--dataset", "ptb", "--work-dir",
             os.path.join(workdir, "run%d" % qlen), "--overwrite",
             "--max-step", "2", "--log-interval", "1", "--eval-interval",
             "2", "--max-eval-steps", "1", "--threads", "1",
             "--no-progress"])
    return peaks


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("args", nargs="+", help="EXE CHECKPOINT WORKDIR, or with "
                    "--train WORKDIR")
    ap.add_argument("--train", metavar="MODEL")
    ap.add_argument("--txlc-flags", default="")
    ap.add_argument("--limit-mib", type=float, default=64.0)
    args = ap.parse_args()
    if len(args.args) != (1 if args.train else 3):
        ap.error("expected " + ("WORKDIR" if args.train
                                else "EXE CHECKPOINT WORKDIR"))
    args.workdir = args.args[-1]
    rng = np.random.RandomState(0)
    peaks = {}
    if args.train:
        peaks = train_peaks(args.train, args.txlc_flags, args.workdir, rng)
    else:
        args.exe, args.checkpoint = args.args[:2]
    for qlen in (1024, 2048) if not args.train else ():
        tokens = os.path.join(args.workdir, "tokens%d.npy" % qlen)
        np.save(tokens, rng.randint(0, 50, size=(2, qlen, 1)).astype(np.int64))
        peaks[qlen] = peak_rss_kib(
            [args.exe, "run-segments", "--checkpoint", args.checkpoint,
             "--inputs", tokens, "--targets", tokens, "--mem-len", str(qlen),
             "--threads", "1"])
    for qlen in (1024, 2048):
        print("qlen %d klen %d: peak RSS %.1f MiB" %
              (qlen, 2 * qlen, peaks[qlen] / 1024.0))
    growth = (peaks[2048] - peaks[1024]) / 1024.0
    verdict = "ok" if growth < args.limit_mib else "FAIL"
    print("%s: growth %.1f MiB (limit %.0f MiB)" % (verdict, growth,
                                                  args.limit_mib))
    return 0 if verdict == "ok" else 1


if __name__ == "__main__":
    sys.exit(main())
