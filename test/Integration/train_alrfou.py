"""Trains Inputs/train_alrfou.toml (objective "alrfou") on ptb-char, as is
and with each auxiliary loss switched off (see train-alrfou.test), and
prints per run: the contributing layers of each log line, whether the last
layer's next-character loss fell, whether every line's loss is the sum of
its parts and which parts are zero. For the full run also whether a run
stopped with --stop-after 30 and resumed ends on the same line, and whether
`eval` gives the same validation loss from the best checkpoint with the
auxiliary heads dropped (the paper's sliding-window evaluation of the
split's first 300 characters).

  train_alrfou.py TXLC INPUTS_DIR PTB_DIR OUT_DIR
"""
import json
import os
import re
import subprocess
import sys

sys.path.insert(0, os.path.dirname(__file__))
from compare import load_safetensors  # noqa: E402
from make_untied_r import save_safetensors  # noqa: E402

PARTS = ("loss_main", "loss_intermediate_layers", "loss_multiple_targets")


def train(exe, ptb, work, *extra):
    out = subprocess.run([exe, "train", "--data", ptb, "--work-dir", work,
                          "--no-progress", *extra],
                         check=True, capture_output=True, text=True).stdout
    return [line for line in out.splitlines() if line.startswith("| epoch")]


def valid_loss(exe, ptb, checkpoint):
    out = subprocess.run([exe, "eval", "--data", ptb, "--checkpoint",
                          checkpoint, "--split", "valid", "--sliding-window",
                          "--max-tokens", "300"], check=True,
                         capture_output=True, text=True).stdout
    return re.search(r"valid loss +([0-9.]+)", out).group(1)


def run(txlc, toml, ptb, out, name, switch=None):
    path = os.path.join(out, name + ".toml")
    with open(toml) as f:
        text = f.read()
    if switch:
        text = text.replace('objective = "alrfou"\n',
                            f'objective = "alrfou"\n{switch} = false\n')
    with open(path, "w") as f:
        f.write(text)
    exe = os.path.join(out, name)
    subprocess.run([txlc, path, "-o", exe], check=True)
    work = os.path.join(out, name + "_run")
    lines = train(exe, ptb, work)
    with open(os.path.join(work, "metrics.jsonl")) as f:
        metrics = [j for j in map(json.loads, f) if j["kind"] == "train"]
    layers = [re.search(r"layers (\d+/\d+)", l).group(1) for l in lines]
    main = [m["loss_main"] for m in metrics]
    sums = all(abs(m["loss"] - sum(m[p] for p in PARTS)) < 1e-4
               for m in metrics)
    zero = [p for p in PARTS if all(m[p] == 0 for m in metrics)]
    print(f"{name}: layers {' '.join(layers)} | main loss falls "
          f"{main[-1] < main[0] - 0.1} | loss = sum of parts {sums} | zero "
          f"parts {','.join(zero) or 'none'}")
    return exe, work, lines


def main():
    txlc, inputs, ptb, out = sys.argv[1:5]
    toml = os.path.join(inputs, "train_alrfou.toml")
    exe, work, lines = run(txlc, toml, ptb, out, "full")
    for switch in ("multiple_positions", "intermediate_layers",
                   "multiple_targets"):
        run(txlc, toml, ptb, out, "no_" + switch, switch)

    part = os.path.join(out, "part")
    train(exe, ptb, part, "--stop-after", "30")
    resumed = train(exe, ptb, part, "--resume")

    def key(line):  # the same step, lr and loss (ms/batch differs)
        return line.split("| ms/batch")[0] + line.split("| loss")[1]

    def parts(run_dir):  # each logged step's parts
        with open(os.path.join(run_dir, "metrics.jsonl")) as f:
            return [[j[p] for p in PARTS] for j in map(json.loads, f)
                    if j["kind"] == "train"]
    # The step-40 line's interval (updates 21-40) spans the stop at 30.
    same_parts = parts(part) == parts(work)
    print(f"stopped at 30 and resumed ends alike "
          f"{key(resumed[-1]) == key(lines[-1])}, same parts {same_parts}")

    best = os.path.join(work, "best.safetensors")
    stripped = os.path.join(out, "inference.safetensors")
    tensors = load_safetensors(best)
    kept = {k: v for k, v in tensors.items() if not k.startswith("aux_heads.")}
    save_safetensors(stripped, kept)
    print(f"heads dropped: {len(tensors) - len(kept)}, same valid loss "
          f"{valid_loss(exe, ptb, best) == valid_loss(exe, ptb, stripped)}")


if __name__ == "__main__":
    main()
