"""Trains the small attn_type 1, 2 and 3 models of
Inputs/train_attn_type{1,2,3}.toml (see train-attention-types.test) and
prints, per type, whether the logged training loss fell and whether a run
stopped at step 40 and resumed ends on the same loss line as the straight
run.

  train_attention_types.py TXLC INPUTS_DIR PTB_DIR OUT_DIR
"""
import os
import re
import subprocess
import sys


def train(exe, ptb, work, *extra):
    out = subprocess.run([exe, "train", "--data", ptb, "--work-dir", work,
                          "--no-progress", *extra],
                         check=True, capture_output=True, text=True).stdout
    return [line for line in out.splitlines() if line.startswith("| epoch")]


def main():
    txlc, inputs, ptb, out = sys.argv[1:5]
    for t in (1, 2, 3):
        exe = os.path.join(out, f"m{t}")
        subprocess.run([txlc, os.path.join(inputs, f"train_attn_type{t}.toml"),
                        "-o", exe], check=True)
        lines = train(exe, ptb, os.path.join(out, f"run{t}"))
        loss = [float(re.search(r"loss +([0-9.]+)", l).group(1)) for l in lines]
        part = os.path.join(out, f"part{t}")
        train(exe, ptb, part, "--stop-after", "40")
        resumed = train(exe, ptb, part, "--resume")
        # The same step, lr and loss (ms/batch differs).
        def key(line):
            return line.split("| ms/batch")[0] + line.split("| loss")[1]
        same = key(resumed[-1]) == key(lines[-1])
        print(f"attn_type {t}: loss {loss[0]:.2f} -> {loss[-1]:.2f}, falls "
              f"{loss[-1] < loss[0] - 0.2} | resumed ends alike {same}")


if __name__ == "__main__":
    main()
